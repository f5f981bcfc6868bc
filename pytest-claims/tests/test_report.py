"""The claim table's key numbers: a parametrised statement's many values shown as a range per tier."""

from __future__ import annotations

import pytest

from pytest_claims.report.html_report import INLINE_VALUES, _key_numbers, evidence_table


def _entry(values: list[tuple[str, str, object]]) -> dict:
    return {"key_numbers": [{"label": "s: x", "values": [{"run": r, "tier": t, "value": v} for r, t, v in values]}]}


@pytest.mark.smoke
def test_few_values_are_listed_inline():
    html = _key_numbers(_entry([("full", "full", 1.5), ("smoke", "smoke", 2.5)]))
    assert "<b>1.5</b> [full]" in html and "<b>2.5</b> [smoke]" in html and "<details>" not in html


@pytest.mark.smoke
def test_many_values_show_each_tiers_range_and_fold_the_rest():
    values = [(f"full-{i}", "full", float(i)) for i in range(INLINE_VALUES + 2)] + [("smoke", "smoke", 0.25)]
    html = _key_numbers(_entry(values))
    summary, folded = html.split("<details>")
    assert f"<b>0</b> .. <b>{INLINE_VALUES + 1}</b> [full, {INLINE_VALUES + 2} runs]" in summary
    assert "<b>0.25</b> [smoke, 1 run]" in summary
    assert all(f"[full-{i}]" in folded for i in range(INLINE_VALUES + 2))


@pytest.mark.smoke
def test_equal_and_non_numeric_values():
    html = _key_numbers(
        _entry(
            [(f"r{i}", "full", 0) for i in range(INLINE_VALUES + 1)]
            + [(f"t{i}", "gpu", "a" if i else "b") for i in range(2)]
        )
    )
    assert f"<b>0</b> (all) [full, {INLINE_VALUES + 1} runs]" in html
    assert "<b>b</b>, ... [gpu, 2 runs]" in html


@pytest.mark.smoke
def test_headline_evidence_is_bold_and_closed():
    """Headline numbers first and in bold; the bold tag closed in its cell (it was left open, so the rest
    of the table turned bold)."""
    html = evidence_table({"headline": ["a"], "b": 2, "a": 1.5})
    assert html.index("<code>a</code>") < html.index("<code>b</code>")
    assert "<td><b>1.5</b></td>" in html and "<td>2</td>" in html and html.count("<b>") == html.count("</b>") == 1


def test_a_key_number_may_name_one_field_of_a_recorded_record():
    """`rate: fixed-point rate.lower` picks the lower bound decide_rate recorded (the newcomer's table showed the
    whole record); a name that exists as written wins; a missing field is no value, not an error."""
    from types import SimpleNamespace

    from pytest_claims.model.verdicts import key_numbers

    evidence = {"fixed-point rate": {"lower": 0.61, "upper": 0.66, "decision": "held"}, "n.b": 3}
    run = SimpleNamespace(statement="rate", test="t.py::test_rate", tier="smoke", evidence=evidence)
    entries = ["rate: fixed-point rate.lower", "rate: n.b", "rate: fixed-point rate.median", "rate: fixed-point rate"]
    found = key_numbers(SimpleNamespace(key_numbers=entries), [run])
    assert [[v["value"] for v in entry["values"]] for entry in found] == [
        [0.61],
        [3],
        [],
        [evidence["fixed-point rate"]],
    ]
