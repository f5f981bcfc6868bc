"""Saved runs and their comparison: every run's verdicts.json kept under its own numbered name, the last one the
default `--previous-verdicts`, and `pytest-claims-compare A B` for CI across commits, seeds and machines.

    pytest-claims-compare [A [B]] [--report-dir DIR]

Each run with verdicts writes `<claims_report_dir>/runs/NNNN_<UTC date>_seed<seed>/verdicts.json` (as
pytest-benchmark autosaves `NNNN_<commit>_<date>.json`): the number is one more than the largest there, the
directory is made with one mkdir (which fails rather than reuse a name another run took at the same moment) and
the file is written to a temporary name and renamed, so a saved run is never overwritten nor read half-written.
A and B are run numbers (`7`, `0007`) or paths (a verdicts.json or a directory holding one); without B, A is
compared with the last saved run; without either, the last two saved runs are. It prints the claims whose verdict
changed, the statement tests whose outcome changed and the environment lines that differ, and exits 1 when a
verdict or an outcome changed, 0 when none did (a different environment alone is not a change), 2 on bad input.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import re
import sys
from pathlib import Path
from typing import Any

import pytest

from pytest_claims import payload as verdicts_json
from pytest_claims.payload import PayloadError
from pytest_claims.verdicts import changes

RUNS_DIR = "runs"
SAVE_INI = "claims_save_runs"
_NAME = re.compile(r"^(\d{4,})_")


class CompareError(ValueError):
    """An argument that names no readable saved run."""


def add_options(parser: pytest.Parser, group: Any) -> None:
    parser.addini(
        SAVE_INI,
        "keep each run's verdicts.json as <claims_report_dir>/runs/NNNN_<date>_seed<seed>/verdicts.json "
        "(the last one is the default --previous-verdicts)",
        type="bool",
        default=True,
    )


def saved_runs(report_dir: Path) -> list[tuple[int, Path]]:
    """The saved runs under `report_dir`/runs, (number, directory), oldest first."""
    found = []
    root = Path(report_dir) / RUNS_DIR
    if root.is_dir():
        for entry in root.iterdir():
            match = _NAME.match(entry.name)
            if match and entry.is_dir() and (entry / "verdicts.json").is_file():
                found.append((int(match.group(1)), entry))
    return sorted(found)


def save_run(report_dir: Path, payload: dict[str, Any]) -> Path:
    """Write `payload` as the next numbered saved run; return its verdicts.json."""
    root = Path(report_dir) / RUNS_DIR
    root.mkdir(parents=True, exist_ok=True)
    stamp = dt.datetime.now(dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    seed = payload.get("seed")
    label = "-".join(map(str, seed)) if isinstance(seed, list) else str(seed)
    taken = [int(m.group(1)) for e in root.iterdir() if (m := _NAME.match(e.name))]
    number = max(taken, default=0) + 1
    while True:
        directory = root / f"{number:04d}_{stamp}_seed{label}"
        try:
            directory.mkdir()
            break
        except FileExistsError:  # another run took this number a moment ago
            number += 1
    final = directory / "verdicts.json"
    partial = directory / f".verdicts.json.{os.getpid()}.tmp"
    partial.write_text(verdicts_json.text(payload), encoding="utf-8")
    os.replace(partial, final)
    return final


def default_previous(config: pytest.Config, report_dir: Path) -> str | None:
    """The last saved run (controller only), for `--previous-verdicts` when it is not given; None without one."""
    if hasattr(config, "workerinput"):
        return None
    for _, directory in reversed(saved_runs(report_dir)):
        try:
            load(directory / "verdicts.json")
        except CompareError:  # a damaged saved run is skipped here; the compare command names it
            continue
        return str(directory / "verdicts.json")
    return None


def load(path: Path) -> dict[str, Any]:
    """A verdicts.json of any schema (payload.read_any: only its claims, environment, seed and runs are compared)."""
    try:
        return verdicts_json.read_any(path)
    except PayloadError as error:
        raise CompareError(str(error)) from None


def resolve(argument: str, report_dir: Path) -> Path:
    """A run number (of the saved runs under report_dir) or a path (a verdicts.json, or a directory with one)."""
    if argument.isdigit():
        number = int(argument)
        for found, directory in saved_runs(report_dir):
            if found == number:
                return directory / "verdicts.json"
        numbers = ", ".join(str(n) for n, _ in saved_runs(report_dir)) or "none"
        raise CompareError(f"no saved run number {number} under {Path(report_dir) / RUNS_DIR} (saved: {numbers})")
    path = Path(argument)
    if path.is_dir():
        path = path / "verdicts.json"
    if not path.is_file():
        raise CompareError(f"{argument}: no such run (neither a saved run number nor a verdicts.json)")
    return path


def environment_differences(before: dict[str, Any], after: dict[str, Any]) -> list[tuple[str, Any, Any]]:
    """(line, before, after) for each environment line, and the seed and tier, that differ between two runs."""
    old = {"seed": before.get("seed"), "tier": before.get("tier"), **(before.get("environment") or {})}
    new = {"seed": after.get("seed"), "tier": after.get("tier"), **(after.get("environment") or {})}
    return [
        (k, old.get(k, "absent"), new.get(k, "absent")) for k in dict.fromkeys([*old, *new]) if old.get(k) != new.get(k)
    ]


def compare(before: dict[str, Any], after: dict[str, Any]) -> dict[str, Any]:
    """The claims whose verdict changed (a claim gone from the later run included), the statement tests whose
    outcome changed, and the environment that differs."""
    found = changes(before, after)
    now = {c["id"] for c in after["claims"]}
    gone = [
        {"id": c["id"], "key": c.get("key", c["id"]), "before": c.get("verdict", "?"), "after": "absent"}
        for c in before["claims"]
        if c["id"] not in now
    ]
    return {
        "claims": found["claims"] + gone,
        "statements": found["statements"],
        "environment": environment_differences(before, after),
    }


def describe(path: Path, payload: dict[str, Any]) -> str:
    runs = payload.get("runs") or [{}]
    return f"{path} (seed {payload.get('seed')}, {runs[0].get('date', '?')}, commit {runs[0].get('commit', '?')})"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="pytest-claims-compare", description=__doc__.split("\n\n")[0])
    parser.add_argument("runs", nargs="*", help="run numbers or paths: A B, A (against the last), or none")
    parser.add_argument(
        "--report-dir", type=Path, default=Path("reports"), help="the claims_report_dir holding runs/ (reports)"
    )
    args = parser.parse_args(argv)
    try:
        if len(args.runs) > 2:
            raise CompareError(f"at most two runs to compare, got {len(args.runs)}")
        saved = saved_runs(args.report_dir)
        named = [resolve(a, args.report_dir) for a in args.runs]
        if len(named) < 2:
            last = [d / "verdicts.json" for _, d in saved[-(2 - len(named)) :]]
            if len(named) + len(last) < 2:
                raise CompareError(
                    f"{len(saved)} saved run(s) under {args.report_dir / RUNS_DIR}: name two runs to compare"
                )
            named += last
        before, after = load(named[0]), load(named[1])
    except CompareError as error:
        print(f"pytest-claims-compare: {error}", file=sys.stderr)
        return 2
    found = compare(before, after)
    print(f"before: {describe(named[0], before)}\nafter:  {describe(named[1], after)}")
    if found["claims"]:
        print(f"claims whose verdict changed ({len(found['claims'])}):")
        for c in found["claims"]:
            print(f"  {c['key']}  {c['id']}: {c['before']} -> {c['after']}")
    if found["statements"]:
        print(f"statements whose outcome changed ({len(found['statements'])}):")
        for s in found["statements"]:
            print(f"  {s['claim']} {s['statement']}  {s['test']}: {s['before']} -> {s['after']}")
    if found["environment"]:
        print("environment that differs:")
        for line, old, new in found["environment"]:
            print(f"  {line}: {old} -> {new}")
    changed = bool(found["claims"] or found["statements"])
    print("verdicts and outcomes changed" if changed else "no verdict or outcome changed")
    return 1 if changed else 0


if __name__ == "__main__":
    sys.exit(main())
