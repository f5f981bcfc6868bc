"""Each xdist worker's BLAS/OpenMP/torch threads: its share of the cores by default, reaching the worker's pools
whether NumPy and torch load after the plugin (the environment) or before it (threadpoolctl, torch.set_num_threads),
printed once, and off on request."""

from __future__ import annotations

import json
import os
from types import SimpleNamespace

import pytest

from pytest_claims.roles import threads
from pytest_claims.cli.skeleton import FILES

pytestmark = pytest.mark.smoke

PROBE = """
import json, os, sys

import pytest


@pytest.mark.smoke
@pytest.mark.parametrize("n", range(4))
def test_probe(n):
    import numpy
    from threadpoolctl import threadpool_info

    seen = {"blas": sorted({p["num_threads"] for p in threadpool_info() if p["user_api"] == "blas"})}
    if "torch" in sys.modules:
        seen["torch"] = sys.modules["torch"].get_num_threads()
    with open(f"seen-{os.environ.get('PYTEST_XDIST_WORKER', 'serial')}.json", "w") as out:
        json.dump(seen, out)
"""


def project(pytester: pytest.Pytester) -> None:
    for name, text in FILES.items():
        (pytester.path / name).write_text(text, encoding="utf-8")
    pytester.makepyfile(test_probe=PROBE, early_imports="import numpy\nimport torch\n")


def seen(pytester: pytest.Pytester) -> list[dict]:
    return [json.loads(p.read_text()) for p in sorted(pytester.path.glob("seen-gw*.json"))]


@pytest.fixture
def clean_environment(monkeypatch):
    # PYTEST_XDIST_WORKER too: under an outer -n the inner serial run would inherit its name and write another file
    for name in (*threads.VARIABLES, threads.CHOSEN_VARIABLE, "PYTEST_XDIST_WORKER"):
        monkeypatch.delenv(name, raising=False)


def test_the_share_is_cores_over_workers_and_at_least_one():
    assert threads.share(2, available=8) == 4 and threads.share(3, available=8) == 2 and threads.share(4, 2) == 1


@pytest.mark.skipif(threads.cores() < 2, reason="one core: every share is 1, limited or not")
@pytest.mark.parametrize("early", [False, True], ids=["numpy-after-the-plugin", "numpy-and-torch-before"])
def test_each_worker_gets_its_share_of_the_cores(pytester, clean_environment, early):
    project(pytester)
    pytester.syspathinsert()
    extra = ["-p", "early_imports"] if early else []
    result = pytester.runpytest_subprocess("-n", "2", "-p", "no:randomly", *extra)
    assert result.ret == 0, result.stdout.str()
    share = threads.share(2)
    result.stdout.fnmatch_lines([f"claims: each of 2 xdist workers limits BLAS/OpenMP/torch to {share} thread(s)*"])
    found = seen(pytester)
    assert len(found) == 2, found  # both workers ran a probe
    for worker in found:
        assert worker["blas"] == [share], found
        if early:
            assert worker["torch"] == share, found


@pytest.mark.skipif(threads.cores() < 2, reason="one core: every share is 1, limited or not")
@pytest.mark.parametrize("off", [["--claims-no-thread-limit"], ["-o", "claims_thread_limit=false"]])
def test_the_limit_can_be_turned_off(pytester, clean_environment, off):
    project(pytester)
    result = pytester.runpytest_subprocess("-n", "2", "-p", "no:randomly", *off)
    assert result.ret == 0, result.stdout.str()
    result.stdout.fnmatch_lines(["claims: worker threads left as they are*"])
    assert all(max(worker["blas"]) > threads.share(2) for worker in seen(pytester)), seen(pytester)


def test_a_thread_count_the_user_set_is_left_alone(pytester, clean_environment, monkeypatch):
    project(pytester)
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", "1")
    result = pytester.runpytest_subprocess("-n", "2", "-p", "no:randomly")
    assert result.ret == 0, result.stdout.str()
    result.stdout.fnmatch_lines(["claims: worker threads left as set in the environment (OPENBLAS_NUM_THREADS)"])


def test_only_a_worker_of_a_marked_controller_counts_as_a_worker(monkeypatch):
    """xdist's PYTEST_XDIST_WORKER is inherited by any process a worker starts (a pytest run inside a test): without
    the controller's mark naming this process's parent, such a run must not limit itself as a worker would."""
    monkeypatch.setenv("PYTEST_XDIST_WORKER", "gw0")
    monkeypatch.setenv("PYTEST_XDIST_WORKER_COUNT", "2")
    monkeypatch.delenv(threads.CONTROLLER_VARIABLE, raising=False)
    assert threads.in_worker() == 0
    monkeypatch.setenv(threads.CONTROLLER_VARIABLE, str(os.getpid()))  # this process, not its parent
    assert threads.in_worker() == 0
    monkeypatch.setenv(threads.CONTROLLER_VARIABLE, str(os.getppid()))
    assert threads.in_worker() == 2


def serial_seen(pytester: pytest.Pytester) -> dict:
    return json.loads((pytester.path / "seen-serial.json").read_text())


def test_the_serial_limit_applies_only_without_workers_the_users_variable_or_the_limit_off(monkeypatch):
    """Moved from the suite's own serial_threads.py: a run without workers, nobody's thread variable, the limit on."""

    def config(numprocesses=None, worker=False, off=False):
        made = SimpleNamespace(option=SimpleNamespace(numprocesses=numprocesses, claims_no_thread_limit=off))
        made.getini = lambda key: True
        if worker:
            made.workerinput = {}
        return made

    monkeypatch.setattr(threads, "user_set", lambda: [])
    assert threads.serial_applies(config(), 1)
    assert not threads.serial_applies(config(), 0), "0 (the default) leaves the libraries' pools"
    assert not threads.serial_applies(config(numprocesses=2), 1), "the xdist controller: the plugin sets its workers"
    assert not threads.serial_applies(config(worker=True), 1), "a worker: the plugin gave it its share"
    assert not threads.serial_applies(config(off=True), 1), "--claims-no-thread-limit"
    monkeypatch.setattr(threads, "user_set", lambda: ["OPENBLAS_NUM_THREADS"])
    assert not threads.serial_applies(config(), 1), "a thread variable the user set is the user's choice"


@pytest.mark.skipif(threads.cores() < 2, reason="one core: one thread, limited or not")
def test_a_serial_run_limits_blas_and_torch_loaded_by_the_test_modules_once_collected(pytester, clean_environment):
    project(pytester)
    pytester.syspathinsert()
    result = pytester.runpytest_subprocess("-p", "no:randomly", "-p", "early_imports", "-o", "claims_serial_threads=1")
    assert result.ret == 0, result.stdout.str()
    result.stdout.fnmatch_lines(["claims: 1 BLAS/torch thread(s) in this process once collected*"])
    assert serial_seen(pytester) == {"blas": [1], "torch": 1}, serial_seen(pytester)


@pytest.mark.skipif(threads.cores() < 2, reason="one core: one thread, limited or not")
@pytest.mark.parametrize("how", ["unset", "user-variable", "limit-off"])
def test_a_serial_run_keeps_the_libraries_threads_unless_asked(pytester, clean_environment, monkeypatch, how):
    """Unset (other projects: nothing changes), a variable the user set, or the thread limit turned off."""
    project(pytester)
    args = {"unset": [], "user-variable": ["-o", "claims_serial_threads=1"]}.get(
        how, ["-o", "claims_serial_threads=1", "--claims-no-thread-limit"]
    )
    if how == "user-variable":
        monkeypatch.setenv("OPENBLAS_NUM_THREADS", "2")
    result = pytester.runpytest_subprocess("-p", "no:randomly", *args)
    assert result.ret == 0, result.stdout.str()
    result.stdout.no_fnmatch_line("claims: * BLAS/torch thread(s) in this process*")
    assert max(serial_seen(pytester)["blas"]) >= 2, serial_seen(pytester)


def test_a_bad_serial_thread_count_is_one_line_naming_the_key(pytester):
    project(pytester)
    result = pytester.runpytest_subprocess("-p", "no:randomly", "-o", "claims_serial_threads=two")
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str()
    result.stderr.fnmatch_lines(["*ini key claims_serial_threads in *'two'; it takes a whole number of threads*"])
