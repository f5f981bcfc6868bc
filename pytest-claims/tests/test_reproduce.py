"""The reproduce line (issue 37 item 2): it carries the master seed, the tier expression, the mutant and the project's
scale options, and running it reproduces the outcome it was printed with."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys

import pytest

from pytest_claims.cli.skeleton import FILES

pytestmark = pytest.mark.smoke

SEEDED_TEST = """

@pytest.mark.smoke
@pytest.mark.claim("demo/seeded", statement="any-seed")
def test_any_seed(claims_seed):
    statement_none([claims_seed == 2], what="the check under this master seed")


@pytest.mark.smoke
@pytest.mark.claim("demo/seeded", statement="any-seed")
@pytest.mark.parametrize("helper", ["holds", "rate", "test"])
def test_every_helper_names_it(claims_seed, helper):
    if helper == "holds":
        statement_holds(claims_seed != 2, "the check under this master seed")
    elif helper == "rate":
        decide_rate(1000 if claims_seed == 2 else 0, 1000, 0.5, at_least=False, alpha=1e-3, what="the rate")
    else:
        decide_test(0.9, 1e-6 if claims_seed == 2 else 0.9, alpha=1e-3, what="the effect")
"""

SEEDED_CLAIM = """
[[claim]]
id = "demo/seeded"
key = "D3"
paper = "demo"
where = "Eq. (3)"
text = "holds under every master seed (it does not under 2)"
expected = "verified"
tests = "test_triangle.py"

[[claim.statement]]
name = "any-seed"
text = "the test passes under any master seed"
expected = "holds"
mutants_waived = "a toy"
"""


@pytest.fixture
def project(pytester):
    for name, text in FILES.items():
        (pytester.path / name).write_text(text, encoding="utf-8")
    (pytester.path / "registry.toml").write_text(FILES["registry.toml"] + SEEDED_CLAIM)
    tests = FILES["test_triangle.py"].replace(
        "from pytest_claims import statement_holds",
        "from pytest_claims import decide_rate, decide_test, statement_holds, statement_none",
    )
    (pytester.path / "test_triangle.py").write_text(tests + SEEDED_TEST)
    return pytester


def run(where, command: list[str]) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "CLAIMS_"))}
    assert command[0] == "pytest"
    argv = [sys.executable, "-m", "pytest", *command[1:]]
    return subprocess.run(argv, cwd=where, capture_output=True, text=True, env=env, timeout=120)


def statement(where, test_name: str) -> dict:
    payload = json.loads((where / "reports" / "verdicts.json").read_text())
    return next(s for c in payload["claims"] for s in c["statements"] if s["test"].endswith(test_name))


def reproduce_line(text: str) -> list[str]:
    return shlex.split(text.split("reproduce: ", 1)[1])


def test_the_reproduce_line_carries_the_seed_and_the_tier_and_reproduces(project):
    done = run(project.path, ["pytest", "-p", "no:randomly", "--claims-seed", "2", "-m", "smoke and not slow"])
    assert done.returncode == 1, done.stdout
    found = statement(project.path, "test_any_seed")
    assert found["outcome"] == "refuted"
    command = reproduce_line(found["reason"])
    assert command[:2] == ["pytest", "test_triangle.py::test_any_seed"]
    assert "--claims-seed" in command and command[command.index("--claims-seed") + 1] == "2"
    assert command[command.index("-m") + 1] == "smoke and not slow"
    again = run(project.path, command)
    assert again.returncode == 1 and statement(project.path, "test_any_seed")["outcome"] == "refuted"
    # without the seed (as the line used to read) the rerun does not reproduce: the check can fail
    assert run(project.path, [a for a in command if a not in ("--claims-seed", "2")]).returncode == 0


@pytest.mark.parametrize("helper", ["holds", "rate", "test"])
def test_every_helper_that_refutes_ends_its_message_with_the_reproduce_line(project, helper):
    """statement_holds, decide_rate and decide_test (not only the statement_* assertions) name the command."""
    done = run(project.path, ["pytest", "-p", "no:randomly", "--claims-seed", "2", "-k", f"every_helper and {helper}"])
    assert done.returncode == 1, done.stdout
    found = statement(project.path, f"test_every_helper_names_it[{helper}]")
    assert found["outcome"] == "refuted", found
    command = reproduce_line(found["reason"])
    assert command[:2] == ["pytest", f"test_triangle.py::test_every_helper_names_it[{helper}]"], command
    assert command[command.index("--claims-seed") + 1] == "2"
    assert f"reproduce: {shlex.join(command)}" in done.stdout  # the terminal shows it too


def test_a_mutant_runs_reproduce_line_names_the_mutant_and_reruns_it_alone(project):
    done = run(project.path, ["pytest", "-p", "no:randomly", "--claims-mutants", "-k", "formula"])
    assert done.returncode == 0, done.stdout
    mutant = statement(project.path, "test_formula")["mutants"][0]
    assert mutant["mutant"] == "off-by-one" and mutant["killed"]
    command = reproduce_line(mutant["detail"])
    assert "--claims-mutant=off-by-one" in command and "--claims-mutants" in command
    again = run(project.path, command + ["-v"])
    assert "test_formula@off-by-one KILLED" in again.stdout and "wrong-sign" not in again.stdout, again.stdout
    quiet = run(project.path, command).stdout  # without -v too: how the mutant ended and what its test said
    line = "mutant off-by-one of demo/triangle:formula: KILLED: refuted (registered holds): "
    assert line in quiet and "triangle differs" in quiet, quiet


def test_the_projects_own_seed_argument_is_not_doubled(project):
    (project.path / "conftest.py").write_text(
        "def pytest_claims_reproduce_args(config):\n"
        "    return ['--claims-seed', str(config.getoption('claims_seed')), '--size', 'small']\n"
    )
    run(project.path, ["pytest", "-p", "no:randomly", "--claims-seed", "2"])
    command = reproduce_line(statement(project.path, "test_any_seed")["reason"])
    assert command.count("--claims-seed") == 1 and command[-2:] == ["--size", "small"]
