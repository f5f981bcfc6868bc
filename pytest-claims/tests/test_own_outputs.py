"""The plugin's own outputs are inputs next time: the report lock that is a link, a damaged or hostile saved run, a
save that fails half-way, a compare fed malformed files or runs that selected different claims."""

from __future__ import annotations

import errno
import json
import os
from pathlib import Path

import pytest

from pytest_claims.cli import compare
from pytest_claims.report.files import LOCK_FILE, ReportDirectoryBusy, ReportDirectoryLock
from pytest_claims.cli.compare import main as compare_main
from pytest_claims.merge.command import main as merge_main
from pytest_claims.report.history import save_run, saved_runs
from toy_project import claim, verdicts


def _run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest_inprocess("-p", "no:randomly", "-p", "no:xdist", "--claims-no-store", *args)


# ------------------------------------------------------------------------------------------------
# The report lock


@pytest.mark.smoke
def test_a_lock_file_that_is_a_link_is_refused_in_one_line_and_its_target_kept(project, tmp_path):
    pytester = project()
    precious = tmp_path / "precious.txt"
    precious.write_text("a file outside the report directory")
    (pytester.path / "out").mkdir()
    (pytester.path / "out" / LOCK_FILE).symlink_to(precious)
    result = _run(pytester)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    err = [line for line in result.stderr.lines if line.strip()]
    assert len(err) == 1 and "is a symbolic link" in err[0] and str(precious) in err[0], err
    assert "INTERNALERROR" not in result.stdout.str() + result.stderr.str()
    assert precious.read_text() == "a file outside the report directory"


@pytest.mark.smoke
def test_the_report_lock_still_excludes_a_second_holder_and_is_free_after_release(tmp_path):
    first = ReportDirectoryLock(tmp_path, "first")
    first.acquire()
    try:
        with pytest.raises(ReportDirectoryBusy, match="in use by run first"):
            ReportDirectoryLock(tmp_path, "second").acquire()
    finally:
        first.release()
    again = ReportDirectoryLock(tmp_path, "third")
    again.acquire()
    again.release()


@pytest.mark.smoke
def test_a_fifo_as_the_lock_file_is_refused(tmp_path):
    os.mkfifo(tmp_path / LOCK_FILE)
    with pytest.raises(ReportDirectoryBusy, match="not a regular file"):
        ReportDirectoryLock(tmp_path, "x").acquire()


# ------------------------------------------------------------------------------------------------
# Saved runs


@pytest.mark.smoke
@pytest.mark.parametrize("damage", ['{"claims": [{"id": 1}]}', '{"claims": [3]}', "[" * 100000 + "]" * 100000])
def test_a_damaged_saved_run_is_skipped_with_one_line_and_never_stops_a_run(project, damage):
    pytester = project()
    for _ in range(2):
        assert _run(pytester).ret == 0
    (first, _), (second, _) = [(d / "verdicts.json", n) for n, d in saved_runs(pytester.path / "out")]
    second.write_text(damage)
    result = _run(pytester)
    assert result.ret == 0, result.stderr.str()
    assert "--claims-previous-verdicts" not in result.stderr.str()
    assert f"the saved run {second} is damaged and was skipped" in result.stderr.str()
    assert verdicts(pytester)["changes"]["previous"] == json.loads(first.read_text())["runs"][0]["date"]


@pytest.mark.smoke
def test_a_save_that_fails_leaves_nothing_behind(tmp_path, monkeypatch):
    save_run(tmp_path, {"seed": 1, "claims": []})

    def full_disk(*args, **kwargs):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "replace", full_disk)
    with pytest.raises(OSError, match="No space left"):
        save_run(tmp_path, {"seed": 1, "claims": []})
    monkeypatch.undo()
    left = sorted(p.relative_to(tmp_path / "runs").as_posix() for p in (tmp_path / "runs").rglob("*"))
    assert len(left) == 2 and left[0].startswith("0001_") and left[1].endswith("/verdicts.json"), left


@pytest.mark.smoke
def test_a_runs_directory_that_is_a_link_is_neither_read_nor_written(tmp_path):
    outside = tmp_path / "outside"
    save_run(outside, {"seed": 1, "claims": []})
    report = tmp_path / "report"
    report.mkdir()
    (report / "runs").symlink_to(outside / "runs")
    assert saved_runs(report) == []
    with pytest.raises(OSError, match="not followed"):
        save_run(report, {"seed": 2, "claims": []})
    assert len(list((outside / "runs").iterdir())) == 1


@pytest.mark.smoke
def test_a_saved_run_entry_that_is_a_link_is_passed_over(tmp_path):
    outside = save_run(tmp_path / "elsewhere", {"seed": 1, "claims": []}).parent
    (tmp_path / "report" / "runs").mkdir(parents=True)
    (tmp_path / "report" / "runs" / "0005_linked").symlink_to(outside)
    assert saved_runs(tmp_path / "report") == []


@pytest.mark.smoke
def test_a_junk_directory_with_a_long_number_does_not_stop_saving(tmp_path):
    (tmp_path / "runs" / ("9" * 250 + "_junk")).mkdir(parents=True)
    saved = save_run(tmp_path, {"seed": 1, "claims": []})
    assert saved.parent.name.startswith("0001_") and [n for n, _ in saved_runs(tmp_path)] == [1]


# ------------------------------------------------------------------------------------------------
# pytest-claims-compare


def _payload(verdict: str = "verified", **extra) -> dict:
    record = {"id": "p/c", "key": "P1", "verdict": verdict, "statements": [{"test": "t.py::t", "outcome": "held"}]}
    return {"claims": [record], "runs": [{"date": "d"}], "environment": {}, "seed": 1, **extra}


def _compare(capsys, *args: str) -> tuple[int, str]:
    code = compare_main(list(args))
    out = capsys.readouterr()
    return code, out.out + out.err


MALFORMED = {
    "a claim not an object": {"claims": [3]},
    "a claim without key": {"claims": [{"id": "p/c", "verdict": "verified"}]},
    "statements not a list": {"claims": [{"id": "p/c", "key": "P1", "verdict": "verified", "statements": 3}]},
    "runs a string": _payload(runs="yesterday"),
    "environment a list": _payload(environment=["python 3"]),
}


@pytest.mark.smoke
@pytest.mark.parametrize("bad", [*MALFORMED, "a run number in non-ASCII digits", "a superscript digit"])
def test_compare_answers_malformed_input_with_exit_2_and_one_line(tmp_path, capsys, bad):
    good, broken = tmp_path / "good.json", tmp_path / "bad.json"
    good.write_text(json.dumps(_payload()))
    save_run(tmp_path, _payload())
    if bad in MALFORMED:
        broken.write_text(json.dumps(MALFORMED[bad]))
        args = [str(good), str(broken)]
    else:
        args = ["\u0661", "1"] if bad.startswith("a run number") else ["\u00b2", "1"]
    for order in (args, args[::-1]):
        code, text = _compare(capsys, *order, "--report-dir", str(tmp_path))
        assert code == 2 and len(text.strip().splitlines()) == 1 and "Traceback" not in text, text
        assert text.startswith("pytest-claims-compare: "), text


@pytest.mark.smoke
def test_compare_reports_a_claim_only_one_run_selected_with_its_own_exit_code(tmp_path, capsys):
    before, after = tmp_path / "a.json", tmp_path / "b.json"
    before.write_text(json.dumps(_payload("falsified")))
    after.write_text(json.dumps(_payload("not selected")))
    code, text = _compare(capsys, str(before), str(after))
    assert code == compare.EXIT_SELECTION_DIFFERS == 3, text
    assert "only one run selected" in text and "P1  p/c: falsified -> not selected" in text, text
    after.write_text(json.dumps(_payload("broken")))  # a verdict change outranks a selection change
    assert _compare(capsys, str(before), str(after))[0] == 1
    after.write_text(json.dumps(_payload("falsified")))
    assert _compare(capsys, str(before), str(after))[0] == 0


@pytest.mark.smoke
def test_a_run_is_compared_with_the_last_run_of_the_same_selection_else_says_what_was_not_selected(project):
    pytester = project()
    assert _run(pytester).ret == 0  # every claim
    assert _run(pytester, "test_constant.py").ret == 0  # T2 only: T1 was selected before, not now
    changes = verdicts(pytester)["changes"]
    assert {(c["key"], c["before"], c["after"]) for c in changes["selection"]} == {("T1", "verified", "not selected")}
    assert changes["claims"] == []
    result = _run(pytester, "test_constant.py")  # the same selection as the run before: compared with that one
    assert verdicts(pytester)["changes"]["selection"] == []
    result.stdout.fnmatch_lines(["*changed since the previous run*", "nothing"])
    result = _run(pytester)  # every claim again: compared with the first run, of the same selection
    changes = verdicts(pytester)["changes"]
    assert changes["selection"] == [] and claim(verdicts(pytester), "T1")["verdict"] == "verified"
    first = json.loads((saved_runs(pytester.path / "out")[0][1] / "verdicts.json").read_text())
    assert changes["previous"] == first["runs"][0]["date"]


# ------------------------------------------------------------------------------------------------
# The merge's output directory


def _merge(capsys, run: Path, out: Path) -> tuple[int, list[str]]:
    code = merge_main([str(run), "-o", str(out)])
    return code, [line for line in capsys.readouterr().err.splitlines() if line.strip()]


@pytest.fixture
def run_with_figure(project) -> tuple[Path, str]:
    """A toy run's verdicts.json and the figure it names (a file beside it)."""
    pytester = project()
    assert _run(pytester, "-m", "smoke").ret == 0
    figure = next(f["path"] for c in verdicts(pytester)["claims"] for s in c["statements"] for f in s["figures"])
    return pytester.path / "out" / "verdicts.json", figure


@pytest.mark.smoke
@pytest.mark.parametrize("linked", ["the figure", "its folder"])
def test_a_merge_never_writes_a_figure_through_a_link_in_its_output_directory(
    run_with_figure, tmp_path, capsys, linked
):
    run, figure = run_with_figure
    out, outside = tmp_path / "merged", tmp_path / "outside"
    outside.mkdir()
    (outside / "precious.png").write_text("a file outside the merge's directory")
    (out / figure).parent.mkdir(parents=True)
    if linked == "the figure":
        (out / figure).symlink_to(outside / "precious.png")
    else:
        (out / figure).parent.rmdir()
        (out / figure).parent.symlink_to(outside)
    code, err = _merge(capsys, run, out)
    assert (outside / "precious.png").read_text() == "a file outside the merge's directory"
    assert sorted(p.name for p in outside.iterdir()) == ["precious.png"]
    if linked == "the figure":  # the link is replaced by the figure, its target untouched
        assert code == 0 and not (out / figure).is_symlink(), err
    else:
        assert code == 2 and len(err) == 1 and str(out / figure) in err[0], err


@pytest.mark.smoke
@pytest.mark.parametrize("blocked", ["-o is a file", "the figures' folder is a file", "the figure is a folder"])
def test_an_output_directory_the_figures_cannot_be_written_into_is_one_line(run_with_figure, tmp_path, capsys, blocked):
    run, figure = run_with_figure
    out = tmp_path / "merged"
    if blocked == "-o is a file":
        out.write_text("x")
        named = f"-o {out}"
    elif blocked == "the figures' folder is a file":
        out.mkdir()
        (out / figure).parent.write_text("x")
        named = (out / figure).parent
    else:
        (out / figure).mkdir(parents=True)
        named = out / figure
    code, err = _merge(capsys, run, out)
    assert code == 2 and len(err) == 1 and err[0].startswith(f"merge: {named}: "), err
    assert not list(out.rglob("*.tmp"))  # no temporary left behind


@pytest.mark.smoke
@pytest.mark.parametrize("value", [10**400, float("nan"), float("inf")], ids=["10**400", "nan", "inf"])
@pytest.mark.parametrize("field", ["timings.store", "false_alarm.budget"])
def test_a_number_no_float_holds_in_a_merge_input_is_one_line_naming_the_field(
    run_with_figure, tmp_path, capsys, field, value
):
    run, _ = run_with_figure
    payload = json.loads(run.read_text())
    test = payload["claims"][0]["statements"][0]["test"]
    if field == "timings.store":
        payload["timings"]["store"] = {test: [{"name": "x", "status": "computed", "seconds": value, "key": "k"}]}
    else:
        row = {"claim": "toy/triangle", "key": "T1", "statement": "formula", "probability": 0.001, "basis": "b"}
        payload["false_alarm"] = {"budget": value, "tiers": {"smoke": {"sum": 0.001, "statements": [row]}}}
    damaged = tmp_path / "damaged" / "verdicts.json"
    damaged.parent.mkdir()
    damaged.write_text(json.dumps(payload))
    code, err = _merge(capsys, damaged, tmp_path / "merged")
    assert code == 2 and len(err) == 1 and str(damaged) in err[0] and field in err[0], err
    assert not (tmp_path / "merged" / "verdicts.json").exists()


@pytest.mark.smoke
@pytest.mark.parametrize("seed", [float("nan"), {"a": 1}, True, 1.5], ids=["nan", "object", "true", "1.5"])
def test_a_merge_input_whose_seed_is_no_integer_is_one_line_naming_the_field(run_with_figure, tmp_path, capsys, seed):
    run, _ = run_with_figure
    payload = json.loads(run.read_text())
    other = tmp_path / "other" / "verdicts.json"
    other.parent.mkdir()
    other.write_text(json.dumps(dict(payload, seed=seed, runs=[dict(payload["runs"][0], run="another")])))
    code = merge_main([str(run), str(other), "-o", str(tmp_path / "merged")])
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert code == 2 and len(err) == 1 and f"{other}: field seed " in err[0], err


@pytest.mark.smoke
@pytest.mark.parametrize("where", ["environment", "evidence"])
def test_a_nan_in_a_field_the_merge_copies_unread_is_one_line_naming_the_field(
    run_with_figure, tmp_path, capsys, where
):
    run, _ = run_with_figure
    payload = json.loads(run.read_text())
    if where == "environment":
        payload["environment"]["gpu"] = {"memory": [1.0, float("nan")]}
        field = "environment.gpu.memory[1]"
    else:
        payload["claims"][0]["statements"][0]["evidence"]["rate"] = float("inf")
        field = "claims[0].statements[0].evidence.rate"
    damaged = tmp_path / "damaged" / "verdicts.json"
    damaged.parent.mkdir()
    damaged.write_text(json.dumps(payload))
    code, err = _merge(capsys, damaged, tmp_path / "merged")
    assert code == 2 and err == [f"merge: {damaged}: field {field} is NaN or an infinity, which JSON has no number for"]


@pytest.mark.smoke
def test_a_merge_refused_for_a_busy_directory_has_written_nothing_there(run_with_figure, tmp_path, capsys):
    run, figure = run_with_figure
    payload = json.loads(run.read_text())
    figures = payload["claims"][0]["statements"][0]["figures"]
    figures += [{"title": "the pair", "path": "verdict.html"}, {"title": "the pair", "path": "verdicts.json"}]
    run.write_text(json.dumps(payload))
    (run.parent / "verdict.html").write_text("the input's page")
    out = tmp_path / "merged"
    out.mkdir()
    before = {name: f"the previous {name}" for name in ("verdicts.json", "verdict.html")}
    for name, text in before.items():
        (out / name).write_text(text)
    holder = ReportDirectoryLock(out, "another merge")
    holder.acquire()
    try:
        code, err = _merge(capsys, run, out)
    finally:
        holder.release()
    assert code == 2 and len(err) == 1 and "in use by run another merge" in err[0], err
    assert {name: (out / name).read_text() for name in before} == before and not (out / figure).exists()
    code, err = _merge(capsys, run, out)  # free: the figures are copied, but never over the merge's own pair
    assert code == 0 and (out / figure).is_file() and "verdict.html, verdicts.json" in err[-1], err
    assert json.loads((out / "verdicts.json").read_text())["report_id"] in (out / "verdict.html").read_text()
