"""Hooks a project implements (in its conftest or plugins) to tell pytest-claims about itself."""

from __future__ import annotations

from typing import Any

import pytest


@pytest.hookspec
def pytest_claims_environment(config: pytest.Config) -> dict[str, Any]:
    """Project-specific environment lines for the report and verdicts.json (library versions,
    backend, device...). Every implementation's dict is merged; a "master_seed" entry is the run's
    seed (runs with different seeds are not merged)."""


@pytest.hookspec(firstresult=True)
def pytest_claims_reproduce_args(config: pytest.Config) -> list[str]:
    """Command-line arguments that reproduce this run's conditions (e.g. --seed N --backend B),
    printed with a failing tolerance check so that a reader can rerun the test."""
