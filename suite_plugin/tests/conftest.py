"""Fixtures the suite plugin's tests share."""

from __future__ import annotations

import pytest

from suite_plugin.options import WithoutMasterSeed


@pytest.fixture(scope="session")
def options(options):
    """The suite's options without the master seed (suite_plugin.options.WithoutMasterSeed): CI reruns only claims/
    under fresh master seeds, so these tests must not read it."""
    return WithoutMasterSeed(options)
