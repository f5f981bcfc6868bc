"""A serial --mutants run contains what a mutant does (pytest_claims.roles.mutant_process): a mutant that never returns
ends `timeout` at its time limit, one that ends or crashes its process ends `crashed`, named, and the run still
ends with its reports and a failing exit status; a run cut off by SIGTERM among the mutant items reads
`interrupted` and names them, none of them both not reached and killed."""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import time
from types import SimpleNamespace

import pytest

from pytest_claims.roles.mutant_process import time_limit
from toy_project import claim, verdicts

HOSTILE_MUTANTS = """
from pytest_claims.roles.mutants import Mutant

OLD = "return n * (n + 1) // 2"
MUTANTS = [
    Mutant("off-by-one", "toy_kernel:triangle", "n + 1", "n + 2", "a constant off by one"),
    Mutant("hangs", "toy_kernel:triangle", OLD, "open('hanging', 'w').close()\\n    while True:\\n        pass"),
    Mutant("exits", "toy_kernel:triangle", OLD, "import os; os._exit(0)"),
    Mutant("exits-3", "toy_kernel:triangle", OLD, "import os; os._exit(3)"),
    Mutant("segfaults", "toy_kernel:triangle", OLD, "import ctypes; return ctypes.string_at(0)"),
    Mutant("squares", "toy_kernel:triangle", OLD, "return n * n", "makes the refuted statement true"),
]
"""


def hostile_project(project, mutants: str, grace: str = "3") -> pytest.Pytester:
    pytester = project(mutants=mutants)
    pytester.makepyfile(toy_mutants=HOSTILE_MUTANTS)
    return with_time_limit(pytester, grace, factor="10")


def with_time_limit(pytester: pytest.Pytester, grace: str, factor: str) -> pytest.Pytester:
    """The project's mutants stopped at `factor` x the real test's time + `grace` seconds (its pytest.ini)."""
    ini = pytester.path / "pytest.ini"
    ini.write_text(
        ini.read_text().rstrip("\n") + f"\nclaims_mutant_time_grace = {grace}\nclaims_mutant_time_factor = {factor}\n"
    )
    return pytester


def _ends(record: dict) -> dict[str, tuple[str, str]]:
    return {m["mutant"]: (m["kind"], m["detail"]) for s in record["statements"] for m in s.get("mutants", [])}


@pytest.mark.smoke
def test_a_hanging_an_exiting_and_a_segfaulting_mutant_are_named_and_the_run_reports(project):
    pytester = hostile_project(project, '["off-by-one", "hangs", "exits", "exits-3", "segfaults"]')
    started = time.monotonic()
    result = pytester.runpytest_subprocess(
        "-p", "no:randomly", "-p", "no:xdist", "--claims-no-store", "--claims-mutants", timeout=120
    )
    took = time.monotonic() - started
    assert result.ret == pytest.ExitCode.TESTS_FAILED, result.stdout.str()[-3000:]
    record = claim(verdicts(pytester), "T1")
    ends = _ends(record)
    assert ends["off-by-one"][0] == "guard" or ends["off-by-one"][0] == "refuted", ends
    assert ends["hangs"][0] == "timeout" and "time limit" in ends["hangs"][1] and "+ 3 s" in ends["hangs"][1], ends
    assert ends["exits"] == ("crashed", "the process running the mutant exited with status 0 before its test ended")
    assert ends["exits-3"][0] == "crashed" and "status 3" in ends["exits-3"][1], ends
    assert ends["segfaults"][0] == "crashed" and "SIGSEGV" in ends["segfaults"][1], ends
    assert record["verdict"] == "broken"
    assert "hangs (timeout)" in record["reason"] and "segfaults (crashed)" in record["reason"], record["reason"]
    assert record["power"]["kinds"]["timeout"] == 1 and record["power"]["kinds"]["crashed"] == 3
    assert took < 90  # the hanging mutant was stopped at its limit (10 x well under a second + 3 s)
    assert (pytester.path / "out" / "runs").is_dir()  # the run ended normally: saved, summary printed
    result.stdout.fnmatch_lines(["*claim verdicts*", "*T1*broken*"])


@pytest.mark.smoke
def test_a_bad_time_limit_key_stops_the_run_in_one_line(project):
    pytester = hostile_project(project, '["off-by-one"]', grace="soon")
    result = pytester.runpytest_inprocess(
        "-p", "no:randomly", "-p", "no:xdist", "--claims-no-store", "--claims-mutants"
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "claims_mutant_time_grace must be a non-negative number" in result.stderr.str()
    assert not (pytester.path / "out" / "runs").exists(), "the real tests ran first"  # stopped before: no saved run


@pytest.mark.parametrize("factor, grace", [("1e308", "30"), ("1e307", "1.7e308")])
def test_a_time_limit_past_any_number_of_seconds_is_one_usage_line(factor, grace):
    """Keys that each pass the check but together give no finite limit (a mutant that hangs would never be stopped)
    are one line naming both, as a bad key is; the same keys with a 0 s test give a finite limit."""
    settings = SimpleNamespace(mutant_time_factor=factor, mutant_time_grace=grace)
    with pytest.raises(pytest.UsageError, match="claims_mutant_time_factor .* claims_mutant_time_grace"):
        time_limit(settings, 10.0, 0.0)
    assert time_limit(settings, 0.0, 0.0)[0] < math.inf


def _run_until(pytester: pytest.Pytester, marker: str, *args: str) -> subprocess.Popen:
    process = subprocess.Popen(
        [sys.executable, "-m", "pytest", "-p", "no:randomly", "--claims-no-store", *args],
        cwd=pytester.path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={**os.environ, "PYTHONPATH": os.pathsep.join([str(pytester.path), *sys.path])},
    )
    deadline = time.monotonic() + 120
    while not (pytester.path / marker).exists():
        assert process.poll() is None and time.monotonic() < deadline, "the hanging mutant never started"
        time.sleep(0.1)
    return process


@pytest.mark.smoke
@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["serial", "xdist"])
def test_mutants_cut_off_by_sigterm_make_the_claim_interrupted_naming_them(project, workers):
    pytester = hostile_project(project, '["off-by-one", "hangs"]', grace="600")
    process = _run_until(pytester, "hanging", "--claims-mutants", *workers)
    try:
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=60) != 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    record = claim(verdicts(pytester), "T1")
    assert record["verdict"] == "interrupted", record
    reached = {m["mutant"] for s in record["statements"] for m in s.get("mutants", [])}
    assert any(test.endswith("@hangs") for test in record["not_reached"]), record["not_reached"]
    assert not {t.rpartition("@")[2] for t in record["not_reached"] if "@" in t} & reached, record
    assert "hangs" not in reached
    assert not list(pytester.path.glob("*.lock"))  # nothing of the child left holding a file
    assert json.loads((pytester.path / "out" / "verdicts.json").read_text())["runs"][0]["interrupted"] == "SIGTERM"


SHARED_RESULT_TESTS = """
import time

import pytest

import toy_kernel
from pytest_claims import current_store, statement_holds


def compute(checkpoint):
    time.sleep(3)  # a result worth sharing: computed once by the first test that asks for it
    return [toy_kernel.triangle(n) for n in range(50)]


def values():
    return current_store().get_or_compute("toy/triangles", {"n": 50}, compute, code=[toy_kernel])


@pytest.mark.smoke
def test_computes_the_shared_result():
    assert len(values()) == 50


@pytest.mark.smoke
@pytest.mark.claim("toy/triangle", statement="formula")
def test_formula(evidence):
    wrong = [n for n in range(50) if values()[n] != sum(range(n + 1))]
    evidence.headline(checked=50)
    statement_holds(not wrong, f"triangle differs from the sum at {wrong[:5]}")


@pytest.mark.smoke
@pytest.mark.claim("toy/triangle", statement="squares")
def test_squares():
    statement_holds(toy_kernel.triangle(3) == 9, "triangle(3) is not 9")
"""


@pytest.mark.smoke
@pytest.mark.parametrize("source", ["memory", "store"])
def test_a_mutant_gets_time_to_recompute_what_its_test_read_ready_made(project, source):
    """The formula's real test reads a 3-second result that another test computed (or a stored entry): it takes
    milliseconds, but its mutant must recompute that result under the mutant's key. With factor 1 and 1.5 s of grace
    a limit from the test's own time alone (1.5 s) stops the mutant; counting the result's 3 s it is killed."""
    pytester = project(mutants='["off-by-one"]', refuted_mutants="[]", triangle_tests=SHARED_RESULT_TESTS)
    with_time_limit(pytester, grace="1.5", factor="1")
    store = ["--claims-no-store"] if source == "memory" else []
    if source == "store":  # fill the store first: the mutants run reads every real result from it
        assert pytester.runpytest_subprocess("-p", "no:randomly", "-p", "no:xdist", timeout=120).ret == 0
    result = pytester.runpytest_subprocess(
        "-p", "no:randomly", "-p", "no:xdist", *store, "--claims-mutants", timeout=120
    )
    ends = _ends(claim(verdicts(pytester), "T1"))
    assert ends["off-by-one"][0] in ("refuted", "guard"), (ends, result.stdout.str()[-2000:])


SLOW_FORMULA_TESTS = """
import time

import pytest

import toy_kernel
from pytest_claims import statement_holds


@pytest.mark.smoke
@pytest.mark.claim("toy/triangle", statement="formula")
def test_formula():
    time.sleep(3)  # the statement's own computation: its mutant takes as long
    wrong = [n for n in range(50) if toy_kernel.triangle(n) != sum(range(n + 1))]
    statement_holds(not wrong, f"triangle differs from the sum at {wrong[:5]}")


@pytest.mark.smoke
@pytest.mark.claim("toy/triangle", statement="squares")
def test_squares():
    statement_holds(toy_kernel.triangle(3) == 9, "triangle(3) is not 9")
"""

MUTANTS_ON_THEIR_OWN_WORKER = """
from xdist.scheduler import LoadScopeScheduling


class MutantsApart(LoadScopeScheduling):
    def _split_scope(self, nodeid):
        return "mutants" if "@" in nodeid else "real tests"


def pytest_xdist_make_scheduler(config, log):
    return MutantsApart(config, log)  # two scopes, two workers: one runs every real test, the other every mutant
"""


@pytest.mark.smoke
@pytest.mark.parametrize("committed", [True, False], ids=["committed-durations", "no-durations"])
def test_a_worker_that_ran_no_statement_test_takes_the_limit_from_committed_durations(project, committed):
    """Under -n 2 a scheduler puts every mutant on a worker that ran no statement test, so it knows no real test's
    time. The formula's test takes 3 s, and so does its mutant. With factor 2 and 1.5 s of grace, the grace alone
    stops the mutant (`timeout`); the committed .test_durations' 3.5 s for that test gives it 8.5 s, and it is
    killed."""
    pytester = project(mutants='["off-by-one"]', refuted_mutants="[]", triangle_tests=SLOW_FORMULA_TESTS)
    pytester.makeconftest(MUTANTS_ON_THEIR_OWN_WORKER)
    with_time_limit(pytester, grace="1.5", factor="2")
    if committed:
        durations = {"test_triangle.py::test_formula": 3.5, "test_triangle.py::test_squares": 0.01}
        (pytester.path / ".test_durations").write_text(json.dumps(durations))
    result = pytester.runpytest_subprocess(
        "-p", "no:randomly", "-n", "2", "--claims-no-store", "--claims-mutants", timeout=120
    )
    kind, detail = _ends(claim(verdicts(pytester), "T1"))["off-by-one"]
    if committed:
        assert kind in ("refuted", "guard"), (kind, detail, result.stdout.str()[-2000:])
    else:  # the same run without the file: the limit says how it was derived
        assert kind == "timeout" and "0.0 s (run here or committed" in detail and "= 2 s" in detail, (kind, detail)
