"""The third outcome (inconclusive), the false-alarm budget and replication sets, end to end on a
throwaway project (pytester), and the exact binomial bounds against SciPy."""

from __future__ import annotations

import json

import pytest
from scipy import stats

from pytest_claims.statements.decide import rate_lower_bound, rate_upper_bound, trials_to_decide
from pytest_claims.merge.command import main as merge_main

pytestmark = pytest.mark.smoke

INI = """
[pytest]
claims_registry = registry.toml
claims_tiers = smoke full
claims_report_dir = out
claims_mutants = coin_mutants
claims_false_alarm_budget = {budget}
"""

REGISTRY = """
[paper.coin]
title = "A coin paper"
source = "nowhere"

[[claim]]
id = "coin/biased"
key = "C1"
paper = "coin"
where = "Eq. 1"
text = "the coin shows heads at least 60% of the time"
provenance = ""
expected = "verified"
tests = "test_coin.py"

[[claim.statement]]
name = "rate"
text = "heads rate >= 0.6 by exact bounds at the registered level"
expected = "holds"
false_alarm = {{ smoke = 1e-4, full = 1e-5 }}
false_alarm_basis = "the level of each one-sided Clopper-Pearson bound"
mutants = ["fair-coin"]

[[claim.statement]]
name = "never-tails"
text = "the coin never shows tails (false)"
expected = "refuted"
refutes_claim = false
required = false
false_alarm = {{ smoke = 1e-4 }}
false_alarm_basis = "the level of the bound"
"""

KERNEL = """
def heads(trials):
    return (HEADS * trials) // 100

HEADS = {heads}
"""

MUTANTS = """
from pytest_claims.roles.mutants import Mutant

MUTANTS = [Mutant("fair-coin", "coin:heads", "(HEADS * trials) // 100", "(61 * trials) // 100", \
"a coin close to the threshold")]
"""

TESTS = """
import pytest

import coin
from pytest_claims import decide_rate, registered_false_alarm


@pytest.mark.smoke
@pytest.mark.claim("coin/biased", statement="rate")
def test_rate(evidence):
    n = {trials}
    decide_rate(coin.heads(n), n, 0.6, at_least=True, alpha=registered_false_alarm(), what="heads rate")


@pytest.mark.smoke
@pytest.mark.claim("coin/biased", statement="never-tails")
def test_never_tails(evidence):
    n = {trials}
    decide_rate(n - coin.heads(n), n, 0.0, at_least=False, alpha=registered_false_alarm(), what="tails rate")
"""


def make(pytester: pytest.Pytester, *, heads: int, trials: int, budget: str = "1e-3", seed: int | None = None) -> None:
    pytester.makefile(".ini", pytest=INI.format(budget=budget))
    pytester.makefile(".toml", registry=REGISTRY.format())
    pytester.syspathinsert()
    pytester.makepyfile(coin=KERNEL.format(heads=heads), coin_mutants=MUTANTS, test_coin=TESTS.format(trials=trials))


def payload(pytester: pytest.Pytester) -> dict:
    return json.loads((pytester.path / "out" / "verdicts.json").read_text())


def test_a_straddling_interval_is_inconclusive_not_broken(pytester):
    make(pytester, heads=62, trials=100)  # 62/100 against 0.6: neither bound clears it
    result = pytester.runpytest_inprocess("-m", "smoke", "--claims-no-store", "-p", "no:randomly")
    assert result.ret == 0
    found = payload(pytester)
    record = found["claims"][0]
    assert record["verdict"] == "inconclusive", record
    assert "rate" in record["reason"] and "a fresh run of" in record["reason"]
    outcomes = {s["statement"]: s["outcome"] for s in record["statements"]}
    assert outcomes == {"rate": "inconclusive", "never-tails": "refuted"}
    run = next(s for s in record["statements"] if s["statement"] == "rate")
    assert (
        run["evidence"]["heads rate"]["decision"] == "inconclusive"
        and run["evidence"]["heads rate"]["needed_to_decide"] > 100
    )
    assert run["false_alarm"] == 1e-4 and run["as_registered"] is None
    result.stdout.fnmatch_lines(["*inconclusive*"])


def test_inconclusive_travels_from_xdist_workers(pytester):
    """The outcome reaches the controller from a worker (the report attribute survives serialisation)."""
    make(pytester, heads=62, trials=100)
    result = pytester.runpytest_subprocess("-m", "smoke", "--claims-no-store", "-n", "2", "-p", "no:randomly")
    assert result.ret == 0
    record = payload(pytester)["claims"][0]
    assert record["verdict"] == "inconclusive"
    assert {s["statement"]: s["outcome"] for s in record["statements"]}["rate"] == "inconclusive"


def test_decided_both_ways(pytester):
    make(pytester, heads=90, trials=400)
    assert pytester.runpytest_inprocess("-m", "smoke", "--claims-no-store").ret == 0
    assert payload(pytester)["claims"][0]["verdict"] == "verified"
    make(pytester, heads=40, trials=400)  # clearly below 0.6: refuted, against the registry
    assert pytester.runpytest_inprocess("-m", "smoke", "--claims-no-store").ret == 1
    record = payload(pytester)["claims"][0]
    assert record["verdict"] == "broken" and "rate (refuted)" in record["reason"]


def test_inconclusive_under_a_mutant_is_not_a_kill_unless_the_registry_says_why(pytester):
    make(pytester, heads=90, trials=400)
    assert pytester.runpytest_inprocess("-m", "smoke", "--claims-no-store", "--claims-mutants").ret == 1
    record = payload(pytester)["claims"][0]
    assert record["verdict"] == "broken" and "rate: fair-coin (undecided)" in record["reason"]
    assert record["power"]["killed"] == 0 and record["power"]["of"] == 1
    result = next(m for s in record["statements"] for m in s["mutants"])
    assert result["outcome"] == "inconclusive" and result["kind"] == "undecided" and not result["killed"]
    registry = pytester.path / "registry.toml"
    registry.write_text(
        registry.read_text().replace(
            'mutants = ["fair-coin"]',
            'mutants = ["fair-coin"]\nmutants_expected_end = { fair-coin = "undecided: 0.61 is within the '
            'resolution of 400 tosses" }',
        )
    )
    assert pytester.runpytest_inprocess("-m", "smoke", "--claims-no-store", "--claims-mutants").ret == 0
    record = payload(pytester)["claims"][0]
    assert record["verdict"] == "verified" and record["power"]["expected"] == 1


def test_false_alarm_budget_table_and_limit(pytester):
    make(pytester, heads=90, trials=400)
    assert pytester.runpytest_inprocess("-m", "smoke", "--claims-no-store").ret == 0
    table = payload(pytester)["false_alarm"]
    assert table["budget"] == 1e-3 and table["tiers"]["smoke"]["sum"] == pytest.approx(2e-4)
    make(pytester, heads=90, trials=400, budget="1e-4")  # 2e-4 registered for smoke: over the budget
    result = pytester.runpytest_inprocess("-m", "smoke", "--claims-no-store")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*false-alarm probabilities*smoke*budget 0.0001*"])


def test_false_alarm_needs_a_basis(pytester):
    make(pytester, heads=90, trials=400)
    pytester.makefile(".toml", registry=REGISTRY.format().replace('false_alarm_basis = "the level of the bound"\n', ""))
    result = pytester.runpytest_inprocess("-m", "smoke", "--claims-no-store")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*never-tails states a false_alarm without false_alarm_basis*"])


def test_a_level_asked_for_but_not_registered_is_one_line(pytester):
    """registered_false_alarm() in a statement whose record states none: the test fails with one line
    saying what to add to the registry (no traceback into the plugin), and the claim is broken."""
    make(pytester, heads=90, trials=400)
    stated = (
        "false_alarm = { smoke = 1e-4, full = 1e-5 }\n"
        'false_alarm_basis = "the level of each one-sided Clopper-Pearson bound"\n'
    )
    registry = REGISTRY.format().replace(stated, "")
    assert registry != REGISTRY.format()
    pytester.makefile(".toml", registry=registry)
    result = pytester.runpytest_inprocess("-m", "smoke", "--claims-no-store")
    assert result.ret == 1
    result.stdout.fnmatch_lines(
        ["*coin/biased:rate decides by a confidence level but states no false_alarm*add false_alarm*"]
    )
    assert "def registered_false_alarm" not in result.stdout.str()
    record = payload(pytester)["claims"][0]
    assert record["verdict"] == "broken" and "rate (error)" in record["reason"]


def test_replication_set_over_seeds(pytester, tmp_path):
    make(pytester, heads=90, trials=400)
    pytester.runpytest_inprocess("-m", "smoke", "--claims-no-store")
    good = payload(pytester)
    paths = []
    for seed in (1, 2, 3):
        other = json.loads(json.dumps(good))
        other["seed"] = seed
        other["runs"][0]["run"] = f"the run of seed {seed}"  # three runs, not one relabelled
        if seed == 3:  # the claim's verdict differs under one seed
            record = other["claims"][0]
            rate = next(s for s in record["statements"] if s["statement"] == "rate")
            record["verdict"], rate["outcome"] = "inconclusive", "inconclusive"
        paths.append(tmp_path / f"s{seed}.json")
        paths[-1].write_text(json.dumps(other))
    assert merge_main([str(p) for p in paths] + ["-o", str(tmp_path / "m")]) == 1
    merged = json.loads((tmp_path / "m" / "verdicts.json").read_text())
    rep = merged["replication"]
    assert rep["seeds"] == ["1", "2", "3"]
    c1 = rep["claims"][0]
    assert c1["replicated"] == 2 and c1["of"] == 3 and c1["verdicts"]["3"] == "inconclusive"
    assert (
        merged["claims"][0]["verdict"] == "broken" and "differs between master seeds" in merged["claims"][0]["reason"]
    )
    html = (tmp_path / "m" / "verdict.html").read_text()
    assert "Replication over 3 master seeds" in html and "2 of 3" in html
    differing = [s for s in rep["statements"] if s["replicated"] != s["of"]]
    assert [s["statement"] for s in differing] == ["rate"]
    # the same verdict under every seed: replicated, not broken
    assert merge_main([str(p) for p in paths[:2]] + ["-o", str(tmp_path / "ok")]) == 0
    ok = json.loads((tmp_path / "ok" / "verdicts.json").read_text())
    assert ok["replication"]["claims_replicated"] == len(ok["replication"]["claims"])


@pytest.mark.parametrize("k, n", [(0, 10), (1, 10), (5, 10), (9, 10), (10, 10), (3, 60), (57, 60), (250, 1000)])
@pytest.mark.parametrize("alpha", [1e-2, 1e-5])
def test_clopper_pearson_bounds_match_scipy(k, n, alpha):
    lower = 0.0 if k == 0 else stats.beta.ppf(alpha, k, n - k + 1)
    upper = 1.0 if k == n else stats.beta.ppf(1 - alpha, k + 1, n - k)
    assert rate_lower_bound(k, n, alpha) == pytest.approx(lower, rel=1e-9, abs=1e-15)
    assert rate_upper_bound(k, n, alpha) == pytest.approx(upper, rel=1e-9, abs=1e-15)


@pytest.mark.parametrize("rate, threshold", [(0.7, 0.6), (0.62, 0.6), (0.3, 0.4), (1.0, 0.9), (0.0, 0.1)])
def test_trials_to_decide_is_close_to_the_exact_answer(rate, threshold):
    """Against the least n at which the exact Clopper-Pearson bound (SciPy's beta quantile) clears the
    threshold with the observed rate kept: exact for all-or-none rates, within 15% otherwise."""
    alpha = 1e-5

    def decides(n):
        k = round(rate * n)
        low = 0.0 if k == 0 else stats.beta.ppf(alpha, k, n - k + 1)
        high = 1.0 if k == n else stats.beta.ppf(1 - alpha, k + 1, n - k)
        return low >= threshold or high < threshold

    exact = next(n for n in range(1, 200_000) if decides(n) and decides(n + 1) and decides(n + 2))
    found = trials_to_decide(rate, threshold, alpha, at_least=True)
    if rate in (0.0, 1.0):
        assert found == exact
    else:
        assert abs(found - exact) <= 0.15 * exact, (found, exact)
    assert trials_to_decide(threshold, threshold, alpha, at_least=True) is None


def test_an_inconclusive_claim_names_each_statement_with_its_own_reason_cut_visibly():
    from pytest_claims.model.verdicts import REASON_CHARS, StatementRun, _named_reasons

    long = "chain " + "x" * 2 * REASON_CHARS + " seeds from 10"
    runs = [
        StatementRun("t::a", "c", "first", "gpu", "inconclusive", long),
        StatementRun("t::b", "c", "second", "gpu", "inconclusive", "no look yet (seeds from 10)"),
        StatementRun("t::c", "c", "third", "gpu", "inconclusive", ""),
    ]
    first = _named_reasons("first", runs)
    assert first.startswith("first (chain x") and first.endswith("...)")
    assert len(first) == len("first ()") + REASON_CHARS
    assert _named_reasons("second", runs) == "second (no look yet (seeds from 10))"
    assert _named_reasons("third", runs) == "third"
