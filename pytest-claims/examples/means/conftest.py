"""The project's line for the report's environment (the pytest_claims_environment hook).

The master seed is the plugin's (`--claims-seed`, ini `claims_seed` in pytest.ini): tests take it as the
`claims_seed` fixture, and the plugin records it in verdicts.json and puts it in every reproduce line itself. A
project with options of its own that change an outcome returns them from pytest_claims_reproduce_args (see the
API reference); this one has none."""

import platform

import pytest


def pytest_claims_environment(config: pytest.Config) -> dict:
    return {"python_implementation": platform.python_implementation()}
