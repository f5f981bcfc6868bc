"""The pytest-claims plugin (entry point `pytest11: claims`): options, ini keys, checks, and a switchboard of roles.

Inactive unless the ini key `claims_registry` names a registry (then only the worker side's `evidence` fixture and
its inconclusive ending are there). Active, it checks the configuration in one line each (`UsageError`) and
registers, per process:

- `collection.Collection` and `collection.WorkUnitsFirst`: markers against the registry, refuted statements as
  strict xfail, work units first;
- `worker` (always): the evidence fixture, the running test for the helpers (`context`), each test's outcome on
  its report;
- `mutants.MutantRunner` (with --mutants): each statement test under its mutants before its real run;
- on the controller only (or the single process): `session.Controller` (verdicts.json, through `payload`),
  `terminal.Terminal`, `html_hooks.HtmlHooks` (where pytest-html is loaded) and `distributed.XdistHooks` (where
  pytest-xdist is), each under a stash key, as pytest's junitxml registers LogXML.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import traceback
from pathlib import Path
from typing import Any

import pytest

from pytest_claims import context
from pytest_claims.report import history
from pytest_claims.roles import options, properties, seeding, threads, worker
from pytest_claims.statements import ledger
from pytest_claims.roles import continuation, progress
from pytest_claims.roles.collection import Collection, WorkUnitsFirst
from pytest_claims.roles.distributed import XdistHooks
from pytest_claims.report.export import Exporter, parse_formats
from pytest_claims.roles.html_hooks import HtmlHooks
from pytest_claims.model.inputs import checked_previous
from pytest_claims.roles.mutants import MutantError, MutantRunner, catalogue, loaded_catalogue, stale_mutants
from pytest_claims.model.verdicts_json import PayloadError, read_previous
from pytest_claims.model.registry import (
    Registry,
    RegistryError,
    check_against_project,
    false_alarm_budget,
    load_registry,
)
from pytest_claims.report.files import ReportDirectoryBusy, ReportDirectoryLock, ReportWriter, new_report_id
from pytest_claims.roles.session import Controller, interrupted
from pytest_claims.roles.state import RUN_ID_INPUT, STATE, State, is_worker
from pytest_claims.store.result_store import ResultStore, StoreUnusable
from pytest_claims.roles.strict import Strict
from pytest_claims.roles.terminal import Terminal

ROLES = pytest.StashKey[list[Any]]()  # the role plugins registered for this config (unregistered at unconfigure)
SESSION_TOKEN = pytest.StashKey[Any]()  # resets pytest_claims.context to the session before this one

# ------------------------------------------------------------------------------------------------
# Options, configuration


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    from pytest_claims import hookspecs

    pluginmanager.add_hookspecs(hookspecs)


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("claims", "claim verification (pytest-claims)")
    options.add_options(group)
    options.add_ini(parser)  # every ini key, from the one table options.INI_KEYS


def _store_for(config: pytest.Config, settings: options.Settings) -> ResultStore:
    if settings.no_store:
        return ResultStore(None)
    chosen = settings.store_dir
    evidence = _usable_directory(
        Path(config.rootpath) / settings.evidence_dir,
        "evidence directory",
        "--claims-evidence-dir or the ini key claims_evidence_dir",
    )
    shown = _live_line(config)
    if chosen:
        root = _usable_directory(
            Path(config.invocation_params.dir) / chosen,
            "result store",
            "--claims-store-dir or the ini key claims_store_dir",
        )
    elif getattr(config, "cache", None) is not None:
        root = Path(config.cache.mkdir("claims-store"))
    else:
        root = Path(config.rootpath) / ".pytest_cache" / "d" / "claims-store"
    return ResultStore(root, on_wait=shown, evidence_root=evidence)


def _usable_directory(path: Path, what: str, option: str) -> Path:
    """`path` resolved; StoreUnusable (one line naming it and `option`) where it is a symbolic link loop or exists
    and is no directory: said before any work, rather than a traceback or a run that keeps nothing there."""
    try:
        resolved = path.resolve()
    except (RuntimeError, OSError) as error:  # a loop: RuntimeError before Python 3.13, OSError after
        raise StoreUnusable(f"the {what} path {path} cannot be resolved ({error}) ({option})") from None
    existing = next((p for p in (resolved, *resolved.parents) if p.exists()), None)  # "file/sub": the file
    if existing is not None and not existing.is_dir():
        below = "" if existing == resolved else f": {existing} is a file"
        raise StoreUnusable(f"the {what} path {resolved} is not a directory{below} ({option})")
    return resolved


def _live_line(config: pytest.Config) -> Any:
    """A line shown at once, past pytest's capture (a store wait on another run's lock: otherwise silence until the
    wait ends), on the terminal's stderr; an xdist worker's stderr is the controller's."""

    def show(line: str) -> None:
        capture = config.pluginmanager.getplugin("capturemanager")
        with capture.global_and_fixture_disabled() if capture is not None else contextlib.nullcontext():
            sys.stderr.write(f"\n{line}\n")
            sys.stderr.flush()

    return show


@pytest.hookimpl(wrapper=True)
def pytest_load_initial_conftests(early_config: pytest.Config, parser: pytest.Parser) -> Any:
    """An xdist worker takes its share of the cores before the project's conftests import NumPy or torch; the short
    aliases a project asks for come after its conftests registered their own options, so theirs win."""
    workers = threads.in_worker()
    if workers and early_config.getini("claims_registry") and threads.enabled(early_config):
        threads.limit_this_worker(workers)
    result = yield
    left_out = options.add_aliases(early_config, parser)
    if left_out:
        early_config.issue_config_time_warning(pytest.PytestConfigWarning(options.left_out_line(left_out)), 2)
    return result


def pytest_report_header(config: pytest.Config) -> list[str] | None:
    if not config.getini("claims_registry") or is_worker(config):
        return None
    line = threads.header_line(config, options.settings_of(config).serial_threads)
    return [line] if line else None


def pytest_collection_finish(session: pytest.Session) -> None:
    """A run without workers limits its threads where claims_serial_threads asks, once the test modules are imported
    (so the libraries they load are covered)."""
    config = session.config
    if config.getini("claims_registry") and not is_worker(config):
        count = options.settings_of(config).serial_threads
        if threads.serial_applies(config, count):
            threads.limit_serial(count)


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config: pytest.Config) -> int | None:
    """A bad --html path or master seed in one line, before pytest-html's own configure (which would fail with a
    traceback on a bad path) and before any project's configure reads `config.getoption("claims_seed")`."""
    try:
        seed = seeding.master_seed(config)
    except pytest.UsageError as error:
        sys.stderr.write(f"ERROR: {error}\n")
        return pytest.ExitCode.USAGE_ERROR
    if config.getini("claims_registry"):
        properties.seed_hypothesis(config, seed)  # before hypothesis's pytest_configure reads --hypothesis-seed
    html = getattr(config.option, "htmlpath", None)
    if html and config.getini("claims_registry") and not is_worker(config):
        try:
            _check_writable(
                Path(html).expanduser().resolve().parent, f"the directory of the HTML report (--html {html})"
            )
        except pytest.UsageError as error:
            sys.stderr.write(f"ERROR: {error}\n")
            return pytest.ExitCode.USAGE_ERROR
    return None


def pytest_configure(config: pytest.Config) -> None:
    config.pluginmanager.register(worker, "claims-worker")  # its evidence fixture and inconclusive ending: always
    config.pluginmanager.register(seeding, "claims-seeding")  # the claims_seed fixture: always
    config.pluginmanager.register(ledger, "claims-ledger")  # the claims_batch fixture: always
    seed = seeding.master_seed(config)
    paths = config.getini("claims_registry")
    if not paths:
        asked = [
            o
            for o, dest in (
                ("--claims-previous-verdicts", "claims_previous"),
                ("--claims-store-dir", "claims_store_dir"),
                ("--claims-mutants", "claims_mutants"),
            )
            if config.getoption(dest)
        ]
        if asked:  # pytest took an option's value for a test path and found no ini file beside it
            raise pytest.UsageError(
                f"{', '.join(asked)} given but no claims_registry in an ini file (rootdir {config.rootpath}, "
                f"inifile {config.inipath}); write path options as --option=PATH, "
                "so pytest does not take PATH for the rootdir"
            )
        return
    settings = options.settings_of(config)  # read once; a bad true/false key named in one line
    tiers = settings.tiers
    files = [Path(config.rootpath) / p for p in settings.registry]
    try:
        registry = load_registry(files, tiers)
        check_against_project(registry, Path(config.rootpath), _min_mutants(settings.min_mutants))
    except RegistryError as error:
        raise pytest.UsageError(f"{error} [claims_registry: {', '.join(str(f) for f in files)}]") from None
    _check_false_alarm_budget(settings.false_alarm_budget, registry)
    for tier in tiers:
        config.addinivalue_line("markers", f"{tier}: a scale tier of the claim suite")
    config.addinivalue_line(
        "markers", 'claim(id, statement="name"): the claim and registry statement this test asserts'
    )
    config.addinivalue_line(
        "markers",
        "work_unit(indivisible=None): an expensive computation that statement tests read through the store; "
        "placed so that each xdist worker starts with one; indivisible: why it cannot be split further",
    )
    try:
        store = _store_for(config, settings)
    except StoreUnusable as error:
        raise pytest.UsageError(str(error)) from None
    state = State(config, settings, registry, store)
    try:
        state.inputs.export_formats = parse_formats(list(settings.export))
    except ValueError as error:
        raise pytest.UsageError(f"--claims-export / ini claims_export: {error}") from None
    config.stash[continuation.BUDGET] = continuation.configured(settings)  # a bad budget: one line, before any test
    _load_mutants(config, state)
    _check_only_mutant(config, state)
    state.running.seed = seed
    previous = settings.previous
    if previous:
        try:
            state.inputs.previous = checked_previous(read_previous(previous), previous)
        except PayloadError as error:
            raise pytest.UsageError(str(error)) from None
    else:  # the saved runs: a damaged one is skipped with a line, never stopping the run
        state.inputs.previous_candidates = history.previous_candidates(config, state.report_dir, _note)
    if is_worker(config):
        state.inputs.report_id = str(getattr(config, "workerinput").get(RUN_ID_INPUT, ""))
    else:
        _check_writable(state.report_dir, "the report directory (ini key claims_report_dir)")
        _lock_report_directory(config, state)
        if getattr(config.option, "numprocesses", None):  # before xdist starts the workers (pytest_sessionstart)
            config.stash[CONTROLLER_MARK] = threads.mark_controller()
    config.stash[STATE] = state
    config.stash[SESSION_TOKEN] = context.enter_session(state.running)
    _catch_sigterm(state)
    # A module that fails to collect breaks its claims; the others run, serially as under xdist (which
    # runs them anyway), so a collection error gives the same verdicts however the run is made.
    config.option.continue_on_collection_errors = True
    _register_roles(config, state)


def _register_roles(config: pytest.Config, state: State) -> None:
    roles: list[tuple[Any, str]] = [
        (WorkUnitsFirst(), "claims-work-units"),
        (Collection(state), "claims-collection"),
        (properties.Properties(), "claims-properties"),
        (continuation.Continuation(state, config.stash[continuation.BUDGET]), "claims-continuation"),
    ]
    if state.settings.run_mutants:
        roles.append((MutantRunner(state), "claims-mutants"))
    if not is_worker(config):
        roles += [
            (Controller(state), "claims-controller"),
            (ReportWriter(state), "claims-report-files"),
            (Terminal(state), "claims-terminal"),
        ]
        if state.settings.strict:
            roles.append((Strict(), "claims-strict"))
        every = progress.interval(config, state.settings.progress_seconds)
        if every:
            roles.append((progress.Progress(config, every), "claims-progress"))
        if state.inputs.export_formats:
            roles.append((Exporter(state, state.inputs.export_formats), "claims-export"))
        if config.pluginmanager.hasplugin("html"):
            roles.append((HtmlHooks(state), "claims-html"))
        if config.pluginmanager.hasplugin("xdist"):
            roles.append((XdistHooks(state), "claims-xdist"))
    for plugin, name in roles:
        config.pluginmanager.register(plugin, name)
    config.stash[ROLES] = [plugin for plugin, _ in roles]


REPORT_LOCK = pytest.StashKey[ReportDirectoryLock]()
CONTROLLER_MARK = pytest.StashKey[Any]()  # the controller's mark for its workers (threads), and the value it replaced


def _lock_report_directory(config: pytest.Config, state: State) -> None:
    """One run at a time writes into a report directory (the last check of configure: nothing raises after it, so
    pytest_unconfigure always releases it)."""
    state.inputs.report_id = new_report_id()
    lock = ReportDirectoryLock(state.report_dir, state.inputs.report_id)
    try:
        lock.acquire()
    except ReportDirectoryBusy as error:
        raise pytest.UsageError(str(error)) from None
    config.stash[REPORT_LOCK] = lock


def _min_mutants(raw: str) -> int:
    try:
        value = int(raw)
    except ValueError:
        value = -1
    if value < 0:
        raise pytest.UsageError(f"ini claims_min_mutants must be a non-negative integer, got {raw!r}")
    return value


def _check_writable(directory: Path, what: str) -> None:
    """A usage error before any test runs, rather than a traceback after all of them."""
    if directory.exists() and not directory.is_dir():
        raise pytest.UsageError(f"{what}: {directory} is a file, not a directory")
    try:
        directory.mkdir(parents=True, exist_ok=True)
        probe = directory / f".claims-probe-{os.getpid()}"
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as error:
        raise pytest.UsageError(f"{what}: {directory} cannot be written ({error.strerror or error})") from None


def _check_false_alarm_budget(raw: str, registry: Registry) -> None:
    try:
        budget = float(raw)
    except ValueError:
        budget = float("nan")
    if not 0 <= budget <= 1:  # NaN and inf too: the run writes its budget, and verdicts.json has no number for them
        raise pytest.UsageError(f"ini claims_false_alarm_budget must be a probability, got {raw!r}")
    table = false_alarm_budget(registry)
    over = {tier: found for tier, found in table.items() if found["sum"] > budget}
    if over:
        tier, found = next(iter(over.items()))
        largest = sorted(found["statements"], key=lambda r: -r["probability"])[:3]
        named = ", ".join(f"{r['claim']}:{r['statement']} {r['probability']:g}" for r in largest)
        sums = ", ".join(f"{t} ({f['sum']:g})" for t, f in over.items())
        raise pytest.UsageError(
            f"registry: the false-alarm probabilities of tier(s) {sums} "
            f"sum past the budget {budget:g} (ini claims_false_alarm_budget); largest in {tier}: {named} "
            "(a single false_alarm number counts in every tier the statement runs in)"
        )


_SIGTERM_BEFORE = pytest.StashKey[Any]()


def _catch_sigterm(state: State) -> None:
    """A scheduler's SIGTERM (a time limit) ends the session as Ctrl-C does, so both reports are written
    and the claims cut off say `interrupted` (workers too: they finish their reports, not crash)."""

    def on_sigterm(signum: int, frame: Any) -> None:
        interrupted(state.results, "SIGTERM", keep_first=False)
        raise KeyboardInterrupt("SIGTERM")

    try:
        state.config.stash[_SIGTERM_BEFORE] = signal.signal(signal.SIGTERM, on_sigterm)
    except (ValueError, OSError, AttributeError):  # not the main thread, or no SIGTERM on this platform
        pass


def pytest_unconfigure(config: pytest.Config) -> None:
    if _SIGTERM_BEFORE in config.stash:
        try:
            signal.signal(signal.SIGTERM, config.stash[_SIGTERM_BEFORE])
        except (ValueError, OSError, TypeError):
            pass
    if CONTROLLER_MARK in config.stash:
        threads.unmark_controller(config.stash[CONTROLLER_MARK])
        del config.stash[CONTROLLER_MARK]
    if REPORT_LOCK in config.stash:
        config.stash[REPORT_LOCK].release()
        del config.stash[REPORT_LOCK]
    if SESSION_TOKEN in config.stash:
        context.leave_session(config.stash[SESSION_TOKEN])
        del config.stash[SESSION_TOKEN]
    for plugin in config.stash.get(ROLES, []):  # as pytest's junitxml unregisters its LogXML
        config.pluginmanager.unregister(plugin)
    if ROLES in config.stash:
        del config.stash[ROLES]


def _note(line: str) -> None:
    sys.stderr.write(line + "\n")


def raised_where(error: BaseException) -> str:
    """'NameError: ... (file:line)', the line being the innermost frame of the traceback (where it was raised)."""
    frames = [  # the project's frames: not the import machinery's, not this package's
        frame
        for frame in traceback.extract_tb(error.__traceback__)
        if not frame.filename.startswith("<")
        and "importlib" not in Path(frame.filename).parts
        and Path(__file__).parent not in Path(frame.filename).parents
    ]
    where = f" ({frames[-1].filename}:{frames[-1].lineno})" if frames else ""
    return f"{type(error).__name__}: {error}{where}"


def _check_only_mutant(config: pytest.Config, state: State) -> None:
    """--claims-mutant NAME selects mutants of a --claims-mutants run: without one it would be ignored, and an empty or
    unknown name would select none and end green with no mutant tried; each is one UsageError."""
    only = state.settings.only_mutants
    if not only:
        return
    if not state.settings.run_mutants:
        raise pytest.UsageError(
            f"--claims-mutant {only[0]!r} selects mutants of a mutant run: give --claims-mutants too"
        )
    named = sorted({m for c in state.registry.claims.values() for s in c.statements.values() for m in s.mutants})
    unknown = [name for name in only if name not in named]
    if unknown:
        raise pytest.UsageError(
            f"--claims-mutant {unknown[0]!r}: no statement of the registry lists a mutant of that name "
            f"(known: {', '.join(named) or 'none'})"
        )


def _load_mutants(config: pytest.Config, state: State) -> None:
    module = state.settings.mutants_module
    named = {m for c in state.registry.claims.values() for s in c.statements.values() for m in s.mutants}
    if not module:
        if state.settings.run_mutants:
            raise pytest.UsageError("--claims-mutants needs the ini key claims_mutants (the module listing MUTANTS)")
        return
    try:
        found = catalogue(module)
    except MutantError as error:
        raise pytest.UsageError(f"claims_mutants = {module}: {error}") from None
    except Exception as error:  # the catalogue is the project's code: whatever it raises is one line naming it
        raise pytest.UsageError(f"claims_mutants = {module}: importing it raised {raised_where(error)}") from None
    loaded = getattr(sys.modules.get(module), "__file__", None) or "?"
    unknown = sorted(named - set(found))
    if unknown:
        where = sorted(
            f"{c.id}:{s.name} ({', '.join(m for m in s.mutants if m in unknown)})"
            for c in state.registry.claims.values()
            for s in c.statements.values()
            if set(s.mutants) & set(unknown)
        )
        raise pytest.UsageError(
            f"registry names mutants that {module} (loaded from {loaded}) does not define: {'; '.join(where)}"
        )
    found_stale = {name: stale_mutants(module, [name]) for name in sorted(named)}
    stale = {name: lines[0] for name, lines in found_stale.items() if lines}
    if stale and state.settings.run_mutants:
        raise pytest.UsageError(
            "mutants that no longer apply:\n  "
            + "\n  ".join(stale.values())
            + f"\n  remedy: update each snippet in {loaded} to the code as it now reads (or drop the mutant from "
            "the registry)"
        )
    loaded_catalogue(state.mutants, found, stale)  # stale without --claims-mutants: a problem of each claim (session)
