"""Saved runs: every run's verdicts.json kept under its own numbered name, the last one the default
`--previous-verdicts` (their comparison is cli.compare's `pytest-claims-compare`).

Each run with verdicts writes `<claims_report_dir>/runs/NNNN_<UTC date>_seed<seed>/verdicts.json` (as
pytest-benchmark autosaves `NNNN_<commit>_<date>.json`): the number is one more than the largest there, the
directory is made with one mkdir (which fails rather than reuse a name another run took at the same moment) and
the file is written to a temporary name and renamed, so a saved run is never overwritten nor read half-written (a
write that fails removes both, leaving nothing behind). Only `runs/` itself and real directories in it are used: a
`runs/` or an entry that is a symbolic link is passed over, never followed out of the report directory; a name
whose number has more than 9 digits is not a saved run, so none is saved past 999999999 (OSError: the run says it
was not saved rather than save it where no later run looks). A saved run that fails the check a previous run gets is
skipped with one line (the run before it is the previous one), never stopping a run.
"""

from __future__ import annotations

import datetime as dt
import os
import re
import stat
from pathlib import Path
from typing import Any

import pytest

from pytest_claims.model import verdicts_json
from pytest_claims.store.atomic import atomic_write
from pytest_claims.model.inputs import checked_compared, checked_previous
from pytest_claims.outcomes import Verdict
from pytest_claims.model.verdicts_json import PayloadError

RUNS_DIR = "runs"
SAVE_INI = "claims_save_runs"
VERDICTS = "verdicts.json"
_NAME = re.compile(r"^([0-9]{4,9})_")  # at most 9 digits: a junk name of 250 digits is no saved run
LARGEST = 10**9 - 1  # the largest number _NAME reads
CANDIDATES = 20  # saved runs examined for the previous run of the same selection, newest first


class CompareError(ValueError):
    """An argument that names no readable saved run."""


def _runs_root(report_dir: Path) -> Path | None:
    """`report_dir`/runs when it is a real directory (not a symbolic link out of the report directory), else None."""
    root = Path(report_dir) / RUNS_DIR
    try:
        return root if stat.S_ISDIR(os.lstat(root).st_mode) else None
    except OSError:
        return None


def saved_runs(report_dir: Path) -> list[tuple[int, Path]]:
    """The saved runs under `report_dir`/runs, (number, directory), oldest first: real directories holding a regular
    verdicts.json (a symbolic link, there or for runs/ itself, is passed over)."""
    found = []
    root = _runs_root(report_dir)
    if root is not None:
        for entry in root.iterdir():
            match = _NAME.match(entry.name)
            try:
                if match and stat.S_ISDIR(os.lstat(entry).st_mode) and stat.S_ISREG(os.lstat(entry / VERDICTS).st_mode):
                    found.append((int(match.group(1)), entry))
            except OSError:
                continue
    return sorted(found)


def save_run(report_dir: Path, payload: dict[str, Any]) -> Path:
    """Write `payload` as the next numbered saved run; return its verdicts.json. OSError when it cannot be saved
    (then nothing of it is left behind: neither a temporary file nor an empty numbered directory)."""
    root = Path(report_dir) / RUNS_DIR
    root.mkdir(parents=True, exist_ok=True)
    if _runs_root(report_dir) is None:
        raise OSError(f"{root} is not a directory of the report directory (a symbolic link?): not followed")
    stamp = dt.datetime.now(dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    seed = payload.get("seed")
    label = re.sub(r"[^0-9A-Za-z.-]", "_", "-".join(map(str, seed)) if isinstance(seed, list) else str(seed))[:40]
    taken = [int(m.group(1)) for e in root.iterdir() if (m := _NAME.match(e.name))]
    number = max(taken, default=0) + 1
    while True:
        if number > LARGEST:  # a 10-digit name would be saved where saved_runs never looks (_NAME)
            raise OSError(f"{root} holds a run numbered {LARGEST} (the largest a saved run takes): not saved")
        directory = root / f"{number:04d}_{stamp}_seed{label}"
        try:
            directory.mkdir()
            break
        except FileExistsError:  # another run took this number a moment ago
            number += 1
    try:
        atomic_write(directory / VERDICTS, verdicts_json.text(payload).encode("utf-8"), sync=False)
    except BaseException:
        try:
            directory.rmdir()
        except OSError:
            pass
        raise
    return directory / VERDICTS


def previous_candidates(config: pytest.Config, report_dir: Path, note: Any = None) -> list[tuple[Path, dict]]:
    """The newest saved runs that pass the check a `--previous-verdicts` file gets, (verdicts.json, its payload),
    newest first, at most CANDIDATES (controller only; none on a worker). A damaged one is skipped with one line
    to `note` and never stops the run."""
    if hasattr(config, "workerinput"):
        return []
    found: list[tuple[Path, dict]] = []
    for _, directory in reversed(saved_runs(report_dir)[-CANDIDATES:]):
        path = directory / VERDICTS
        try:
            found.append((path, checked_previous(load(path), path, "")))
        except (CompareError, PayloadError, RecursionError) as error:
            if note is not None:
                note(f"pytest-claims: the saved run {path} is damaged and was skipped ({str(error)[:200]})")
    return found


def selected_claims(payload: dict[str, Any]) -> set[str]:
    """The ids of the claims a run selected (every verdict but `not selected`)."""
    return {c["id"] for c in payload["claims"] if c["verdict"] != Verdict.NOT_SELECTED}


def is_mutants_run(payload: dict[str, Any]) -> bool:
    """Whether a run ran its mutants (`--claims-mutants`): such a run is compared only with another such run."""
    return payload.get("mutants_run") is True


def same_selection(
    candidates: list[tuple[Path, dict]], selected: set[str], mutants_run: bool = False
) -> tuple[Path, dict] | None:
    """Among the candidates of the same kind (`mutants_run`), the newest that selected exactly `selected`, else the
    newest (its changes then name the claims that only one of the two runs selected), else None."""
    alike = [(path, payload) for path, payload in candidates if is_mutants_run(payload) == mutants_run]
    for path, payload in alike:
        if selected_claims(payload) == selected:
            return path, payload
    return alike[0] if alike else None


def load(path: Path) -> dict[str, Any]:
    """A verdicts.json of any schema whose compared fields (claims, their statements, runs, environment) are
    checked (CompareError names the file and the field otherwise)."""
    try:
        return checked_compared(verdicts_json.read_any(path), path)
    except PayloadError as error:
        raise CompareError(str(error)) from None
    except RecursionError:
        raise CompareError(f"{path}: not a readable verdicts.json (nested too deeply)") from None
