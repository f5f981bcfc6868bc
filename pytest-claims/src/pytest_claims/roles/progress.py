"""Progress lines for long runs: one plain line every claims_progress_seconds with the tests done and the time left.

The time left is the expected seconds of the tests not yet run, from the committed pytest-split timings
(`.test_durations` in the rootdir, the file `pytest --store-durations` and `pytest-claims-schedule --write-durations`
write), scaled by the pace so far (wall seconds per expected second, so `-n N` and a slower machine are accounted
for); a test without a timing counts as the mean of those with one, and without any timings the estimate is by test
count. Each line ends in a newline (no carriage returns to fill a CI log) and none is written under -q.
"""

from __future__ import annotations

import json
import math
import os
import stat
import time
from pathlib import Path
from typing import Any

import pytest

from pytest_claims.store.result_store import recorded_seconds

INI = "claims_progress_seconds"
DEFAULT_SECONDS = 60.0
DURATIONS = ".test_durations"
MAX_DURATIONS_BYTES = 64 * 2**20


def interval(config: pytest.Config, raw: str) -> float | None:
    """The seconds between lines (`raw`: the ini key's value), or None where none are written (0, or -q); a bad value
    is one UsageError line."""
    try:
        seconds = float(raw)
    except (TypeError, ValueError):
        seconds = math.nan
    if not 0.0 <= seconds < math.inf:
        raise pytest.UsageError(f"ini {INI} must be a non-negative number of seconds, got {raw!r}")
    return seconds if seconds > 0 and config.get_verbosity() >= 0 else None


def committed_durations(root: Path) -> dict[str, float]:
    """The rootdir's .test_durations (test id -> seconds) where it is a regular file of at most 64 MiB holding such a
    mapping; else nothing (progress is a convenience: a damaged file only loses the estimate's timings)."""
    path = Path(root) / DURATIONS
    try:
        if not stat.S_ISREG(os.lstat(path).st_mode) or os.lstat(path).st_size > MAX_DURATIONS_BYTES:
            return {}
        loaded = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):  # RecursionError: nesting past the decoder's limit
        return {}
    if not isinstance(loaded, dict):
        return {}
    timed = {str(k): recorded_seconds(v) for k, v in loaded.items()}
    return {test: seconds for test, seconds in timed.items() if seconds is not None}


def seconds_left(expected: dict[str, float], done: set[str], elapsed: float) -> float | None:
    """The wall seconds the tests not in `done` should take at this run's pace so far, or None before any pace."""
    done_expected = sum(seconds for test, seconds in expected.items() if test in done)
    if done_expected <= 0 or elapsed <= 0:
        return None
    left = sum(seconds for test, seconds in expected.items() if test not in done)
    return left * elapsed / done_expected


def _clock(seconds: float) -> str:
    seconds = int(round(seconds))
    return (
        f"{seconds // 3600}h{seconds % 3600 // 60:02d}m" if seconds >= 3600 else f"{seconds // 60}m{seconds % 60:02d}s"
    )


class Progress:
    """The controller's progress lines (registered by the plugin where `interval` gives a number)."""

    def __init__(self, config: pytest.Config, every: float) -> None:
        self.config = config
        self.every = every
        self.durations = committed_durations(Path(config.rootpath))
        self.expected: dict[str, float] = {}
        self.timed = 0
        self.done: set[str] = set()
        self.start = self.last = time.monotonic()

    def selected(self, tests: list[str]) -> None:
        known = [self.durations[t] for t in tests if t in self.durations]
        self.timed = len(known)
        fill = sum(known) / len(known) if known else 1.0  # no timings at all: each test counts the same
        self.expected = {t: self.durations.get(t, fill) for t in tests}
        self.start = self.last = time.monotonic()

    @pytest.hookimpl(trylast=True)
    def pytest_collection_finish(self, session: pytest.Session) -> None:
        if session.items:  # under pytest-xdist the controller collects nothing: the workers' ids come below
            self.selected([item.nodeid for item in session.items])

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node: Any, ids: list[str]) -> None:
        if not self.expected:
            self.selected(list(ids))

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.when != "teardown" or report.nodeid not in self.expected:
            return
        self.done.add(report.nodeid)
        now = time.monotonic()
        if now - self.last < self.every or len(self.done) == len(self.expected):
            return
        self.last = now
        writer = self.config.pluginmanager.get_plugin("terminalreporter")
        if writer is not None:
            writer.ensure_newline()
            if getattr(getattr(writer, "_tw", None), "width_of_current_line", 0):  # xdist's dots: end their line
                writer.line("")
            writer.write_line(self.line(now - self.start))

    def line(self, elapsed: float) -> str:
        left = seconds_left(self.expected, self.done, elapsed)
        total = len(self.expected)
        basis = f"timings of {self.timed} of {total} tests from {DURATIONS}" if self.timed else "by test count"
        estimate = f"about {_clock(left)} left ({basis})" if left is not None else "time left not known yet"
        return f"claims progress: {len(self.done)}/{total} tests in {_clock(elapsed)}, {estimate}"
