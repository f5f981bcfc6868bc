"""How a run's tests would spread over N workers or N pytest-split groups, from its own durations.

    python -m pytest_claims.cli.schedule RUN [-n 8 16 64] [--splits 2 4] [--top 5] [--write-durations .test_durations]

RUN is a verdicts.json (its `timings.tests`: seconds per test over its phases) or a pytest-split
durations file (`.test_durations`: {test: seconds}). For each N it prints the predicted wall time of
longest-first list scheduling (each test, longest first, to the worker free soonest: what xdist's
worksteal approaches when the long tests start first), the ideal (total / N, but never below the
longest test), the efficiency total / (N x wall), and the tests that bound the wall. A test that
waited on a store lock for a result another test computed counts with its waiting time: the
prediction is for the work as it was placed in that run.
"""

from __future__ import annotations

import argparse
import heapq
import json
import os
import sys
from pathlib import Path
from typing import Any

from pytest_claims.cli import say
from pytest_claims.stats.binomial import finite_number
from pytest_claims.store import bounded
from pytest_claims.store.atomic import atomic_write
from pytest_claims.model.verdicts_json import MAX_VERDICTS_BYTES


class ScheduleError(ValueError):
    """A file that holds no per-test durations."""


def _json(path: Path) -> Any:
    """The JSON of a verdicts.json or durations file, through the plugin's one bounded reader
    (pytest_claims.store.bounded: a FIFO or a device refused unread, a verdicts.json's size limit)."""
    try:
        return bounded.read_json(path, MAX_VERDICTS_BYTES, ceiling="the limit for a verdicts.json")
    except bounded.InputRefused as error:
        raise ScheduleError(f"{path}: {error}") from None
    except (OSError, ValueError) as error:
        raise ScheduleError(f"{path}: not readable JSON ({error})") from None


def durations_of(path: Path) -> dict[str, float]:
    data = _json(path)
    if isinstance(data, dict) and isinstance(data.get("timings"), dict):
        found = data["timings"].get("tests")
        if not isinstance(found, dict) or not found:
            raise ScheduleError(
                f"{path}: a verdicts.json without timings.tests (written by pytest-claims before schema 4?)"
            )
        data = found
    if not isinstance(data, dict) or not all(isinstance(v, (int, float)) for v in data.values()):
        raise ScheduleError(f"{path}: neither a verdicts.json nor a {{test: seconds}} durations file")
    for test, seconds in data.items():
        if not (finite_number(seconds) and seconds >= 0):  # NaN, infinities, ints past a float, negatives
            raise ScheduleError(
                f"{path}: the duration of {test!r} is {seconds!r:.40}, not a finite number of seconds >= 0"
            )
    return {str(k): float(v) for k, v in data.items()}


def write_durations(path: Path, durations: dict[str, float], run: Path) -> int:
    """`durations` merged into the pytest-split file `path` (its entries kept, ours replacing theirs), written
    atomically; the number of entries written. ScheduleError for a `path` that is the run read, or not a durations
    file, or that cannot be written: it is never replaced by anything but a durations file."""
    try:
        if os.path.samefile(path, run):
            raise ScheduleError(f"--write-durations {path} is the run read ({run}): not overwritten")
    except OSError:  # no such file yet
        pass
    kept = durations_of(path) if os.path.lexists(path) else {}
    kept.update(durations)
    try:
        atomic_write(path, (json.dumps(dict(sorted(kept.items())), indent=1) + "\n").encode("utf-8"), sync=False)
    except OSError as error:
        raise ScheduleError(f"cannot write {path} ({error.strerror or error})") from None
    return len(kept)


def indivisible_of(path: Path) -> dict[str, str]:
    """The work units of a verdicts.json that say why they cannot be split (`timings.indivisible`)."""
    try:
        data = _json(path)
    except ScheduleError:
        return {}
    found = data.get("timings", {}).get("indivisible") if isinstance(data, dict) else None
    return {str(k): str(v) for k, v in found.items()} if isinstance(found, dict) else {}


def longest_first(durations: dict[str, float], workers: int) -> dict[str, Any]:
    """Longest-first list scheduling onto `workers`: the wall, per-worker loads, what each worker ran."""
    loads = [(0.0, w) for w in range(workers)]
    assigned: list[list[str]] = [[] for _ in range(workers)]
    for test, seconds in sorted(durations.items(), key=lambda kv: (-kv[1], kv[0])):
        load, w = heapq.heappop(loads)
        assigned[w].append(test)
        heapq.heappush(loads, (load + seconds, w))
    per_worker = sorted(((load, w) for load, w in loads), reverse=True)
    total = sum(durations.values())
    wall = per_worker[0][0]
    longest = max(durations.values(), default=0.0)
    return {
        "workers": workers,
        "total": total,
        "wall": wall,
        "ideal": max(total / workers, longest),
        "efficiency": total / (workers * wall) if wall > 0 else 1.0,
        "bounding": assigned[per_worker[0][1]][:3],
        "loads": [load for load, _ in per_worker],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m pytest_claims.cli.schedule", description=__doc__.split("\n\n")[0])
    parser.add_argument("run", type=Path, help="a verdicts.json or a .test_durations file")
    parser.add_argument("-n", type=int, nargs="+", default=[2, 8, 16, 64], help="worker counts (default 2 8 16 64)")
    parser.add_argument(
        "--splits", type=int, nargs="*", default=[], help="pytest-split group counts: the spread of the groups' sums"
    )
    parser.add_argument("--top", type=int, default=5, help="show the N longest tests")
    parser.add_argument(
        "--write-durations",
        type=Path,
        metavar="PATH",
        help="also write the durations as a pytest-split file (merged into PATH's entries if it exists)",
    )
    args = parser.parse_args(argv)
    if any(n < 1 for n in args.n + args.splits):
        print("schedule: worker and group counts must be positive", file=sys.stderr)
        return 2
    try:
        durations = durations_of(args.run)
        if args.write_durations:
            written = write_durations(args.write_durations, durations, args.run)
            print(f"wrote {written} durations to {args.write_durations} ({len(durations)} from {args.run})")
    except ScheduleError as error:
        print(f"schedule: {error}", file=sys.stderr)
        return 2
    total = sum(durations.values())
    indivisible = indivisible_of(args.run)
    print(f"{len(durations)} tests, {total:.0f} s of test time; the longest:")
    for test, seconds in sorted(durations.items(), key=lambda kv: -kv[1])[: args.top]:
        why = f"  (indivisible: {indivisible[test]})" if test in indivisible else ""
        say(f"  {seconds:8.1f} s  {100 * seconds / max(total, 1e-9):5.1f} %  {test}{why}")
    print(f"{'workers':>8} {'wall s':>9} {'ideal s':>9} {'efficiency':>10}  bounded by")
    for n in args.n:
        found = longest_first(durations, n)
        say(
            f"{n:>8} {found['wall']:>9.0f} {found['ideal']:>9.0f} {found['efficiency']:>9.0%}  "
            f"{', '.join(found['bounding'])}"
        )
    for n in args.splits:
        found = longest_first(durations, n)  # pytest-split's least_duration algorithm is this assignment
        loads = found["loads"]
        print(
            f"--splits {n} (least_duration): group sums {', '.join(f'{x:.0f}' for x in loads)} s; "
            f"largest / smallest {loads[0] / max(loads[-1], 1e-9):.2f}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
