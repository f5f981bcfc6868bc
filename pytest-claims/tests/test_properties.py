"""hypothesis, first class (issue 37 item 3): the master seed seeds it (serially and under -n 2 alike), the evidence
fixture works in @given tests without a health-check error, and a property's evidence spans its examples."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from pytest_claims.cli.skeleton import FILES

pytestmark = pytest.mark.smoke

PROPERTY_TESTS = """
import pytest
from hypothesis import given, settings, strategies as st

from pytest_claims import statement_holds

import kernel


@pytest.mark.smoke
@pytest.mark.claim("demo/property", statement="bounded")
@settings(max_examples=60, database=None)
@given(n=st.integers(min_value=0, max_value=10**6))
def test_bounded(evidence, n):
    ratio = kernel.triangle(n) / (n * n + 1)
    evidence.example(ratio, worst="max", n=n)
    statement_holds(ratio <= LIMIT, f"triangle({n}) / (n^2 + 1) = {ratio}")
"""

PROPERTY_CLAIM = """
[[claim]]
id = "demo/property"
key = "D3"
paper = "demo"
where = "Lemma 1"
text = "triangle(n) <= n^2 + 1 for every n"
expected = "verified"
tests = "test_property.py"

[[claim.statement]]
name = "bounded"
text = "triangle(n) / (n^2 + 1) <= 1 over hypothesis's draws of n"
expected = "holds"
mutants_waived = "a toy property"
"""


@pytest.fixture
def project(pytester):
    for name, text in FILES.items():
        (pytester.path / name).write_text(text, encoding="utf-8")
    (pytester.path / "registry.toml").write_text(FILES["registry.toml"] + PROPERTY_CLAIM)

    def write(limit: str = "1.0") -> pytest.Pytester:
        (pytester.path / "test_property.py").write_text(PROPERTY_TESTS.replace("LIMIT", limit))
        return pytester

    return write


def run(where, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "CLAIMS_"))}
    argv = [sys.executable, "-m", "pytest", "-p", "no:randomly", "-p", "no:cacheprovider", *args]
    return subprocess.run(argv, cwd=where, capture_output=True, text=True, env=env, timeout=180)


def bounded(where) -> dict:
    payload = json.loads((where / "reports" / "verdicts.json").read_text())
    return next(s for c in payload["claims"] for s in c["statements"] if s["statement"] == "bounded")


def comparable(where) -> dict:
    """verdicts.json without what differs between any two runs (times, dates, ids, the process layout)."""
    payload = json.loads((where / "reports" / "verdicts.json").read_text())
    for key in ("timings", "report_id", "runs", "environment", "changes"):
        payload.pop(key, None)
    return payload


def test_the_evidence_fixture_in_a_property_spans_its_examples_without_a_health_check_error(project):
    pytester = project()
    done = run(pytester.path, "--claims-seed", "3")
    assert done.returncode == 0, done.stdout + done.stderr
    evidence = bounded(pytester.path)["evidence"]
    assert evidence["examples"] == 60  # every example, not the last one only
    worst = evidence["worst_case"]
    assert worst["worst"] == "max" and 0 < worst["score"] <= 1.0 and set(worst["example"]) == {"n"}
    assert "shrunk_example" not in evidence


def test_a_failing_property_names_its_shrunk_example(project):
    pytester = project(limit="0.5")  # false for n >= 2
    done = run(pytester.path, "--claims-seed", "3")
    assert done.returncode == 1, done.stdout
    found = bounded(pytester.path)
    assert found["outcome"] == "refuted"
    assert found["evidence"]["shrunk_example"] == {"n": 2}  # the smallest n with n (n + 1) / 2 > (n^2 + 1) / 2
    assert found["evidence"]["examples"] > 1
    # hypothesis's explanation listed only the plugin's lines that build the refutation: gone with them
    assert "only run by failing test cases" not in done.stdout and "pytest_claims/" not in done.stdout, done.stdout


def test_an_explanation_keeps_the_projects_lines_and_drops_the_plugins():
    from pytest_claims.roles.properties import PACKAGE, without_own_explanations

    head = ["Explanation:", "    These lines were always and only run by failing test cases:"]
    error = AssertionError("x")
    ours, theirs = f"        {PACKAGE / 'assertions.py'}:21", "        /project/kernel.py:7"
    error.__notes__ = ["Falsifying example: f(n=2)", *head, ours, theirs, "        (and 2 more with ...)", "after"]
    without_own_explanations(error)
    assert error.__notes__ == ["Falsifying example: f(n=2)", *head, theirs, "        (and 2 more with ...)", "after"]
    only_ours = BaseExceptionGroup("two", [AssertionError("y")])
    only_ours.exceptions[0].__notes__ = ["Falsifying example: g()", *head, ours]
    without_own_explanations(only_ours)
    assert only_ours.exceptions[0].__notes__ == ["Falsifying example: g()"]


def test_another_function_scoped_fixture_keeps_hypothesis_health_check(project):
    pytester = project()
    text = (pytester.path / "test_property.py").read_text().replace("(evidence, n)", "(evidence, tmp_path, n)")
    (pytester.path / "test_property.py").write_text(text)
    done = run(pytester.path)
    assert done.returncode == 1 and "FailedHealthCheck" in done.stdout and "function-scoped fixture" in done.stdout


def test_the_same_claims_seed_gives_the_same_verdicts_serially_and_under_xdist(project):
    pytester = project()
    found = []
    for args in ([], ["-n", "2"], []):
        done = run(pytester.path, "--claims-seed", "11", *args)
        assert done.returncode == 0, done.stdout + done.stderr
        found.append(comparable(pytester.path))
    assert found[0] == found[1] == found[2]
    assert run(pytester.path, "--claims-seed", "12").returncode == 0
    assert comparable(pytester.path) != found[0]  # hypothesis's draws follow the master seed: the check can fail
    # a --hypothesis-seed the user gives wins: hypothesis draws as under master seed 11
    assert run(pytester.path, "--claims-seed", "12", "--hypothesis-seed", "11").returncode == 0
    assert bounded(pytester.path)["evidence"] == found[0]["claims"][2]["statements"][0]["evidence"]


SEARCH_CONFTEST = """
from hypothesis import settings

settings.register_profile("fixed", derandomize=True, database=None, deadline=None)
settings.load_profile("fixed")
"""

SEARCH_TESTS = """
import pytest
from hypothesis import given, settings, strategies as st

from pytest_claims import statement_holds


def search():
    drawn = []

    @settings(max_examples=12)
    @given(st.integers(min_value=0, max_value=10**9))
    def check(n):
        drawn.append(n)

    check()
    return drawn


@pytest.mark.smoke
@pytest.mark.claim("demo/property", statement="bounded")
@pytest.mark.parametrize("copy", ["a", "b"])
def test_bounded(evidence, copy):
    evidence.record(drawn=search())
    statement_holds(True, "")


@pytest.mark.smoke
def test_reference(request):
    (request.config.rootpath / "reference.txt").write_text(repr(search()))
"""


def drawn(where) -> dict[str, list[int]]:
    payload = json.loads((where / "reports" / "verdicts.json").read_text())
    found = [s for c in payload["claims"] for s in c["statements"] if s["statement"] == "bounded"]
    return {s["test"].rpartition("[")[2].rstrip("]"): s["evidence"]["drawn"] for s in found}


def test_a_statements_examples_follow_the_master_seed_and_its_test_under_a_derandomized_profile(project):
    """A profile with derandomize=True draws the same examples under every seed; within a statement test the plugin
    draws them from the master seed and the test's node id instead: they differ between two seeds and between two
    tests, and are the same serially and under -n 2. A test that names no statement keeps the profile's draws."""
    pytester = project()
    (pytester.path / "conftest.py").write_text(SEARCH_CONFTEST)
    (pytester.path / "test_property.py").write_text(SEARCH_TESTS)
    found, reference = {}, {}
    for seed, args in [("1", []), ("1", ["-n", "2"]), ("2", [])]:
        done = run(pytester.path, "--claims-seed", seed, *args)
        assert done.returncode == 0, done.stdout + done.stderr
        found[seed, bool(args)] = drawn(pytester.path)
        reference[seed, bool(args)] = (pytester.path / "reference.txt").read_text()
    one, one_n2, two = found["1", False], found["1", True], found["2", False]
    assert len(one["a"]) == 12 and one == one_n2  # one (seed, test): the same examples, serially and under -n 2
    assert one["a"] != two["a"] and one["b"] != two["b"]  # replication seeds vary them
    assert one["a"] != one["b"]  # two tests under one seed draw apart
    assert len(set(reference.values())) == 1  # no statement: the derandomized profile's draws, whatever the seed
