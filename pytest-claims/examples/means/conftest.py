"""The two pytest-claims hooks that describe the project: its environment lines and the arguments that rerun a test.

The master seed is the plugin's (`--seed`, ini `claims_seed` in pytest.ini); tests take it as the `claims_seed`
fixture, and the plugin records it in verdicts.json itself."""

import platform

import pytest


def pytest_claims_environment(config: pytest.Config) -> dict:
    return {"master_seed": config.getoption("seed"), "python_implementation": platform.python_implementation()}


def pytest_claims_reproduce_args(config: pytest.Config) -> list[str]:
    return ["--seed", str(config.getoption("seed"))]
