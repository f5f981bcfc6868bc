"""The verdict report read like the paper's table (issue 24, item 6): the claim text in its row, a refuted statement's
message instead of its traceback, side findings in the claim's reason, evidence as named values, statement runs
across the full width, the false-alarm table open, filters and permanent links, the merged report's title and
each seed's key numbers."""

from __future__ import annotations

import html
import json
import re

import matplotlib
import pytest

matplotlib.use("Agg")
import matplotlib.pyplot  # noqa: E402, F401 (imported before the in-process runs, which then keep these modules)
import numpy  # noqa: E402, F401
from pytest_claims.merge.command import main as merge_main
from pytest_claims.report.html_report import evidence_json, evidence_table, false_alarm_html
from toy_project import claim, verdicts


@pytest.fixture
def page(project):
    """One smoke run of the toy project with an HTML report: (its pytester, the page)."""
    pytester = project()
    result = pytester.runpytest_inprocess("-m", "smoke", "--claims-no-store", "--html=out/report.html")
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()[-2000:]
    return pytester, (pytester.path / "out" / "report.html").read_text()


def claim_row(page: str, claim_id: str) -> str:
    """The claim's own row (not the folded row below it)."""
    found = re.search(rf'<tr id="{re.escape(claim_id)}" class="claim"[^>]*>(.*?)</tr>', page, re.S)
    assert found, f"no row for {claim_id}"
    return found.group(1)


def without_folds(fragment: str) -> str:
    return re.sub(r"<details.*?</details>", "", fragment, flags=re.S)


@pytest.mark.smoke
def test_the_claim_text_is_in_its_row_and_a_side_finding_in_its_reason(page):
    _, text = page
    row = claim_row(text, "toy/triangle")
    visible = without_folds(row)
    assert "1 + 2 + ... + n = n (n + 1) / 2" in visible  # not behind a fold
    # `squares` is registered refuted with refutes_claim = false and was refuted: a side finding, named
    assert re.search(r"side findings</b> \(refuted as registered\): squares", visible), visible
    assert "side findings" not in claim_row(text, "toy/constant")


@pytest.mark.smoke
def test_a_refuted_statement_shows_its_refutation_message_not_its_traceback(page):
    pytester, text = page
    squares = next(s for s in claim(verdicts(pytester), "T1")["statements"] if s["statement"] == "squares")
    assert squares["outcome"] == "refuted" and squares["reason"]
    assert f'<p class="refutation"><b>refuted:</b> {html.escape(squares["reason"])}</p>' in text
    blob = json.loads(html.unescape(re.search(r'data-jsonblob="([^"]*)"', text).group(1)))
    logs = [row["log"] for test, rows in blob["tests"].items() if "squares" in test for row in rows]
    assert logs and all(log.startswith(html.escape("refuted: " + squares["reason"])) for log in logs), logs
    assert not any("Traceback" in log or "evidence = " in log for log in logs), logs


@pytest.mark.smoke
def test_statement_runs_span_every_column(page):
    _, text = page
    columns = len(re.findall(r"<th[ >]", re.search(r'<table class="claims">\s*<tr>(.*?)</tr>', text, re.S).group(1)))
    more = re.findall(r'<tr class="more"[^>]*><td colspan="(\d+)">\s*<details>', text)
    assert columns == 5 and more and set(more) == {str(columns)}


@pytest.mark.smoke
def test_evidence_as_named_values_to_four_digits_and_the_json_one_fold_down():
    evidence = {
        "headline": ["smallest_gap"],
        "smallest_gap": 0.5040071872044416,
        "per image check": {"checked": 192, "violations": 0, "actual": 1.3518333435058594e-4, "upper": None},
    }
    table = evidence_table(evidence)
    assert "<td><b>0.5040</b></td>" in table  # four digits, the trailing zero kept: a rounded value
    assert "<code>per image check</code>" in table and "checked = 192; violations = 0; actual = 0.0001352" in table
    assert "0.5040071872044416" not in table and "upper" not in table  # an unset bound is left out
    folded = evidence_json(evidence)
    assert folded.startswith("<details><summary>") and "0.5040071872044416" in folded
    recorded = html.unescape(re.search(r'<pre class="json">(.*)</pre>', folded, re.S).group(1))
    assert json.loads(recorded) == evidence


@pytest.mark.smoke
def test_the_false_alarm_table_is_open():
    table = {"budget": 1e-3, "tiers": {"smoke": {"sum": 1e-4, "statements": [_false_alarm_row()]}}}
    rendered = false_alarm_html(table)
    assert "<details open>" in rendered and "<details>" not in rendered


def _false_alarm_row() -> dict:
    return {"key": "M3", "statement": "rate", "probability": 1e-4, "basis": "the level of the bound"}


@pytest.mark.smoke
def test_filters_and_a_permanent_link_to_every_claim_and_statement_run(page):
    pytester, text = page
    payload = verdicts(pytester)
    verdict_boxes = re.findall(r'<input type="checkbox" checked data-verdict="([^"]+)">', text)
    assert sorted(verdict_boxes) == sorted({c["verdict"] for c in payload["claims"]})
    assert '<select name="paper"><option value="">all</option><option value="toy">' in text
    tiers = re.search(r'<select name="tier"><option value="">all</option>(.*?)</select>', text).group(1)
    assert '<option value="smoke">smoke</option>' in tiers
    for record in payload["claims"]:
        anchor = record["id"]
        assert f'<tr id="{anchor}" class="claim" data-verdict="{record["verdict"]}"' in text
        assert f'href="#{anchor}"' in text
        for run in record["statements"]:
            anchor = re.sub(r"[^A-Za-z0-9_.:/=-]+", "-", run["test"]).strip("-")
            assert f'<details id="{anchor}">' in text and f'href="#{anchor}"' in text
    ids = re.findall(r' id="([^"]+)"', text)
    assert len(ids) == len(set(ids)), "an anchor is not unique"
    assert "<script" in text and "src=" not in re.search(r"<script[^>]*>", text).group(0)  # inline, self-contained


@pytest.mark.smoke
def test_a_replication_set_is_titled_as_the_suite_with_each_seeds_key_numbers(page, tmp_path):
    pytester, _ = page
    first = verdicts(pytester)
    first["suite"] = "Toy paper <checks>"  # the suite's title, as its ini key claims_title gives it
    second = json.loads(json.dumps(first))
    second["seed"] = second["environment"]["master_seed"] = 4242
    second["runs"][0]["run"] = "the run of seed 4242"  # another run, not the first relabelled
    formula = next(s for s in claim(second, "T1")["statements"] if s["statement"] == "formula")
    formula["evidence"]["checked"] = 4321  # a value only the second seed recorded
    paths = []
    for name, payload in [("a", first), ("b", second)]:
        (tmp_path / name).mkdir()
        (tmp_path / name / "verdicts.json").write_text(json.dumps(payload))
        paths.append(str(tmp_path / name / "verdicts.json"))
    merge_main([*paths, "-o", str(tmp_path / "m")])
    merged = (tmp_path / "m" / "verdict.html").read_text()
    title = f"{first['suite']}: replication over seeds {first['seed']}, 4242 (smoke)"
    assert f"<title>{html.escape(title)}</title>" in merged and "Claim verification suite" not in merged
    checked = claim(first, "T1")["key_numbers"][0]["values"][0]["value"]
    cell = re.search(r"formula: checked = (.*?)</small>", claim_row(merged, "toy/triangle"), re.S).group(1)
    assert f"<b>{checked}</b> [seed {first['seed']}]" in cell and "<b>4321</b> [seed 4242]" in cell
    # the environment line is the seeds', not the first seed's alone; the runs table names each run's seed
    assert "<b>master_seed</b> varies between runs (see runs)" in merged
    assert "<tr><th>seed</th><th>tier</th>" in merged and "<tr><td>4242</td>" in merged


@pytest.mark.smoke
def test_the_verdicts_come_first_and_the_run_environment_and_budget_are_folded_below(page):
    _, text = page
    first_claim = text.index('class="claim"')
    folded = text.index('<details class="run-details">')
    assert first_claim < folded, "a claim row must come before the run's details"
    below = text[folded:]
    assert "<h2>Run</h2>" in below and "False-alarm budget" in below
    assert "<h2>Run</h2>" not in text[:folded] and "False-alarm budget" not in text[:folded]
    assert "claimsFoldEnvironment" in text  # pytest-html's environment table is moved into a fold below too


@pytest.mark.smoke
def test_a_run_without_families_has_no_families_section(page, tmp_path):
    """The Families section (tests/test_families.py shows it) is left out of the run's page and the merged page when
    no family was decided: the toy project registers none."""
    pytester, text = page
    merge_main([str(pytester.path / "out" / "verdicts.json"), "-o", str(tmp_path / "m")])
    merged = (tmp_path / "m" / "verdict.html").read_text()
    for shown in (text, merged):
        assert 'class="claim"' in shown and "<h2>Families</h2>" not in shown and '<table class="families">' not in shown


@pytest.mark.smoke
def test_figures_open_full_size_on_a_click(page):
    _, text = page
    assert re.search(r'<img class="thumb" tabindex="0" src="data:image/png;base64,', text)
    assert "img.full{" in text and "claimsZoom" in text


def _statement(outcome: str, mutants: list[dict] = ()) -> dict:
    return {"outcome": outcome, "mutants": list(mutants)}


@pytest.mark.smoke
def test_the_statement_counts_keep_mutants_apart():
    from pytest_claims.report.html_report import _test_counts_html

    killed = {"outcome": "refuted", "killed": True}
    survived = {"outcome": "held", "killed": False}
    payload = {
        "claims": [
            {"statements": [_statement("held", [killed, killed]), _statement("inconclusive")]},
            {"statements": [_statement("skipped"), _statement("held", [survived])]},
        ]
    }
    shown = _test_counts_html(payload)
    assert "2 held, 1 inconclusive, 1 skipped" in shown
    assert "mutants: 2 killed of 3" in shown


@pytest.mark.smoke
def test_a_continued_chain_is_drawn_from_its_ledger_numbers_only():
    from pytest_claims.report.charts import chain_svg

    block = {
        "held_alpha": 0.01,
        "refute_alpha": 1e-4,
        "ledger": [
            {"log_e_for": 0.5, "log_e_against": -0.4},
            {"log_e_for": 2.0, "log_e_against": "<script>alert(1)</script>"},
            {"log_e_for": 4.9, "log_e_against": -2.0},
        ],
    }
    svg = chain_svg("<b>rate</b>", block)
    polylines = re.findall(r'<polyline points="([^"]*)"', svg)
    assert [len(p.split()) for p in polylines] == [3, 2]  # the text value is not a point
    assert "holds at ln E = 4.61" in svg and "refuted at ln E = 9.21" in svg
    assert "<script>" not in svg and "<b>rate</b>" not in svg and "&lt;b&gt;rate&lt;/b&gt;" in svg
    assert chain_svg("rate", {"ledger": []}) == ""


@pytest.mark.smoke
def test_each_papers_bounds_are_drawn_against_their_thresholds():
    from pytest_claims.report.charts import bounds_svg

    def record(key: str, *values: dict) -> dict:
        runs = [{"statement": f"s{i}", "tier": "smoke", "evidence": {"<i>rate</i>": v}} for i, v in enumerate(values)]
        return {"key": key, "statements": runs}

    shown = {"lower": 0.92, "upper": 0.99, "threshold": 0.9, "statement": "rate >= 0.9"}
    refuted = {"lower": 0.1, "upper": 0.3, "threshold": 0.5, "statement": "rate >= 0.5"}
    across = {"lower": 0.01, "upper": 0.2, "threshold": 0.1, "statement": "rate <= 0.1"}
    below = {"lower": 0.0, "upper": 0.07, "threshold": 0.1, "statement": "value <= 0.1"}
    svg = bounds_svg([record("K1", shown, refuted), record("K2", across, below, {"lower": "x", "threshold": 1})])
    colours = re.findall(r'stroke="(#[0-9a-f]{6})" stroke-width="5"', svg)
    assert colours == ["#1a7f37", "#cf222e", "#8c959f", "#1a7f37"]  # the text-valued record is left out
    assert "bounds against thresholds (4)" in svg and "&lt;i&gt;rate&lt;/i&gt;" in svg and "<i>" not in svg
    assert "2 more in the statement folds" in bounds_svg([record("K1", shown, refuted, across, below)], most=2)
    assert bounds_svg([record("K1")]) == ""


@pytest.mark.smoke
def test_a_number_beyond_a_float_in_a_chart_is_left_out_not_an_overflow():
    from pytest_claims.report.charts import bounds_svg, chain_svg

    huge = 10**400  # a JSON integer: Python reads it whole, math.isfinite cannot take it
    fine = {"lower": 0.92, "upper": 0.99, "threshold": 0.9, "statement": "rate >= 0.9"}
    runs = [{"statement": "s", "tier": "smoke", "evidence": {"a": fine, "b": dict(fine, lower=huge)}}]
    assert "bounds against thresholds (1)" in bounds_svg([{"key": "K1", "statements": runs}])
    ledger = [{"log_e_for": 0.5, "log_e_against": -0.4}, {"log_e_for": huge, "log_e_against": -1.0}]
    polylines = re.findall(r'<polyline points="([^"]*)"', chain_svg("rate", {"held_alpha": 0.01, "ledger": ledger}))
    assert [len(p.split()) for p in polylines] == [1, 2]


@pytest.mark.smoke
def test_controls_and_bidirectional_overrides_from_a_file_are_shown_not_acted_on():
    from pytest_claims.report.style import esc

    forged = "T1\u202edeifirev\u2066 <b>\x00\x1b[2J\tline\nnext"
    assert esc(forged) == "T1\\u202edeifirev\\u2066 &lt;b&gt;\\x00\\x1b[2J\tline\nnext"
