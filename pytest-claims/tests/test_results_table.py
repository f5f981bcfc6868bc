"""pytest-html's results table tells the truth (issue 37 item 5): a mutant item reads as a mutant run with how it
ended, an inconclusive test as inconclusive with its message (no raw tuple), and the claims keep the registry's order
in the summary tables, the terminal and verdicts.json."""

from __future__ import annotations

import html
import json
import re

import pytest

from pytest_claims.cli.skeleton import FILES

pytestmark = pytest.mark.smoke

RATE_CLAIM = """
[[claim]]
id = "demo/rate"
key = "D3"
paper = "demo"
where = "Table 1"
text = "the method succeeds in at least 90% of runs"
expected = "verified"
tests = "test_rate.py"

[[claim.statement]]
name = "rate"
text = "the success rate over 20 seeded runs is at least 0.9"
expected = "holds"
mutants_waived = "a toy"
"""

RATE_TEST = """
import pytest
from pytest_claims import statement_inconclusive


@pytest.mark.smoke
@pytest.mark.claim("demo/rate", statement="rate")
def test_rate(evidence):
    statement_inconclusive("19 of 20 successes: the threshold lies inside the interval")
"""


def page_tests(page: str) -> dict[str, list[dict]]:
    blob = re.search(r'data-jsonblob="([^"]*)"', page)
    assert blob, "no pytest-html data in the page"
    return json.loads(html.unescape(blob.group(1)))["tests"]


def test_mutant_and_inconclusive_rows_and_the_registry_order(pytester):
    pytest.importorskip("pytest_html")
    for name, text in FILES.items():
        (pytester.path / name).write_text(text, encoding="utf-8")
    # the verdicts would sort D2 (falsified), D3 (inconclusive), D1 (verified): the registry's order is D1 D2 D3
    (pytester.path / "registry.toml").write_text(FILES["registry.toml"] + RATE_CLAIM)
    (pytester.path / "test_rate.py").write_text(RATE_TEST)
    result = pytester.runpytest_subprocess("-p", "no:randomly", "--claims-mutants", "--html=reports/verdict.html")
    assert result.ret == 0, result.stdout.str()
    page = (pytester.path / "reports" / "verdict.html").read_text()
    tests = page_tests(page)
    mutant = tests["test_triangle.py::test_formula@off-by-one"][0]
    assert mutant["result"] == "Passed"  # pytest-html's category, which its filters read, is kept
    assert 'data-claims-result="Mutant killed"' in mutant["resultsTableRow"][0]
    assert "mutant run: off-by-one" in mutant["resultsTableRow"][2]
    assert "mutant KILLED: refuted (registered holds)" in mutant["resultsTableRow"][3]
    assert "under mutant &#x27;off-by-one&#x27;: KILLED: refuted (registered holds)" in mutant["log"]
    assert "reproduce: " not in mutant["log"] or "…" not in mutant["log"]  # whole, not cut mid-command
    inconclusive = tests["test_rate.py::test_rate"][0]
    assert 'data-claims-result="Inconclusive"' in inconclusive["resultsTableRow"][0]
    assert inconclusive["log"].startswith("inconclusive: 19 of 20 successes: the threshold lies inside the interval")
    assert "(&#x27;" not in inconclusive["log"] and "('" not in inconclusive["log"]  # no raw Python tuple
    order = [page.index(f'<tr id="demo/{name}"') for name in ("triangle", "square", "rate")]
    assert order == sorted(order), "the summary's claims are not in the registry's order"
    payload = json.loads((pytester.path / "reports" / "verdicts.json").read_text())
    assert [c["key"] for c in payload["claims"]] == ["D1", "D2", "D3"]
    lines = [line for line in result.stdout.lines if re.match(r"\s+D\d  ", line)]
    assert [line.split()[0] for line in lines][:3] == ["D1", "D2", "D3"]
