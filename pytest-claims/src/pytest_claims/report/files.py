"""The report files: verdicts.json and verdict.html written as one unit that names its run, and the figures the plugin
wrote, recorded so that pruning touches nothing else.

- The pair: each file goes to a temporary file beside it, and only when every one is complete are they renamed
  over the previous ones, with SIGTERM and SIGINT deferred until the renames are done. A write that fails (a full
  disk, an unwritable directory) leaves the previous reports as they were. Both files carry the same report id
  (`report_id` in verdicts.json, `data-report-id` in the HTML), so a reader can tell that they belong together.
- The report directory is locked for the whole run (and for a merge's write), so two runs cannot interleave their
  files there: the second is refused in one line that names the run holding it (pytest_claims.report.dir_lock).
- `ReportWriter` is the run's role: pytest-html renders its page as before, but hands the text to this module,
  which writes it with verdicts.json after pytest-html's own session finish.
- The figure manifest (`.claims-figures.json` in the report directory) lists every figure a run named, with when it
  was last named; pruning deletes only manifest entries that no run has named for a day.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import platform
import secrets
import signal
import sys
import threading
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest

from pytest_claims import compat
from pytest_claims.model import verdicts_json
from pytest_claims.report import history
from pytest_claims.model.inputs import file_within
from pytest_claims.report.dir_lock import LOCK_FILE, OWNER_FILE, ReportDirectoryBusy, ReportDirectoryLock  # noqa: F401

REPORT_ID = "report_id"
MANIFEST_FILE = ".claims-figures.json"
FIGURES_KEPT_SECONDS = 24 * 3600


def new_report_id() -> str:
    """A name for one run's (or one merge's) report pair: when, where, which process, and a random part."""
    now = dt.datetime.now(dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    return f"{now}-{platform.node() or 'host'}-{os.getpid()}-{secrets.token_hex(3)}"


@contextmanager
def signals_deferred() -> Iterator[list[str]]:
    """SIGTERM and SIGINT noted, not acted on, for the duration of the block (the names of those received are in the
    list it yields). A second signal of a kind already noted acts at once, as before: a way out of a hang."""
    received: list[str] = []
    if threading.current_thread() is not threading.main_thread():
        yield received
        return
    previous: dict[int, Any] = {}  # signal number -> the handler it had

    def note(signum: int, frame: Any) -> None:
        name = signal.Signals(signum).name
        if name in received:  # asked twice: act on it now
            signal.signal(signum, previous[signum])
            signal.raise_signal(signum)
            return
        received.append(name)

    for kind in (signal.SIGTERM, signal.SIGINT):
        try:
            previous[int(kind)] = signal.signal(kind, note)
        except (ValueError, OSError):
            pass
    try:
        yield received
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)


def _temporary(path: Path, tag: str) -> Path:
    return path.with_name(f".{path.name}.{tag}.tmp")


def _write_file(path: Path, text: str) -> None:
    """One complete file on disk (written, flushed and synced), or OSError."""
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(text)
        handle.flush()
        os.fsync(handle.fileno())


def write_together(files: list[tuple[Path, str]]) -> None:
    """Write every (path, text) to a temporary file beside it, then rename them all into place. Any failure before the
    renames removes the temporary files and raises OSError with the previous files untouched."""
    tag = secrets.token_hex(4)
    written: list[tuple[Path, Path]] = []
    try:
        for path, text in files:
            temporary = _temporary(Path(path), tag)
            written.append((temporary, Path(path)))
            _write_file(temporary, text)
    except BaseException:
        for temporary, _ in written:
            try:
                temporary.unlink()
            except OSError:
                pass
        raise
    for temporary, path in written:
        os.replace(temporary, path)


def failed_write_line(error: OSError, paths: list[Path]) -> str:
    """One line: what was not written and why, and that the previous files stand."""
    names = " and ".join(str(p) for p in paths)
    return f"the reports were not written ({error.strerror or error}); the previous {names} kept as they were"


# ------------------------------------------------------------------------------------------------
# Figures


def prune_figures(report_dir: Path, named: set[str], now: float | None = None) -> None:
    """Record the figures this run named in the manifest, and delete those the manifest lists that no run has named
    for FIGURES_KEPT_SECONDS. A file the manifest does not list is never touched (a committed figure, a file of
    another tool). Call it holding the report directory's lock."""
    now = time.time() if now is None else now
    manifest_path = Path(report_dir) / MANIFEST_FILE
    try:
        recorded = json.loads(manifest_path.read_text(encoding="utf-8")).get("figures", {})
        recorded = {str(k): float(v) for k, v in recorded.items()}
    except (OSError, ValueError, AttributeError, TypeError):
        recorded = {}
    recorded.update({path: now for path in named})
    kept = {}
    for path, last_named in sorted(recorded.items()):
        file = file_within(report_dir, path)
        if file is None:
            continue  # gone, or a name that would lead outside the report directory
        if last_named < now - FIGURES_KEPT_SECONDS:
            try:
                file.unlink()
                continue
            except OSError:
                pass
        kept[path] = last_named
    try:
        write_together([(manifest_path, json.dumps({"figures": kept}, indent=1) + "\n")])
    except OSError:
        pass  # the next run records them again; nothing is deleted without a record


def named_figures(payload: dict[str, Any]) -> set[str]:
    return {f["path"] for c in payload["claims"] for s in c["statements"] for f in s["figures"]}


# ------------------------------------------------------------------------------------------------
# The run's role


def pytest_html_report(config: pytest.Config) -> Any:
    """pytest-html's report object (registered by its pytest_configure beside its plugin module), or None."""
    base = compat.html_report_base()
    if base is None:
        return None
    return next((p for p in config.pluginmanager.get_plugins() if isinstance(p, base)), None)


class ReportWriter:
    """Writes the run's verdicts.json and pytest-html's page as one unit, after pytest-html has rendered it (on the
    controller, or the single process)."""

    def __init__(self, state: Any) -> None:
        self.state = state
        self.finishing = False
        self.html_text: str | None = None
        self.html_path: Path | None = None
        self.payload: dict[str, Any] = {}  # the verdicts, once published (pytest_claims_payload)

    def pytest_claims_payload(self, payload: dict[str, Any]) -> None:
        self.payload = payload

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionstart(self, session: pytest.Session) -> None:
        """pytest-html renders its page and writes it with open("w"): take the text instead (its `_write_report`,
        pytest-html 4), to write it with verdicts.json. Without that method pytest-html writes its file itself."""
        html = pytest_html_report(session.config)
        if html is None or compat.write_report_problem(type(html)):
            return
        self.html_path = html_path = Path(getattr(html, "_report_path", session.config.option.htmlpath))

        def take(rendered: str) -> None:
            if self.finishing:
                self.html_text = rendered
            else:  # an intermediate page (ini generate_report_on_test): alone, but never half written
                write_together([(html_path, rendered)])

        html._write_report = take

    @pytest.hookimpl(wrapper=True, trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> Iterator[None]:
        """Inside every other plugin's session finish (the controller builds the payload, pytest-html renders), with
        the signals deferred from the first to the renames; the terminal summary comes after."""
        with signals_deferred() as received:
            self.finishing = True
            try:
                return (yield)
            finally:
                self.finishing = False
                self.write(session)
                if received:
                    self.note(
                        session,
                        f"pytest-claims: {', '.join(received)} arrived while the reports were written; "
                        "they were finished first",
                    )
                    if session.exitstatus == pytest.ExitCode.OK:
                        session.exitstatus = pytest.ExitCode.INTERRUPTED

    def note(self, session: pytest.Session, line: str) -> None:
        """A line in the terminal summary (or on stderr without one)."""
        self.state.reports.notes.append(line)
        if not session.config.pluginmanager.has_plugin("terminalreporter"):
            sys.stderr.write(line + "\n")

    def write(self, session: pytest.Session) -> None:
        state = self.state
        payload = self.payload
        if not payload:  # no verdicts (the registry check stopped the run, --collect-only): the previous reports stay
            return
        if state.results.reports_kept:  # a run that ran no test body replaces nothing and is not saved
            self.note(
                session,
                f"pytest-claims: {state.results.reports_kept}: {state.report_dir / 'verdicts.json'} and the page are "
                "left as they were, and the run is not saved",
            )
            return
        files = [(state.report_dir / "verdicts.json", verdicts_json.text(payload))]
        if self.html_text is not None and self.html_path is not None:
            files.append((self.html_path, self.html_text))
        try:
            write_together(files)
        except OSError as error:
            self.note(session, "pytest-claims: " + failed_write_line(error, [path for path, _ in files]))
            session.exitstatus = pytest.ExitCode.INTERNAL_ERROR  # the summary still shows (pytest decided that before)
            return
        state.reports.written = True
        prune_figures(state.report_dir, named_figures(payload))
        if state.settings.save_runs:  # the numbered copy, once the pair is in place
            try:
                state.reports.saved_run = history.save_run(state.report_dir, payload)
            except OSError as error:
                self.note(session, f"pytest-claims: this run was not saved under {state.report_dir / 'runs'}: {error}")


def write_merged(out: Path, payload: dict[str, Any], page: Callable[[], str]) -> None:
    """The merge's pair, under the lock of its output directory, with the signals deferred (ReportDirectoryBusy or
    OSError; the previous files kept). `page()` gives the HTML, called holding the lock (it copies the figures the page
    shows into `out`: nothing is written there while another run or merge holds it)."""
    lock = ReportDirectoryLock(out, payload.get(REPORT_ID, ""))
    lock.acquire()
    try:
        html_text = page()
        with signals_deferred() as received:
            write_together([(out / "verdicts.json", verdicts_json.text(payload)), (out / "verdict.html", html_text)])
    finally:
        lock.release()
    for name in received:  # the pair is complete: now the signal takes effect
        signal.raise_signal(getattr(signal, name))
