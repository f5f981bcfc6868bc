"""The exported claim table keeps the labels of its numbers: each seed's in a replication set, the pooled ones
as pooled, and the seeds in the LaTeX caption."""

from __future__ import annotations

import json

from chains import ledger_batches
from pytest_claims.report import export
from pytest_claims.merge.command import _key_numbers_by_seed, main as merge_main
from pytest_claims.merge.pool import pool_chains, with_pooled
from toy_project import claim, verdicts


def _two_seeds(pytester, tmp_path) -> dict:
    """The toy project's run under seed 1, and a copy of it as seed 2 whose key number differs."""
    assert pytester.runpytest_inprocess("-m", "smoke", "--claims-no-store", "--claims-seed", "1").ret == 0
    first = verdicts(pytester)
    second = json.loads(json.dumps(first))
    second["seed"] = second["environment"]["master_seed"] = 2
    second["runs"][0]["run"] = "the run of seed 2"  # another run, not the first relabelled (which merge refuses)
    formula = next(s for s in claim(second, "T1")["statements"] if s["statement"] == "formula")
    formula["evidence"]["checked"] = 0.1284
    paths = []
    for name, payload in [("a", first), ("b", second)]:
        (tmp_path / name).mkdir()
        (tmp_path / name / "verdicts.json").write_text(json.dumps(payload))
        paths.append(str(tmp_path / name / "verdicts.json"))
    merge_main([*paths, "-o", str(tmp_path / "m")])
    return json.loads((tmp_path / "m" / "verdicts.json").read_text())


def test_a_replication_sets_export_labels_each_number_with_its_seed_and_the_caption_lists_the_seeds(project, tmp_path):
    merged = _two_seeds(project(), tmp_path)
    row = next(r for r in export.rows(merged) if r[0] == "T1")
    assert row[-1] == "formula: checked = seed 1: 50; seed 2: 0.1284"
    assert "seed 1: 50; seed 2: 0.1284" in export.as_csv(merged) and "seed 2: 0.1284" in export.as_markdown(merged)
    latex = export.as_latex(merged)
    assert "(master seeds 1, 2)" in latex and "[" not in latex.split(r"\caption{")[1].split("}")[0]


def test_one_runs_single_number_stays_unlabelled_and_its_caption_names_its_seed(project):
    pytester = project()
    pytester.runpytest_inprocess("-m", "smoke", "--claims-no-store", "--claims-seed", "7")
    payload = verdicts(pytester)
    assert next(r for r in export.rows(payload) if r[0] == "T1")[-1] == "formula: checked = 50"
    assert "(master seed 7)" in export.as_latex(payload)


def _seed_payload(seed: int, *counts: tuple[int, int]) -> dict:
    """One seed's payload as a merge holds it: a statement decided by an anytime rate over these batches, and the
    claim's key numbers (its counts, their rate) as the run computed them."""
    block = {"method": "beta-mixture", "prior": {"a": 1.0, "b": 1.0, "point_mass": 0.0}}
    block.update(held_alpha=1e-4, refute_alpha=1e-4, ledger=ledger_batches(*counts, threshold=0.6, seed=seed))
    successes, trials = sum(s for s, _ in counts), sum(n for _, n in counts)
    total = {"successes": successes, "trials": trials, "rate": successes / trials}
    evidence = {"heads rate": {"threshold": 0.6, "statement": "rate >= 0.6", "anytime": block}}
    evidence["heads rate counts"] = total
    run = {"test": "t", "statement": "heads", "tier": "smoke", "outcome": "inconclusive", "evidence": evidence}
    numbers = [
        {"label": "heads: heads rate counts.rate", "values": [{"run": "t", "tier": "smoke", "value": total["rate"]}]},
        {"label": "heads: heads rate counts", "values": [{"run": "t", "tier": "smoke", "value": total}]},
    ]
    record = {"id": "c", "key": "C", "verdict": "inconclusive", "statements": [run], "key_numbers": numbers}
    return {"seed": seed, "claims": [record]}


def test_the_pooled_counts_of_a_rate_are_a_key_number_labelled_pooled():
    per_seed = {"1": _seed_payload(1, (140, 200), (137, 200)), "2": _seed_payload(2, (139, 200), (140, 200))}
    pooled = pool_chains({seed: p["claims"][0]["statements"][0] for seed, p in per_seed.items()})
    assert pooled["outcome"] == "held"
    per_seed = {seed: with_pooled(p, {"t": pooled}) for seed, p in per_seed.items()}
    record = per_seed["1"]["claims"][0]
    shown = export.rows({"claims": [dict(record, key_numbers=_key_numbers_by_seed(record, per_seed))]})[0][-1]
    assert shown == (
        "heads: heads rate counts.rate = seed 1: 0.6925; seed 2: 0.6975; pooled: 0.695; "
        "heads: heads rate counts = seed 1: successes = 277, trials = 400, rate = 0.6925; "
        "seed 2: successes = 279, trials = 400, rate = 0.6975; pooled: successes = 556, trials = 800, rate = 0.695"
    )


def test_latex_cells_and_caption_hold_no_line_breaks_or_control_bytes():
    """A blank line ends a paragraph, which LaTeX stops on inside a table row or a caption: a suite name or a
    claim id from a verdicts.json holding newlines, a carriage return or ESC comes out on one line, as spaces."""
    payload = {
        "suite": "My\n\nsuite\r",
        "seed": 7,
        "claims": [{"id": "c/1\n\nx", "key": "K\x1b1", "verdict": "verified", "expected": "verified"}],
    }
    latex = export.as_latex(payload)
    caption = next(line for line in latex.splitlines() if line.startswith(r"\caption{"))
    rows = [line for line in latex.splitlines() if line.startswith(r"\textbf{K ")]
    assert "My  suite " in caption and len(rows) == 1 and "1  x" in rows[0], latex
    assert "\x1b" not in latex and "\r" not in latex and "\n\n" not in latex, latex
