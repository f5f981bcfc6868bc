"""The schedule prediction (python -m pytest_claims.schedule) on known durations and on a real run."""
from __future__ import annotations

import json

import pytest
from test_plugin import project, verdicts  # noqa: F401 (project: the fixture)

from pytest_claims.schedule import longest_first, main


@pytest.mark.smoke
def test_longest_first_on_known_durations():
    durations = {"a": 10.0, "b": 6.0, "c": 4.0, "d": 4.0, "e": 2.0}  # 26 s in all
    two = longest_first(durations, 2)
    assert two["wall"] == 14.0 and two["ideal"] == 13.0 and two["efficiency"] == pytest.approx(26 / 28)
    three = longest_first(durations, 3)
    assert three["wall"] == 10.0 and three["ideal"] == 10.0  # bounded by the longest test
    many = longest_first(durations, 64)
    assert many["wall"] == 10.0 and many["efficiency"] == pytest.approx(26 / 640) and many["bounding"] == ["a"]


@pytest.mark.smoke
def test_a_run_records_its_durations_and_the_tool_reads_them(project, capsys, tmp_path):
    pytester = project()
    pytester.runpytest_inprocess("-m", "smoke", "--no-store")
    tests = verdicts(pytester)["timings"]["tests"]
    assert set(tests) >= {"test_triangle.py::test_formula", "test_constant.py::test_answer"} and all(v >= 0 for v in tests.values())
    assert main([str(pytester.path / "out" / "verdicts.json"), "-n", "1", "2", "--splits", "2"]) == 0
    out = capsys.readouterr().out
    assert "tests," in out and "--splits 2 (least_duration)" in out
    (tmp_path / "bad.json").write_text(json.dumps([1, 2]))
    assert main([str(tmp_path / "bad.json")]) == 2
    assert "neither a verdicts.json nor" in capsys.readouterr().err
