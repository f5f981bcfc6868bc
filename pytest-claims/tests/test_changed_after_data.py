"""A statement whose rule changed after its data is marked: the registry's changed_after_data (read, refused in one
line naming the statement and the field when malformed), carried into verdicts.json and shown beside the
statement's verdict and its claim's in the HTML report (also after a merge, which rebuilds it from verdicts.json);
and the suite's own registry marks erm-accuracy-falls-late with commit 6025f36."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from chains import INI, toy_registry
from pytest_claims.model.registry import RegistryError, load_registry

pytestmark = pytest.mark.smoke

CHANGED = 'changed_after_data = { date = "2026-12-03", commit = "6025f36", why = "the rule <now> has error control" }'


@pytest.mark.parametrize(
    "line, problem",
    [
        ('changed_after_data = "yesterday"', "must be a table"),
        ('changed_after_data = { date = "2026-12-03", commit = "6025f36" }', "exactly date, commit, why"),
        ('changed_after_data = { date = "3 Dec", commit = "6025f36", why = "w" }', "date must be a date YYYY-MM-DD"),
        ('changed_after_data = { date = "2026-13-03", commit = "6025f36", why = "w" }', "date must be a date"),
        ('changed_after_data = { date = "2026-12-03", commit = "HEAD", why = "w" }', "commit must be a commit id"),
        ('changed_after_data = { date = "2026-12-03", commit = "6025f36", why = " " }', "why must say"),
        ('changed_after_data = { date = 2026-12-03, commit = "6025f36", why = "w" }', "must be strings"),
    ],
)
def test_a_malformed_mark_is_refused_in_one_line_naming_the_statement_and_the_field(tmp_path, line, problem):
    (tmp_path / "r.toml").write_text(toy_registry("toy/c", "s", "test_toy.py", line))
    with pytest.raises(RegistryError, match=problem) as caught:
        load_registry(tmp_path / "r.toml", ("smoke", "full"))
    assert "statement toy/c:s field 'changed_after_data'" in str(caught.value) and "\n" not in str(caught.value)


TEST = """
import pytest


@pytest.mark.smoke
@pytest.mark.claim("toy/c", statement="s")
def test_s():
    pass
"""


def test_the_mark_reaches_verdicts_json_and_the_report_beside_both_verdicts_also_after_a_merge(pytester, tmp_path):
    from pytest_claims.merge.command import main as merge_main

    pytester.makefile(".ini", pytest=INI)
    pytester.makefile(".toml", registry=toy_registry("toy/c", "s", "test_toy.py", CHANGED))
    pytester.makepyfile(test_toy=TEST)
    pytester.runpytest_inprocess("-m", "smoke", "-p", "no:randomly", "-p", "no:cacheprovider", "--html=out/v.html")
    payload = json.loads((pytester.path / "out" / "verdicts.json").read_text())
    registered = payload["claims"][0]["registry"]["statements"]["s"]["changed_after_data"]
    assert registered == {"date": "2026-12-03", "commit": "6025f36", "why": "the rule <now> has error control"}
    assert merge_main([str(pytester.path / "out" / "verdicts.json"), "-o", str(tmp_path / "merged")]) == 0
    for page in (pytester.path / "out" / "v.html", tmp_path / "merged" / "verdict.html"):
        text = page.read_text()
        line = "<b>rule changed after its data</b> (s): 2026-12-03, commit <code>6025f36</code>: the rule &lt;now&gt;"
        assert text.count(line) == 2, page  # beside the claim's verdict and in the statement's summary
        assert "the rule <now>" not in text  # escaped


def test_the_suites_registry_marks_the_l6_statements_changed_after_their_data():
    root = Path(__file__).resolve().parents[2]
    registry = load_registry(root / "claims" / "registry.toml", ("smoke", "full", "gpu"))
    marked = {
        (c.id, name): s.changed_after_data
        for c in registry.claims.values()
        for name, s in c.statements.items()
        if s.changed_after_data
    }
    found = {where[1]: (mark["commit"], mark["date"]) for where, mark in marked.items()}
    assert found == {
        "erm-accuracy-falls-late": ("6025f36", "2026-12-03"),  # its rule; then not required (said in its reason)
        "baseline-requires-1e-5": ("6f9c089", "2026-12-05"),  # not required since its continuation decides
        "proposed-lower-objective": ("6f9c089", "2026-12-05"),
    }
