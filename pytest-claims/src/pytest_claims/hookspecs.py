"""Hooks a project implements (in its conftest or plugins) to tell pytest-claims about itself."""

from __future__ import annotations

from typing import Any

import pytest


@pytest.hookspec
def pytest_claims_environment(config: pytest.Config) -> dict[str, Any] | None:
    """Project-specific environment lines for the report and verdicts.json (library versions,
    backend, device...). Every implementation's dict is merged; the plugin sets "master_seed" itself, to the
    run's seed (`--seed`, ini `claims_seed`: pytest_claims.roles.seeding), whatever a hook says."""


@pytest.hookspec(firstresult=True)
def pytest_claims_reproduce_args(config: pytest.Config) -> list[str] | None:
    """Command-line arguments that reproduce this run's conditions (e.g. --seed N --backend B),
    printed with a failing tolerance check so that a reader can rerun the test."""


@pytest.hookspec
def pytest_claims_payload(config: pytest.Config, payload: dict[str, Any]) -> None:
    """The payload of verdicts.json, published once on the controller (or the single process) as soon as it is
    built, before anything reports it (as pytest-benchmark publishes its JSON through
    `pytest_benchmark_update_json`): the terminal summary, strict mode, the claim table export, the HTML hooks and
    the report files react to it here (none reads it from the run's state), and a project may read it (to send the
    verdicts elsewhere, say). Changing it is not supported. Not called when no verdict is made (a registry check that
    stopped the run, `--collect-only`)."""
