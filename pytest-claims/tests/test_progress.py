"""Progress lines for long runs (issue 50 item 6): the time left from the committed timings at the run's pace, plain
lines without carriage returns, none under -q, and a bad interval stopped in one line."""

from __future__ import annotations

import json

import pytest

from pytest_claims.roles.progress import Progress, committed_durations, seconds_left
from pytest_claims.cli.skeleton import FILES

pytestmark = pytest.mark.smoke

SLOW_TESTS = """
import time

import pytest


@pytest.mark.smoke
@pytest.mark.parametrize("i", range(4))
def test_slow(i):
    time.sleep(0.05)
"""


def test_the_time_left_is_the_expected_seconds_left_at_the_pace_so_far():
    expected = {"a": 10.0, "b": 30.0, "c": 60.0}
    assert seconds_left(expected, set(), 5.0) is None  # no pace before the first test ends
    assert seconds_left(expected, {"a"}, 5.0) == pytest.approx(45.0)  # half the expected pace: 90 s expected left
    assert seconds_left(expected, {"a", "b"}, 80.0) == pytest.approx(120.0)  # twice slower: 60 s expected left
    assert seconds_left(expected, {"a", "b", "c"}, 1.0) == 0.0


def test_the_committed_timings_are_read_as_data(tmp_path):
    assert committed_durations(tmp_path) == {}
    (tmp_path / ".test_durations").write_text(json.dumps({"t::a": 2.5, "t::b": "x", "t::c": -1, "t::d": True}))
    assert committed_durations(tmp_path) == {"t::a": 2.5}
    (tmp_path / ".test_durations").write_text("[1, 2]")
    assert committed_durations(tmp_path) == {}
    (tmp_path / ".test_durations").unlink()
    (tmp_path / ".test_durations").symlink_to(tmp_path / "elsewhere.json")
    (tmp_path / "elsewhere.json").write_text(json.dumps({"t::a": 1.0}))
    assert committed_durations(tmp_path) == {}  # a link is not followed out of the rootdir


@pytest.mark.parametrize(
    "text",
    ['{"t::b": 1' + "0" * 400 + "}", '{"t::b": 1e308}', '{"t::b": ' + "[" * 100_000 + "]" * 100_000 + "}"],
    ids=["an-int-past-any-float", "a-time-past-any-test", "nested-past-the-recursion-limit"],
)
def test_a_damaged_timing_loses_only_itself(tmp_path, text):
    """Timings from elsewhere are data: one no float holds, one no test takes (its sums would overflow the estimate
    and the mutants' time limits to inf), or nesting past the decoder's recursion limit, reads as no timing; never
    an OverflowError or RecursionError that ends the run with an INTERNALERROR traceback."""
    (tmp_path / ".test_durations").write_text(text.replace("{", '{"t::a": 2.5, ', 1))
    assert committed_durations(tmp_path) in ({"t::a": 2.5}, {})
    assert "t::b" not in committed_durations(tmp_path)


def test_a_line_names_the_basis_of_its_estimate(pytester):
    pytester.makefile(".ini", pytest="[pytest]\n")
    config = pytester.parseconfig()
    progress = Progress(config, 1.0)
    progress.durations = {"t::a": 4.0, "t::b": 8.0}
    progress.selected(["t::a", "t::b", "t::c"])  # t::c has no timing: it counts as their mean, 6 s
    progress.done = {"t::a"}
    assert progress.line(2.0) == (
        "claims progress: 1/3 tests in 0m02s, about 0m07s left (timings of 2 of 3 tests from .test_durations)"
    )
    progress.durations = {}
    progress.selected(["t::a", "t::b"])
    progress.done = {"t::a"}
    assert progress.line(3.0) == "claims progress: 1/2 tests in 0m03s, about 0m03s left (by test count)"


def project(pytester: pytest.Pytester, ini: str) -> None:
    for name, text in FILES.items():
        (pytester.path / name).write_text(text, encoding="utf-8")
    (pytester.path / "pytest.ini").write_text(FILES["pytest.ini"] + ini, encoding="utf-8")
    pytester.makepyfile(test_slow=SLOW_TESTS)
    pytester.syspathinsert()
    durations = {f"test_slow.py::test_slow[{i}]": 0.05 for i in range(4)}
    (pytester.path / ".test_durations").write_text(json.dumps(durations), encoding="utf-8")


def test_progress_lines_during_a_run_plain_and_none_under_q(pytester):
    project(pytester, "claims_progress_seconds = 0.01\n")
    result = pytester.runpytest("-p", "no:randomly", "-p", "no:cacheprovider")
    assert result.ret == 0, result.stdout.str()
    lines = [line for line in result.stdout.lines if line.startswith("claims progress: ")]
    assert lines and all(" left (timings of 4 of 6 tests from .test_durations)" in line for line in lines[1:]), lines
    assert "\r" not in result.stdout.str()
    quiet = pytester.runpytest("-q", "-p", "no:randomly", "-p", "no:cacheprovider")
    assert quiet.ret == 0 and "claims progress" not in quiet.stdout.str()


@pytest.mark.parametrize("value", ["soon", "-1", "inf"])
def test_a_bad_interval_stops_the_run_in_one_line(pytester, value):
    project(pytester, f"claims_progress_seconds = {value}\n")
    result = pytester.runpytest("-p", "no:randomly", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert f"ini claims_progress_seconds must be a non-negative number of seconds, got '{value}'" in result.stderr.str()
