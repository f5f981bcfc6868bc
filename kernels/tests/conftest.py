"""Fixtures the kernels' reference tests share (each module asks for those it needs)."""

from __future__ import annotations

import pytest

from kernels.backend import torch_cpu_single_thread
from suite_plugin.options import WithoutMasterSeed


@pytest.fixture
def one_torch_thread():
    """One torch thread, as the statement runs use by default (workloads.uot_dro.cpu_threads: on a shared 2-core
    machine two threads made the UOT-DRO reference tests 10-30 times slower)."""
    with torch_cpu_single_thread():
        yield


@pytest.fixture(scope="session")
def options(options):
    """The suite's options without the master seed (suite_plugin.options.WithoutMasterSeed): CI reruns only claims/
    under fresh master seeds, so these tests must not read it."""
    return WithoutMasterSeed(options)
