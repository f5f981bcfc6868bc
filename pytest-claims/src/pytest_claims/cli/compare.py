"""`pytest-claims-compare A B`: two runs' verdicts.json compared, for CI across commits, seeds and machines.

    pytest-claims-compare [A [B]] [--report-dir DIR] [--fail-on-change REL]

A and B are run numbers (`7`, `0007`: saved runs, report.history) or paths (a verdicts.json or a directory
holding one); without B, A is compared with the last other saved run of its kind; without either, the last two
plain saved runs are (a `--claims-mutants` run is compared only with another such run: its verdicts say what its
mutants did, not what the claims are; the runs passed over are named). It prints the claims whose verdict
changed, the statement tests whose outcome changed, the key numbers that moved (old, new, their ratio; paired by
label and by the run or seed that recorded them), the claims that only one of the runs selected and the
environment lines that differ. Exit status: 1 when a verdict or an outcome changed; else 4 when `--fail-on-change
REL` is given and a key number moved by a relative change |new - old| / |old| above REL; else 3 when the runs did
not select the same claims (what one of them did not select was not compared); else 0 (a different environment
alone, or numbers that moved without --fail-on-change, is not a change); 2 on bad input (one line, whatever the
file holds).
"""

from __future__ import annotations

import argparse
import math
import re
import sys
from pathlib import Path
from typing import Any

from pytest_claims.cli import say
from pytest_claims.model.verdicts import changes
from pytest_claims.report.history import (
    RUNS_DIR,
    VERDICTS,
    CompareError,
    is_mutants_run,
    load,
    saved_runs,
)
from pytest_claims.stats.binomial import finite_number
from pytest_claims.stats.shown_numbers import significant

EXIT_CHANGED, EXIT_BAD_INPUT, EXIT_SELECTION_DIFFERS, EXIT_NUMBERS_MOVED = 1, 2, 3, 4


def resolve(argument: str, report_dir: Path) -> Path:
    """A run number (of the saved runs under report_dir) or a path (a verdicts.json, or a directory with one)."""
    if re.fullmatch(r"[0-9]+", argument):  # ASCII digits only: str.isdigit() admits "²" and "١"
        if len(argument.lstrip("0")) > 9:  # int() refuses 4,300 digits, and no saved run has over 9 (history._NAME)
            raise CompareError(f"{argument[:20]}...: no saved run number has more than 9 digits")
        number = int(argument)
        for found, directory in saved_runs(report_dir):
            if found == number:
                return directory / "verdicts.json"
        numbers = ", ".join(str(n) for n, _ in saved_runs(report_dir)) or "none"
        raise CompareError(f"no saved run number {number} under {Path(report_dir) / RUNS_DIR} (saved: {numbers})")
    path = Path(argument)
    try:
        if path.is_dir():
            path = path / "verdicts.json"
        found = path.is_file()
    except OSError as error:  # a name too long, a folder not searchable: Python 3.11 raises these
        raise CompareError(f"{argument[:200]}: cannot be read ({error.strerror or error})") from None
    if not found:
        raise CompareError(f"{argument}: no such run (neither a saved run number nor a verdicts.json)")
    return path


def environment_differences(before: dict[str, Any], after: dict[str, Any]) -> list[tuple[str, Any, Any]]:
    """(line, before, after) for each environment line, and the seed and tier, that differ between two runs."""
    old = {"seed": before.get("seed"), "tier": before.get("tier"), **(before.get("environment") or {})}
    new = {"seed": after.get("seed"), "tier": after.get("tier"), **(after.get("environment") or {})}
    return [
        (k, old.get(k, "absent"), new.get(k, "absent")) for k in dict.fromkeys([*old, *new]) if old.get(k) != new.get(k)
    ]


def _numbers(record: dict[str, Any]) -> dict[tuple[str, str], float]:
    """A claim's key numbers as {(label, run): number}: each value that is a number, and each number field of a
    value that is a record (`label.field`); text, flags and lists are not compared."""
    out: dict[tuple[str, str], float] = {}
    for entry in record.get("key_numbers") or []:
        for value in entry.get("values") or []:
            found = value.get("value")
            fields = found.items() if isinstance(found, dict) else [("", found)]
            for field, number in fields:
                if finite_number(number):  # an int past a float's range (10**400), like an infinity, is not compared
                    label = entry["label"] + (f".{field}" if field else "")
                    out[label, str(value.get("run", ""))] = float(number)
    return out


def relative_change(old: float, new: float) -> float:
    """|new - old| / |old|: infinite where a number moves away from 0, 0 where it stays."""
    if old == new:
        return 0.0
    return abs(new - old) / abs(old) if old else math.inf


def moved_numbers(before: dict[str, Any], after: dict[str, Any]) -> list[dict[str, Any]]:
    """The key numbers of the claims in both runs whose value changed, paired by label and by the run that
    recorded them (a parametrisation, or a seed in a replication set): old, new, their ratio (None from 0) and
    the relative change. A number one run lacks is not a move."""
    old_claims = {c["id"]: c for c in before.get("claims", [])}
    moved = []
    for record in after.get("claims", []):
        if record["id"] not in old_claims:
            continue
        old = _numbers(old_claims[record["id"]])
        for (label, run), new in _numbers(record).items():
            was = old.get((label, run))
            if was is None or was == new:
                continue
            moved.append(
                {
                    "key": record.get("key", record["id"]),
                    "label": label,
                    "run": run,
                    "before": was,
                    "after": new,
                    "ratio": new / was if was else None,
                    "change": relative_change(was, new),
                }
            )
    return moved


def fail_on_change(text: str | None) -> float | None:
    """--fail-on-change: a relative change (0.1: 10%) that is finite and not negative, else CompareError."""
    if text is None:
        return None
    try:
        limit = float(text)
    except ValueError:
        limit = math.nan
    if not math.isfinite(limit) or limit < 0:
        raise CompareError(f"--fail-on-change {text!r}: give a relative change, a finite number >= 0 (0.1: 10%)")
    return limit


def compare(before: dict[str, Any], after: dict[str, Any]) -> dict[str, Any]:
    """The claims whose verdict changed (a claim gone from the later run included), the statement tests whose
    outcome changed, the claims only one of the runs selected, and the environment that differs."""
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
        "selection": found["selection"],
        "environment": environment_differences(before, after),
        "numbers": moved_numbers(before, after),
    }


def _with_last_of_a_kind(
    named: list[tuple[Path, dict]], saved: list[tuple[int, Path]], report_dir: Path
) -> tuple[list[tuple[Path, dict]], list[Path]]:
    """`named` (none or one run) completed to two with the newest saved runs of its kind (plain runs when none is
    named), in the order before, after; and the newer saved runs of the other kind passed over."""
    found: list[tuple[Path, dict]] = []
    passed_over: list[Path] = []
    kind = is_mutants_run(named[0][1]) if named else False
    for _, directory in reversed(saved):
        path = directory / VERDICTS
        if named and path.resolve() == named[0][0].resolve():  # A is compared with another run, not itself
            continue
        payload = load(path)
        if is_mutants_run(payload) != kind:
            passed_over.append(path)
            continue
        found.append((path, payload))
        if len(named) + len(found) == 2:
            return named + found[::-1], passed_over
    which = "--claims-mutants" if kind else "plain"
    raise CompareError(
        f"{len(found)} saved {which} run(s) of {len(saved)} under {Path(report_dir) / RUNS_DIR}: "
        "name two runs to compare"
    )


def describe(path: Path, payload: dict[str, Any]) -> str:
    runs = payload.get("runs") or [{}]
    return f"{path} (seed {payload.get('seed')}, {runs[0].get('date', '?')}, commit {runs[0].get('commit', '?')})"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="pytest-claims-compare", description=__doc__.split("\n\n")[0])
    parser.add_argument("runs", nargs="*", help="run numbers or paths: A B, A (against the last), or none")
    parser.add_argument(
        "--report-dir", type=Path, default=Path("reports"), help="the claims_report_dir holding runs/ (reports)"
    )
    parser.add_argument(
        "--fail-on-change",
        metavar="REL",
        help=f"exit {EXIT_NUMBERS_MOVED} when a key number moved by more than this relative change (0.1: 10%%) and no "
        "verdict or outcome changed",
    )
    args = parser.parse_args(argv)
    try:
        limit = fail_on_change(args.fail_on_change)
        if len(args.runs) > 2:
            raise CompareError(f"at most two runs to compare, got {len(args.runs)}")
        named = [(path, load(path)) for path in (resolve(a, args.report_dir) for a in args.runs)]
        passed_over: list[Path] = []
        if len(named) < 2:
            named, passed_over = _with_last_of_a_kind(named, saved_runs(args.report_dir), args.report_dir)
    except CompareError as error:
        print(f"pytest-claims-compare: {error}", file=sys.stderr)
        return EXIT_BAD_INPUT
    (first, before), (second, after) = named
    if passed_over:
        kind = "plain" if is_mutants_run(before) else "--claims-mutants"
        say(f"passed over {len(passed_over)} saved {kind} run(s): {', '.join(p.parent.name for p in passed_over)}")
    found = compare(before, after)
    say(f"before: {describe(first, before)}")
    say(f"after:  {describe(second, after)}")
    if found["claims"]:
        say(f"claims whose verdict changed ({len(found['claims'])}):")
        for c in found["claims"]:
            say(f"  {c['key']}  {c['id']}: {c['before']} -> {c['after']}")
    if found["statements"]:
        say(f"statements whose outcome changed ({len(found['statements'])}):")
        for s in found["statements"]:
            say(f"  {s['claim']} {s['statement']}  {s['test']}: {s['before']} -> {s['after']}")
    if found["selection"]:
        say(f"claims that only one run selected, not compared ({len(found['selection'])}):")
        for c in found["selection"]:
            say(f"  {c['key']}  {c['id']}: {c['before']} -> {c['after']}")
    if found["numbers"]:
        say(f"key numbers that moved ({len(found['numbers'])}):")
        for n in found["numbers"]:
            ratio = f"x{significant(n['ratio'])}" if n["ratio"] is not None else "from 0"
            run = f" [{n['run']}]" if n["run"] else ""
            say(f"  {n['key']}  {n['label']}{run}: {significant(n['before'])} -> {significant(n['after'])} ({ratio})")
    if found["environment"]:
        say("environment that differs:")
        for line, old, new in found["environment"]:
            say(f"  {line}: {old} -> {new}")
    if found["claims"] or found["statements"]:
        say("verdicts and outcomes changed")
        return EXIT_CHANGED
    beyond = [n for n in found["numbers"] if limit is not None and n["change"] > limit]
    if beyond:
        say(f"{len(beyond)} key number(s) moved by more than {limit:g} (relative): --fail-on-change")
        return EXIT_NUMBERS_MOVED
    if found["selection"]:
        say("no verdict or outcome changed among the claims both runs selected; the runs selected different claims")
        return EXIT_SELECTION_DIFFERS
    say("no verdict or outcome changed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
