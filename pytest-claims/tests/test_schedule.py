"""The schedule prediction (python -m pytest_claims.cli.schedule) on known durations and on a real run."""

from __future__ import annotations

import json

import pytest
from toy_project import verdicts

from pytest_claims.merge.command import main as merge_main
from pytest_claims.cli.schedule import longest_first, main


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
    pytester.runpytest_inprocess("-m", "smoke", "--claims-no-store")
    tests = verdicts(pytester)["timings"]["tests"]
    assert set(tests) >= {"test_triangle.py::test_formula", "test_constant.py::test_answer"} and all(
        v >= 0 for v in tests.values()
    )
    assert main([str(pytester.path / "out" / "verdicts.json"), "-n", "1", "2", "--splits", "2"]) == 0
    out = capsys.readouterr().out
    assert "tests," in out and "--splits 2 (least_duration)" in out
    (tmp_path / "bad.json").write_text(json.dumps([1, 2]))
    assert main([str(tmp_path / "bad.json")]) == 2
    assert "neither a verdicts.json nor" in capsys.readouterr().err


@pytest.mark.smoke
def test_work_units_start_each_workers_first_block():
    from pytest_claims.roles.collection import block_starts, units_first

    items = [f"t{i}" for i in range(20)] + ["u0", "u1", "u2"]
    placed = units_first(items, lambda x: x.startswith("u"), 2)
    starts = block_starts(len(placed), 2)
    assert starts == [0, 11] and [placed[s] for s in starts] == ["u0", "u1"] and placed[1] == "u2"
    assert [x for x in placed if x.startswith("t")] == items[:20]  # the others keep their order
    assert units_first(items, lambda x: x.startswith("u"), 1)[:3] == ["u0", "u1", "u2"]
    many = units_first(items, lambda x: x.startswith("u"), 64)  # more workers than tests: still all first blocks
    assert sorted(many) == sorted(items)


@pytest.mark.smoke
def test_durations_are_written_for_pytest_split_and_merged(tmp_path, capsys):
    (tmp_path / "run.json").write_text(json.dumps({"timings": {"tests": {"a": 1.5, "b": 2.0}}}))
    (tmp_path / ".test_durations").write_text(json.dumps({"b": 9.0, "c": 3.0}))
    assert main([str(tmp_path / "run.json"), "--write-durations", str(tmp_path / ".test_durations")]) == 0
    assert json.loads((tmp_path / ".test_durations").read_text()) == {"a": 1.5, "b": 2.0, "c": 3.0}


UNIT_TESTS = """
import pytest

@pytest.mark.smoke
@pytest.mark.work_unit(indivisible="one SGD trajectory of 8000 steps")
def test_long_program():
    pass

@pytest.mark.smoke
@pytest.mark.work_unit
def test_short_program():
    pass
"""


@pytest.mark.smoke
@pytest.mark.parametrize("workers", [0, 2])
def test_a_unit_that_cannot_be_split_says_so_in_the_run_and_the_schedule(project, capsys, workers):
    pytester = project()
    pytester.makepyfile(test_units=UNIT_TESTS)
    run = pytester.runpytest_subprocess if workers else pytester.runpytest_inprocess
    run("-m", "smoke", "--claims-no-store", *(["-n", str(workers)] if workers else []))
    found = verdicts(pytester)["timings"]["indivisible"]
    assert found == {"test_units.py::test_long_program": "one SGD trajectory of 8000 steps"}
    assert main([str(pytester.path / "out" / "verdicts.json"), "-n", "2", "--top", "50"]) == 0
    out = capsys.readouterr().out
    assert "test_units.py::test_long_program  (indivisible: one SGD trajectory of 8000 steps)" in out
    assert "test_short_program  (indivisible" not in out
    if not workers:  # a merge keeps the reasons (pytest-split groups are merged before scheduling)
        # a second group of the same project (other tests: two runs of one selection in one second are one run)
        pytester.runpytest_subprocess(
            "-m", "smoke", "--claims-no-store", "-o", "claims_report_dir=out2", "-k", "long_program"
        )
        merge_main([str(pytester.path / d / "verdicts.json") for d in ("out", "out2")] + ["-o", "merged"])
        assert verdicts(pytester, "merged")["timings"]["indivisible"] == found


@pytest.mark.parametrize(
    "text, needle",
    [
        ('{"a": 1' + "0" * 400 + "}", "'a' is 1000"),  # an int no float holds
        ('{"a": 2, "b": NaN}', "'b' is nan"),
        ('{"a": Infinity}', "'a' is inf"),
        ('{"a": -5}', "'a' is -5"),
        ('{"a": true}', "'a' is True"),
    ],
)
def test_a_duration_that_is_no_number_of_seconds_is_refused_in_one_line(tmp_path, capsys, text, needle):
    (tmp_path / "durations").write_text(text)
    assert main([str(tmp_path / "durations")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and needle in err and "not a finite number of seconds" in err


def test_write_durations_never_replaces_the_run_read_nor_what_is_not_a_durations_file(tmp_path, capsys):
    run = tmp_path / "verdicts.json"
    run.write_text(json.dumps({"claims": [], "timings": {"tests": {"t.py::a": 2.0}}}))
    kept = run.read_bytes()
    assert main([str(run), "--write-durations", str(run)]) == 2
    assert "is the run read" in capsys.readouterr().err and run.read_bytes() == kept
    (tmp_path / "list.json").write_text("[1, 2]")
    (tmp_path / "folder").mkdir()
    for other in ("list.json", "folder", "list.json/durations"):  # the last: no folder can hold it
        assert main([str(run), "--write-durations", str(tmp_path / other)]) == 2, other
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and other in err
    assert (tmp_path / "list.json").read_text() == "[1, 2]" and not list((tmp_path / "folder").iterdir())
    (tmp_path / "old").write_text(json.dumps({"t.py::b": 5.0}))
    assert main([str(run), "--write-durations", str(tmp_path / "old"), "-n", "1"]) == 0
    assert json.loads((tmp_path / "old").read_text()) == {"t.py::a": 2.0, "t.py::b": 5.0}


def test_the_schedule_shows_the_control_characters_a_test_name_holds_escaped(tmp_path, capsys):
    """A durations file from elsewhere naming a test "t\\x1b[2J\\nforged" cannot clear the terminal or forge a line."""
    path = tmp_path / "durations.json"
    path.write_text(json.dumps({"t\x1b[2J\nforged line": 2.0, "u": 1.0}))
    assert main([str(path), "-n", "1"]) == 0
    text = capsys.readouterr().out
    assert "t\\x1b[2J\\x0aforged line" in text and "\x1b" not in text, text
    assert not any(line.startswith("forged") for line in text.splitlines()), text
