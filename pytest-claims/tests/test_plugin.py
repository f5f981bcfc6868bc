"""The plugin end to end, with pytester, against a throwaway project and registry.

Each test writes a small project (ini, registry, kernel, mutants, statement tests) into a temporary
directory and runs pytest in-process on it.
"""

from __future__ import annotations

import json

import pytest

from pytest_claims.merge.command import comparable, main as merge_main
from toy_project import claim, kernel, triangle_tests, verdicts


@pytest.mark.smoke
def test_verdicts_evidence_and_refutation_message(project):
    pytester = project()
    result = pytester.runpytest_inprocess("-m", "smoke", "--html=out/report.html")
    result.assert_outcomes(passed=3, xfailed=1)
    payload = verdicts(pytester)
    assert payload["schema_version"] == 5
    assert [claim(payload, k)["verdict"] for k in ("T1", "T2", "T3")] == ["verified", "verified", "not exercised"]
    squares = next(s for s in claim(payload, "T1")["statements"] if s["statement"] == "squares")
    assert squares["outcome"] == "refuted" and "triangle(3) = 6, not 9" in squares["reason"]
    assert claim(payload, "T1")["key_numbers"] == [
        {"label": "formula: checked", "values": [{"run": "test_formula", "tier": "smoke", "value": 50}]}
    ]
    assert claim(payload, "T1")["figure"]["path"].startswith("figures/")
    assert claim(payload, "T2")["statements"][0]["tier"] == "any"  # scale-free
    assert payload["reference_tests"] == [{"test": "test_constant.py::test_reference", "outcome": "held"}]
    page = (pytester.path / "out" / "report.html").read_text()
    assert "toy/triangle" in page and "killed" not in page.split("Run")[0]
    result.stdout.fnmatch_lines(["*T1  verified*", "*T3  not exercised*"])


@pytest.mark.smoke
@pytest.mark.parametrize(
    "body, exit_code, outcome",
    [
        ("statement_holds(True, 'held')", 1, "held"),
        ("raise RuntimeError('kernel crashed')", 1, "error"),
        ("assert False, 'plain assert'", 1, "failed"),
    ],
)
def test_refuted_statement_is_satisfied_only_by_a_recorded_refutation(project, body, exit_code, outcome):
    pytester = project(triangle_tests=triangle_tests(squares_body=body))
    result = pytester.runpytest_inprocess("-m", "smoke")
    assert result.ret == exit_code
    t1 = claim(verdicts(pytester), "T1")
    assert next(s for s in t1["statements"] if s["statement"] == "squares")["outcome"] == outcome
    assert t1["verdict"] == "broken"


@pytest.mark.smoke
@pytest.mark.parametrize("workers", [[], ["-n", "2"]])
def test_unknown_claim_and_missing_scale_marker_fail_collection(project, workers):
    """The same lines and exit status serially and under -n 2 (where the check runs on the workers)."""
    pytester = project(
        constant_tests="import pytest\n\n@pytest.mark.claim('toy/nothing', statement='x')\ndef test_x():\n    pass\n"
    )
    run = pytester.runpytest_subprocess if workers else pytester.runpytest_inprocess
    result = run("-m", "smoke", *workers)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: claim registry check failed:", "*needs exactly one scale marker*"])
    assert "INTERNALERROR" not in result.stdout.str() + result.stderr.str()
    # No test ran: no verdict table of "not run" claims before the error, and no verdicts.json written.
    assert "claim verdicts" not in result.stdout.str() and not (pytester.path / "out" / "verdicts.json").exists()


@pytest.mark.smoke
@pytest.mark.parametrize("workers", [[], ["-n", "2"]])
def test_collection_error_breaks_the_claims_of_its_module_and_the_report_is_written(project, workers):
    """The same verdicts serially and under -n 2: the other modules run either way."""
    pytester = project(constant_tests="def broken(:\n    pass\n")
    run = pytester.runpytest_subprocess if workers else pytester.runpytest_inprocess  # workers import the toy modules
    result = run("-m", "smoke", "--html=out/report.html", *workers)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    assert "INTERNALERROR" not in result.stdout.str() + result.stderr.str()
    payload = verdicts(pytester)
    t2 = claim(payload, "T2")
    assert t2["verdict"] == "broken" and "collection error in test_constant.py" in t2["reason"]
    assert claim(payload, "T1")["verdict"] == "verified", claim(payload, "T1")["reason"]
    assert (pytester.path / "out" / "report.html").is_file()


@pytest.mark.smoke
def test_a_subset_says_not_selected(project):
    pytester = project()
    pytester.runpytest_inprocess("-m", "smoke", "-k", "formula")
    payload = verdicts(pytester)
    assert claim(payload, "T2")["verdict"] == "not selected"
    assert claim(payload, "T3")["verdict"] == "not exercised"
    assert claim(payload, "T1")["verdict"] == "reduced scale"  # squares did not run
    pytester.runpytest_inprocess("-m", "smoke", "test_triangle.py")  # the other module not even collected
    assert claim(verdicts(pytester), "T2")["verdict"] == "not selected"


@pytest.mark.smoke
def test_under_xdist_a_collected_claim_counts_as_selected_before_its_worker_reports(project):
    """A run interrupted before its workers report back (their workeroutput is lost) must still call a
    collected claim `not run`, not `not selected`: the controller takes it from the collection ids."""
    from types import SimpleNamespace

    from pytest_claims.roles.distributed import XdistHooks
    from pytest_claims.roles.state import state_of

    config = project().parseconfigure("-m", "smoke")
    XdistHooks(state_of(config)).pytest_xdist_node_collection_finished(
        SimpleNamespace(config=config), ["test_triangle.py::test_formula[smoke]"]
    )
    assert state_of(config).collection.selected == {"toy/triangle"}


@pytest.mark.smoke
def test_scale_free_statements_run_in_every_tier(project):
    pytester = project()
    result = pytester.runpytest_inprocess("-m", "full")
    result.assert_outcomes(passed=1, deselected=3)
    assert claim(verdicts(pytester), "T2")["verdict"] == "verified"


@pytest.mark.smoke
def test_store_fresh_then_warm_gives_the_same_verdicts(project):
    pytester = project()
    pytester.runpytest_inprocess("-m", "smoke", "--claims-store-dir", "store").assert_outcomes(passed=3, xfailed=1)
    fresh = verdicts(pytester)
    result = pytester.runpytest_inprocess("-m", "smoke", "--claims-store-dir", "store")
    warm = verdicts(pytester)
    assert comparable(fresh) == comparable(warm)
    statuses = lambda payload: [e["status"] for e in payload["timings"]["store"]["test_triangle.py::test_formula"]]  # noqa: E731
    assert statuses(fresh) == ["computed"] and statuses(warm) == ["from store"]
    result.stdout.fnmatch_lines(["*1 results read from it*"])
    pytester.runpytest_inprocess("-m", "smoke", "--claims-no-store")
    assert statuses(verdicts(pytester)) == ["computed"] and verdicts(pytester)["runs"][0]["store"].startswith("off")


@pytest.mark.smoke
def test_a_changed_kernel_never_reads_an_old_value(project):
    pytester = project()
    pytester.runpytest_inprocess("-m", "smoke", "--claims-store-dir", "store")
    pytester.makepyfile(toy_kernel=kernel(triangle="n * (n + 1) // 2 + (n == 7)"))
    result = pytester.runpytest_inprocess("-m", "smoke", "--claims-store-dir", "store", "-p", "no:cacheprovider")
    assert result.ret == 1
    assert claim(verdicts(pytester), "T1")["verdict"] == "broken"


RESUMABLE = """
import os
import pytest
from pytest_claims import current_store, statement_holds


def compute(checkpoint):
    state = checkpoint.load() or {"step": 0, "total": 0}
    for step in range(state["step"] + 1, 101):
        state = {"step": step, "total": state["total"] + step}
        if checkpoint.due(step):
            checkpoint.save(state)
        if step == 60 and os.environ.get("TOY_INTERRUPT") == "1":
            raise KeyboardInterrupt
    return state["total"]


@pytest.mark.smoke
@pytest.mark.claim("toy/triangle", statement="formula")
def test_formula(evidence):
    total = current_store().get_or_compute("toy/long-sum", {"to": 100}, compute, checkpoint_every=25)
    evidence.headline(checked=100)
    statement_holds(total == 5050, f"total {total}")
"""


@pytest.mark.smoke
def test_an_interrupted_run_resumes_from_its_checkpoint(project, monkeypatch):
    pytester = project(triangle_tests=RESUMABLE)
    monkeypatch.setenv("TOY_INTERRUPT", "1")
    result = pytester.runpytest_inprocess(
        "-m", "smoke", "--claims-store-dir", "store", "-k", "formula", no_reraise_ctrlc=True
    )
    assert result.ret == pytest.ExitCode.INTERRUPTED
    monkeypatch.setenv("TOY_INTERRUPT", "0")
    pytester.runpytest_inprocess("-m", "smoke", "--claims-store-dir", "store", "-k", "formula").assert_outcomes(
        passed=1, deselected=2
    )
    events = verdicts(pytester)["timings"]["store"]["test_triangle.py::test_formula"]
    assert events[0]["status"] == "resumed" and events[0]["resumed_from_step"] == 50


@pytest.mark.smoke
def test_mutants_are_killed_and_a_survivor_breaks_the_claim(project):
    pytester = project()
    pytester.runpytest_inprocess("-m", "smoke", "--claims-mutants").assert_outcomes(passed=3, xfailed=1)
    t1 = claim(verdicts(pytester), "T1")
    assert t1["power"]["killed"] == 3 and t1["power"]["of"] == 3 and t1["verdict"] == "verified"
    assert t1["power"]["statements"]["squares"]["killed"] == 1  # the refutation disappears under it: strict xfail fails
    # the real run after the mutants is untouched by them (its stored value is the true one)
    assert next(s for s in t1["statements"] if s["statement"] == "formula")["outcome"] == "held"
    pytester = project(mutants='["off-by-one", "harmless"]', refuted_mutants='["wrong-sign"]')
    result = pytester.runpytest_inprocess("-m", "smoke", "--claims-mutants")
    assert result.ret == 1
    t1 = claim(verdicts(pytester), "T1")
    assert t1["verdict"] == "broken" and "formula: harmless" in t1["reason"]
    assert t1["power"]["statements"]["squares"]["survivors"] == ["wrong-sign"]  # triangle(3) = 3, still not 9


@pytest.mark.smoke
def test_an_unknown_or_stale_mutant_is_a_usage_error(project):
    pytester = project(mutants='["no-such-mutant"]')
    result = pytester.runpytest_inprocess("-m", "smoke")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*does not define*no-such-mutant*"])
    pytester = project()
    pytester.makepyfile(toy_kernel=kernel(triangle="(n * n + n) // 2"))
    result = pytester.runpytest_inprocess("-m", "smoke", "--claims-mutants")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*no longer apply*", "*mutant 'off-by-one'*occurs 0 times*"])


@pytest.mark.smoke
def test_what_changed_since_a_previous_run(project):
    pytester = project()
    pytester.runpytest_inprocess("-m", "smoke", "--claims-no-store")
    (pytester.path / "previous.json").write_text((pytester.path / "out" / "verdicts.json").read_text())
    pytester.makepyfile(toy_kernel=kernel(answer="41"))
    result = pytester.runpytest_inprocess(
        "-m", "smoke", "--claims-no-store", "--claims-previous-verdicts", "previous.json", "--html=out/report.html"
    )
    found = verdicts(pytester)["changes"]
    assert found["claims"] == [{"id": "toy/constant", "key": "T2", "before": "verified", "after": "broken"}]
    assert [(s["before"], s["after"]) for s in found["statements"]] == [("held", "refuted")]
    result.stdout.fnmatch_lines(["*changed since the previous run*", "*T2  verified -> broken*"])
    assert "Changed since the previous run" in (pytester.path / "out" / "report.html").read_text()


ALLCLOSE = """
import pytest
from pytest_claims import statement_allclose


@pytest.mark.smoke
@pytest.mark.claim("toy/constant", statement="answer")
def test_answer(evidence):
    statement_allclose([1.0, 2.0, 3.0 + 1e-6], [1.0, 2.0, 3.0], rtol=1e-9, what="closeness")
"""


@pytest.mark.smoke
def test_statement_allclose_records_the_worst_error_and_prints_how_to_reproduce(project):
    pytester = project(constant_tests=ALLCLOSE)
    pytester.runpytest_inprocess("-m", "smoke", "-k", "answer")
    run = claim(verdicts(pytester), "T2")["statements"][0]
    assert run["outcome"] == "refuted" and claim(verdicts(pytester), "T2")["verdict"] == "broken"
    assert run["evidence"]["closeness"]["worst_at"] == 2 and run["evidence"]["closeness"]["outside_tolerance"] == 1
    assert "reproduce: pytest test_constant.py::test_answer" in run["reason"]


@pytest.mark.smoke
def test_works_without_pytest_html(project):
    pytester = project()
    pytester.runpytest_inprocess("-m", "smoke", "-p", "no:html").assert_outcomes(passed=3, xfailed=1)
    assert claim(verdicts(pytester), "T1")["verdict"] == "verified"


@pytest.mark.smoke
def test_an_inactive_plugin_without_a_registry(pytester):
    pytester.makepyfile(test_plain="def test_plain():\n    assert True\n")
    pytester.runpytest_inprocess().assert_outcomes(passed=1)
    assert not (pytester.path / "reports").exists()
    # its options without a registry: a clear error, not a silently inactive plugin
    result = pytester.runpytest_inprocess("--claims-previous-verdicts", "elsewhere.json")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--claims-previous-verdicts given but no claims_registry*--option=PATH*"])


@pytest.mark.smoke
def test_split_shards_merge_into_the_unsharded_verdicts(project, capsys):
    pytester = project()
    pytester.runpytest_inprocess("-m", "smoke", "--claims-no-store")
    whole = verdicts(pytester)
    paths = []
    for group in (1, 2):
        pytester.runpytest_inprocess(
            "-m",
            "smoke",
            "--claims-no-store",
            "--splits",
            "2",
            "--group",
            str(group),
            "-o",
            f"claims_report_dir=shard{group}",
        )
        paths.append(str(pytester.path / f"shard{group}" / "verdicts.json"))
    assert all(len(json.loads(open(p).read())["runs"][0]["tests"]) < 3 for p in paths)  # each shard ran a part
    assert merge_main([*paths, "-o", str(pytester.path / "merged")]) == 0
    merged = verdicts(pytester, "merged")
    assert comparable(merged) == comparable(whole)
    assert len(merged["runs"]) == 2 and (pytester.path / "merged" / "verdict.html").is_file()


@pytest.mark.smoke
def test_merge_conflicts_break_the_claim_and_seeds_must_agree(project, tmp_path):
    pytester = project()
    pytester.runpytest_inprocess("-m", "smoke", "--claims-no-store")
    good = verdicts(pytester)
    bad = json.loads(json.dumps(good))
    bad["runs"][0]["host"] = "another machine"  # another run, not this one given twice
    bad["runs"][0]["run"] = "another machine's run"
    run = next(s for s in claim(bad, "T2")["statements"])
    run["outcome"] = "failed"
    (tmp_path / "a.json").write_text(json.dumps(good))
    (tmp_path / "b.json").write_text(json.dumps(bad))
    assert merge_main([str(tmp_path / "a.json"), str(tmp_path / "b.json"), "-o", str(tmp_path / "m")]) == 1
    t2 = claim(json.loads((tmp_path / "m" / "verdicts.json").read_text()), "T2")
    assert t2["verdict"] == "broken" and "conflicting outcomes" in t2["reason"]
    bad["seed"] = 1  # another master seed: a replication set, whose differing claim is broken
    (tmp_path / "c.json").write_text(json.dumps(bad))
    assert merge_main([str(tmp_path / "a.json"), str(tmp_path / "c.json"), "-o", str(tmp_path / "n")]) == 1
    assert "replication" in json.loads((tmp_path / "n" / "verdicts.json").read_text())


@pytest.mark.smoke
def test_merge_refuses_a_run_given_twice_and_malformed_files_in_one_line(project, tmp_path, capsys):
    pytester = project()
    pytester.runpytest_inprocess("-m", "smoke", "--claims-no-store")
    good = pytester.path / "out" / "verdicts.json"
    (tmp_path / "copy.json").write_text(good.read_text())
    (tmp_path / "list.json").write_text("[]")
    (tmp_path / "noclaims.json").write_text(json.dumps({k: v for k, v in verdicts(pytester).items() if k != "claims"}))
    (tmp_path / "half.json").write_text(good.read_text()[:200])
    cases = {
        (str(good), str(good)): "the same run as",
        (str(good), str(tmp_path / "copy.json")): "the same run as",
        (str(tmp_path / "list.json"),): "a JSON list, not an object",
        (str(tmp_path / "noclaims.json"),): "lacks claims",
        (str(tmp_path / "half.json"),): "not a readable verdicts.json",
    }
    for inputs, message in cases.items():
        assert merge_main([*inputs, "-o", str(tmp_path / "m")]) == 2
        err = capsys.readouterr().err.strip()
        assert message in err and len(err.splitlines()) == 1 and "Traceback" not in err, (inputs, err)


@pytest.mark.smoke
def test_merge_refuses_an_oversized_file_unread(project, tmp_path, capsys, monkeypatch):
    from pytest_claims.model import verdicts_json

    pytester = project()
    pytester.runpytest_inprocess("-m", "smoke", "--claims-no-store")
    good = pytester.path / "out" / "verdicts.json"
    monkeypatch.setattr(verdicts_json, "MAX_VERDICTS_BYTES", good.stat().st_size - 1)
    assert merge_main([str(good), "-o", str(tmp_path / "m")]) == 2
    err = capsys.readouterr().err.strip()
    assert "above the limit for a verdicts.json" in err and len(err.splitlines()) == 1, err


@pytest.mark.smoke
def test_two_runs_in_one_second_are_two_runs_to_merge(project, tmp_path):
    """Host, date (to the second), commit, tier, tests and seed can all agree for two runs; their report ids do not,
    so merging them is not refused as one run given twice (CI saw this happen on 2026-12-04)."""
    pytester = project()
    for directory in ("first", "second"):
        pytester.runpytest_inprocess("-m", "smoke", "--claims-no-store", "-o", f"claims_report_dir={directory}")
    first, second = (json.loads((pytester.path / d / "verdicts.json").read_text()) for d in ("first", "second"))
    second["runs"][0]["date"] = first["runs"][0]["date"]  # as if both had started in the same second
    assert first["runs"][0]["run"] != second["runs"][0]["run"]
    (tmp_path / "a.json").write_text(json.dumps(first))
    (tmp_path / "b.json").write_text(json.dumps(second))
    assert merge_main([str(tmp_path / "a.json"), str(tmp_path / "b.json"), "-o", str(tmp_path / "m")]) == 0
    assert len(json.loads((tmp_path / "m" / "verdicts.json").read_text())["runs"]) == 2
