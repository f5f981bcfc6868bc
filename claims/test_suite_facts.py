"""The suite's facts, each declared once and every copy checked against it: claim ids and claim texts (the registry),
tier names (pytest.ini's claims_tiers). Harness tests, not statements: they run in the smoke tier.

What "agree" means for a claim's text, whose one source is the registry's `text` (verbatim where the paper's words
are known): its row in claims/CATALOGUE.md (the line starting `| KEY `ID` |`, once) holds the text verbatim once
Markdown's table escape is undone (`\\|` is `|`), and its test module (the registry's `tests`) quotes it in double
quotes in its docstring, line breaks read as spaces."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from claims import configuration, ids, tiers
from workloads import uot_dro

CATALOGUE = configuration.ROOT / "claims" / "CATALOGUE.md"
# the suite's own code (the plugin has no claim ids)
SUITE = ("claims", "workloads", "suite_plugin", "tools", "kernels", "benchmarks")
# A literal claim id allowed outside claims.ids, with the reason: the string keys committed results.
COMMITTED = {("workloads/uot_dro.py", ids.L6): "L6's paper-scale units in evidence/ are keyed by this string"}


def _folded(text: str) -> str:
    return " ".join(text.split())


def text_disagreements(claims: list[dict], catalogue: str, root: Path) -> list[str]:
    """One line per copy of a claim's text that disagrees with the registry's (see the module's docstring)."""
    found = []
    for claim in claims:
        name = f"{claim['key']} ({claim['id']})"
        rows = [line for line in catalogue.splitlines() if line.startswith(f"| {claim['key']} `{claim['id']}` |")]
        if len(rows) != 1:
            found.append(f"{name}: {len(rows)} rows in the catalogue's claims tables, not one")
        elif claim["text"] not in rows[0].replace("\\|", "|"):
            found.append(f"{name}: the catalogue's row does not hold the registry's text {claim['text']!r}")
        docstring = ast.get_docstring(ast.parse((root / claim["tests"]).read_text()))
        if f'"{_folded(claim["text"])}"' not in _folded(docstring or ""):
            found.append(f"{name}: {claim['tests']}'s docstring does not quote the registry's text {claim['text']!r}")
    return found


@pytest.mark.smoke
def test_claim_texts_agree_with_the_registry():
    claims = configuration.registry_claims()
    disagreements = text_disagreements(claims, CATALOGUE.read_text(), configuration.ROOT)
    assert not disagreements, "claim texts that disagree with the registry's:\n" + "\n".join(disagreements)
    assert len(claims) == 15, f"{len(claims)} claims in the registry"  # the check read them all


@pytest.mark.smoke
def test_text_disagreements_are_found(tmp_path):
    """The check above can fail: a shortened quotation, a catalogue row that paraphrases, a row missing or doubled;
    a quotation wrapped over lines and a row with escaped pipes agree."""
    claim = {"key": "X1", "id": "x/claim", "text": "A || B holds (Section 1).", "tests": "test_x.py"}
    row = "| X1 `x/claim` | A \\|\\| B holds (Section 1). | its statements | verified |"
    quoted = '"A || B\n    holds (Section 1)."'

    def found(catalogue: str, quotation: str) -> str:
        (tmp_path / "test_x.py").write_text(f'"""X1: {quotation} What it checks."""\n')
        return "\n".join(text_disagreements([claim], catalogue, tmp_path))

    assert found(row, quoted) == ""
    assert "docstring does not quote" in found(row, '"... B holds (Section 1)."')
    assert "docstring does not quote" in found(row, '"A || B holds (Section 1)"')
    assert "row does not hold" in found(row.replace("(Section 1)", "(Sec. 1)"), quoted)
    assert "0 rows" in found("| X2 `x/other` | A || B holds (Section 1). |", quoted)
    assert "2 rows" in found(f"{row}\n{row}", quoted)


@pytest.mark.smoke
def test_each_claim_id_is_declared_once():
    """claims.ids names every registry claim by its key with the registry's id, and no other module of the suite
    writes an id as a literal (but the one whose string keys committed results, checked equal)."""
    registry = {claim["key"]: claim["id"] for claim in configuration.registry_claims()}
    assert {key: getattr(ids, key, None) for key in registry} == registry
    assert uot_dro.L6 == ids.L6, f"workloads/uot_dro.py's L6 {uot_dro.L6!r} is not the registry's {ids.L6!r}"
    literals = []
    for folder in SUITE:
        for path in sorted((configuration.ROOT / folder).rglob("*.py")):
            where = path.relative_to(configuration.ROOT).as_posix()
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.Constant) and node.value in registry.values():
                    if (where, node.value) not in COMMITTED:
                        literals.append(f"{where}:{node.lineno} {node.value!r}")
    assert not literals, "claim ids written as literals (take them from claims.ids):\n" + "\n".join(literals)


@pytest.mark.smoke
def test_tier_names_and_registry_are_pytests_reading_of_the_ini(pytestconfig):
    assert tiers.SCALES == tuple(pytestconfig.getini("claims_tiers"))
    assert configuration.ini_args("claims_registry") == pytestconfig.getini("claims_registry")


@pytest.mark.smoke
def test_every_statistical_statement_registers_how_it_decides():
    """Issue 35: each statement that spends a false alarm says, before the data, whether it decides fixed-sample or
    anytime-valid, and why (the registry's `decision` with its `why`); the plugin reads the method, this reads that
    no statement left it unsaid."""
    statements = [
        (claim["key"], statement)
        for claim in configuration.registry_claims()
        for statement in claim.get("statement", [])
        if statement.get("false_alarm")
    ]
    unsaid = [
        f"{key} {statement['name']}"
        for key, statement in statements
        if not (isinstance(statement.get("decision"), dict) and str(statement["decision"].get("why", "")).strip())
    ]
    assert not unsaid, f"statements with a false alarm and no decision = {{ method = .., why = .. }}: {unsaid}"
    assert len(statements) == 25, (
        f"{len(statements)} statements with a false alarm in the registry, not 25: the check read them all? (a new "
        "statistical statement registers its decision = { method, why }; then set the count here)"
    )


@pytest.mark.smoke
def test_the_fixed_decisions_reasons_are_the_computed_numbers():
    """The K rate statements' registered reason for deciding fixed-sample cites the uniform-prior e-value of 60 of 60
    and 100 of 100 against 0.9 (91.1 and 3727 against the 100 that holding at 0.01 needs), and L4's reason cites
    each rule's chance of holding at a true rate of 0.9 (benchmarks/decision_choice.py): each is computed here."""
    import math

    from benchmarks.decision_choice import ends
    from pytest_claims.anytime.evalues import rate_log_evalues

    e60, e100 = (math.exp(rate_log_evalues(n, n, 0.9)[0]) for n in (60, 100))
    assert (f"{e60:.1f}", f"{e100:.0f}") == ("91.1", "3727") and e60 < 1 / 0.01 < e100
    cell = {"trials": 60, "threshold": 0.9, "at_least": True, "alpha": 1e-5, "held_alpha": 0.01}
    assert [ends(cell, 1.0, rule)[0] for rule in ("fixed", "anytime", "planned")] == [1.0, 0.0, 1.0]
    registered = {s["name"]: s for claim in configuration.registry_claims() for s in claim.get("statement", [])}
    whys = {
        name: registered[name]["decision"]["why"]
        for name in ("stall-rate-at-largest-d", "leaves-start", "wishart-huge-d")
    }
    assert all("is 91.1 < 100" in w and "100 of 100, 3727)" in w for w in whys.values()), whys
    # L4's reason: the counts from which each rule holds '>= 0.5' at 20 seeds, and its chance at a true rate of 0.9
    seeds = {"trials": 20, "threshold": 0.5, "at_least": True, "alpha": 1e-5 / 4, "held_alpha": 0.01}
    held = [f"{ends(seeds, 0.9, rule)[0]:.3f}" for rule in ("fixed", "anytime", "planned")]
    why = registered["baseline-diverges-at-large-c"]["decision"]["why"]
    assert f"0.9 their chances of holding are {held[0]}, {held[1]} and {held[2]}" in why, (held, why)


@pytest.mark.smoke
def test_decision_choice_reads_the_rate_decisions_a_run_records():
    """benchmarks/decision_choice.py finds decide_rate's evidence (the decision and its counts) in a run's payload,
    so the table RESULTS.md cites stays computable as the evidence's format changes: the records are made here by
    decide_rate itself, inside this test, and read back."""
    from benchmarks.decision_choice import rate_decisions
    from pytest_claims import decide_rate

    found = decide_rate(60, 60, 0.9, at_least=True, alpha=1e-5, what="a stall rate", held_confidence=0.99)
    records = {"a stall rate": found, "a stall rate counts": {"successes": 60, "trials": 60, "rate": 1.0}}
    payload = {"claims": [{"key": "K9", "statements": [{"statement": "s", "tier": "smoke", "evidence": records}]}]}
    (decision,) = rate_decisions(payload, "m")
    assert decision == {
        "statement": "K9 s",
        "tier": "smoke",
        "mutant": "m",
        "what": "a stall rate",
        "successes": 60,
        "trials": 60,
        "threshold": 0.9,
        "at_least": True,
        "alpha": 1e-5,
        "held_alpha": pytest.approx(0.01),
    }
