"""The project's own option (a master seed) and the two pytest-claims hooks that report it."""

import pytest


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--seed", type=int, default=1, help="master seed of every random draw (default 1)")


@pytest.fixture
def seed(pytestconfig: pytest.Config) -> int:
    return pytestconfig.getoption("seed")


def pytest_claims_environment(config: pytest.Config) -> dict:
    return {"master_seed": config.getoption("seed")}


def pytest_claims_reproduce_args(config: pytest.Config) -> list[str]:
    return ["--seed", str(config.getoption("seed"))]
