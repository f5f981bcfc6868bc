"""A run without xdist workers gets one BLAS/torch thread (pytest.ini's claims_serial_threads, applied by the plugin's
pytest_claims.roles.threads); -n and the user's choice not; in a worker the plugin's share of the cores holds."""

from __future__ import annotations

import os

import pytest
from pytest_claims.roles import options, threads

SERIAL_THREADS = 1  # one thread, as each worker of -n 2 on two cores has


@pytest.mark.smoke
def test_the_suite_asks_the_plugin_for_one_thread_in_a_run_without_workers(pytestconfig):
    assert pytestconfig.getini("claims_serial_threads") == str(SERIAL_THREADS)
    assert options.settings_of(pytestconfig).serial_threads == SERIAL_THREADS


def expected_threads(config: pytest.Config) -> int | None:
    """The BLAS threads this run chose: claims_serial_threads serially, the plugin's share of the cores in an xdist
    worker (pytest_claims.roles.threads says what it applied); None where the user's own thread variable rules."""
    if hasattr(config, "workerinput"):
        chosen = os.environ.get(threads.CHOSEN_VARIABLE)
        return int(chosen) if chosen else None
    count = options.settings_of(config).serial_threads
    return count if threads.serial_applies(config, count) else None


@pytest.mark.smoke
def test_this_run_computes_with_the_blas_threads_it_chose(pytestconfig):
    """Serially one thread, in a worker its share: one outcome either way, so that a serial run and -n 2 write the
    same verdicts.json (.ci's n2 step compares them, reference tests included)."""
    expected = expected_threads(pytestconfig)
    if expected is None:
        pytest.skip("a thread variable the user set (or --claims-no-thread-limit) rules this run's threads")
    from threadpoolctl import threadpool_info

    pools = {p["filepath"]: p["num_threads"] for p in threadpool_info() if p["user_api"] == "blas"}
    assert pools and set(pools.values()) == {expected}, pools
