"""Anytime decisions whose batches' e-values multiply (pytest_claims.statements.anytime_batches): decide_two_proportions
and decide_safe_t. Oracles: the exact type-I error of the product chain under a look after every batch (enumerated,
at most alpha), the product's null mean (exactly at most 1), a Monte Carlo of the safe t chain; then the decisions,
their refusals, the ledger's checks of these chains, and a toy statement continued, pooled over two machines' seeds
in a merge, and refused a duplicated stream."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from chains import INI, toy_registry
from pytest_claims import decide_safe_t, decide_two_proportions
from pytest_claims.anytime.evalues import two_proportions_log_evalue
from pytest_claims.anytime.safe_t import safe_t_log_evalue
from pytest_claims.anytime.chain_kinds import derive_chain
from pytest_claims.statements.ledger import LedgerInvalid, check_ledger
from pytest_claims.outcomes import ClaimRefuted, StatementInconclusive
from pytest_claims.merge.pool import pool_chains

pytestmark = pytest.mark.smoke


# ------------------------------------------------------------------------------------------------
# Oracles


def _batch_law(n: int, p_a: float, p_b: float) -> list[tuple[float, float, float]]:
    """Every outcome of one two-proportions batch of n a arm: (its probability, ln E for, ln E against)."""
    out = []
    for k_a in range(n + 1):
        for k_b in range(n + 1):
            prob = (
                math.comb(n, k_a)
                * p_a**k_a
                * (1 - p_a) ** (n - k_a)
                * math.comb(n, k_b)
                * p_b**k_b
                * (1 - p_b) ** (n - k_b)
            )
            out.append((prob, two_proportions_log_evalue(k_a, n, k_b, n), two_proportions_log_evalue(k_b, n, k_a, n)))
    return out


def _crossing_chance(law: list[tuple[float, float, float]], batches: int, alpha: float) -> float:
    """The exact chance that the product chain's e-value for the statement reaches 1 / alpha at any of `batches`
    looks (a look after every batch): a walk over the running ln E, the crossed mass taken out at each look."""
    level, crossed, alive = -math.log(alpha), 0.0, {0.0: 1.0}
    for _ in range(batches):
        after: dict[float, float] = {}
        for log_e, mass in alive.items():
            for prob, log_for, _ in law:
                total = log_e + log_for
                if total >= level:
                    crossed += mass * prob
                else:
                    key = round(total, 9)
                    after[key] = after.get(key, 0.0) + mass * prob
        alive = after
    return crossed


@pytest.mark.parametrize("p", [0.05, 0.3, 0.7])
@pytest.mark.parametrize("alpha", [0.05, 0.01])
def test_the_product_chain_keeps_its_false_alarm_under_a_look_after_every_batch(p, alpha):
    law = _batch_law(4, p, p)  # the null's boundary, p_A = p_B
    chance = _crossing_chance(law, 4, alpha)
    assert chance <= alpha
    # the oracle can see a crossing: under p_A 0.9 against p_B 0.1 the same walk crosses most of the time
    assert _crossing_chance(_batch_law(4, 0.9, 0.1), 4, alpha) > 0.5


@pytest.mark.parametrize("p_a, p_b", [(0.2, 0.2), (0.5, 0.5), (0.1, 0.4), (0.9, 0.9)])
def test_a_batch_e_value_has_mean_at_most_one_under_the_null(p_a, p_b):
    law = _batch_law(6, p_a, p_b)
    assert math.fsum(prob for prob, _, _ in law) == pytest.approx(1.0, abs=1e-12)
    assert math.fsum(prob * math.exp(log_for) for prob, log_for, _ in law) <= 1.0 + 1e-12


def test_the_safe_t_product_chain_keeps_its_false_alarm_by_monte_carlo():
    """10 000 chains of 8 batches of 5 standard normals each, a look after every batch, alpha 0.05: the crossing
    rate must lie below alpha plus 4 binomial standard errors (0.0587); a chain judged by each batch's t-test at
    0.05 instead rejects at 1 - 0.95^8 = 0.34."""
    rng = np.random.default_rng(20261204)
    x = rng.standard_normal((10_000, 8, 5))
    t = x.mean(axis=2) / (x.std(axis=2, ddof=1) / math.sqrt(5))
    log_e = np.array([[safe_t_log_evalue(float(v), 5, 0.8) for v in row] for row in t])
    crossed = (np.cumsum(log_e, axis=1) >= -math.log(0.05)).any(axis=1).mean()
    assert crossed <= 0.05 + 4 * math.sqrt(0.05 * 0.95 / 10_000)
    shifted = x + 0.8  # the oracle sees an effect
    t1 = shifted.mean(axis=2) / (shifted.std(axis=2, ddof=1) / math.sqrt(5))
    log_e1 = np.array([[safe_t_log_evalue(float(v), 5, 0.8) for v in row] for row in t1[:500]])
    assert (np.cumsum(log_e1, axis=1) >= -math.log(0.05)).any(axis=1).mean() > 0.8


# ------------------------------------------------------------------------------------------------
# The decisions outside a session: one batch


def test_two_proportions_hold_refute_and_end_inconclusive():
    held = decide_two_proportions(9, 10, 0, 10, alpha=1e-3, what="x")
    block = held["anytime"]
    assert held["decision"] == "held" and block["decided_at_look"] == 1 and block["method"] == "two-proportions"
    assert block["log_e_for"] == pytest.approx(two_proportions_log_evalue(9, 10, 0, 10), abs=1e-12)
    assert block["log_e_against"] == pytest.approx(two_proportions_log_evalue(0, 10, 9, 10), abs=1e-12)
    assert block["parameters"] == {
        "what": "x",
        "alpha": 1e-3,
        "held_alpha": 1e-3,
        "w_inf": 0.5,
        "kind": "two-proportions",
    }
    with pytest.raises(ClaimRefuted, match="against 'p_A > p_B'"):
        decide_two_proportions(0, 10, 9, 10, alpha=1e-3, what="x")
    with pytest.raises(StatementInconclusive, match="continue it with --claims-continue"):
        decide_two_proportions(3, 4, 0, 4, alpha=1e-5, what="x")


def test_a_held_level_apart_from_the_false_alarm_is_the_one_held_at():
    log_for = two_proportions_log_evalue(9, 10, 0, 10)
    assert decide_two_proportions(9, 10, 0, 10, alpha=0.01, held_alpha=math.exp(-log_for) * 1.01, what="x")
    with pytest.raises(StatementInconclusive):
        decide_two_proportions(9, 10, 0, 10, alpha=0.01, held_alpha=math.exp(-log_for) * 0.99, what="x")


def test_the_safe_t_decides_by_its_e_value_at_t_and_at_minus_t():
    found = decide_safe_t(np.float64(8.0), np.int64(40), delta=1.0, alpha=1e-4, what="m", assume="normal")
    assert found["decision"] == "held" and found["statement"] == "mean > 0"
    assert found["anytime"]["log_e_for"] == pytest.approx(safe_t_log_evalue(8.0, 40, 1.0), abs=1e-12)
    assert found["anytime"]["ledger"][0]["n2"] == 0 and isinstance(found["anytime"]["ledger"][0]["n"], int)
    with pytest.raises(ClaimRefuted, match="against 'mean_A > mean_B'"):
        decide_safe_t(-8.0, 20, n2=20, delta=1.0, alpha=1e-4, what="m", assume="normal")
    with pytest.raises(StatementInconclusive):
        decide_safe_t(1.0, 10, delta=0.5, alpha=1e-4, what="m", assume="normal")


@pytest.mark.parametrize(
    "call, problem",
    [
        (lambda: decide_two_proportions(11, 10, 0, 10, alpha=1e-3, what="x"), "more events than trials"),
        (lambda: decide_two_proportions(1.5, 10, 0, 10, alpha=1e-3, what="x"), "must be integers"),
        (lambda: decide_two_proportions(-1, 10, 0, 10, alpha=1e-3, what="x"), ">= 0"),
        (lambda: decide_two_proportions(1, 10, 0, 10, alpha=0.99, what="x"), "alpha must be a level"),
        (lambda: decide_two_proportions(1, 10, 0, 10, alpha=1e-3, what="x", w_inf=2), "w_inf"),
        (
            lambda: decide_safe_t(float("nan"), 10, delta=1.0, alpha=1e-3, what="m", assume="normal"),
            "t must be a finite",
        ),
        (lambda: decide_safe_t(2.0, 10, delta=0.0, alpha=1e-3, what="m", assume="normal"), "delta must be"),
        (lambda: decide_safe_t(2.0, 10, n2=0, delta=1.0, alpha=1e-3, what="m", assume="normal"), "n2 must be >= 1"),
        (lambda: decide_safe_t(2.0, 1, delta=1.0, alpha=1e-3, what="m", assume="normal"), "n must be an integer >= 2"),
    ],
)
def test_bad_arguments_get_one_clear_error(call, problem):
    with pytest.raises((TypeError, ValueError), match=problem):
        call()


# ------------------------------------------------------------------------------------------------
# The ledger's checks of product chains


def _chain(kind: str, data: list[dict], **parameters) -> dict:
    statement = {"what": "x", "alpha": 1e-3, "held_alpha": 1e-3, "kind": kind, **parameters}
    if kind == "spent-p":  # its held level apart from its false alarm, so that each is seen to be the one used
        statement["held_alpha"] = 1e-2
    batches = [
        {"batch": i, "stream": f"seed=0|test=t|batch={i}", "run": "", **d, **derived}
        for i, (d, derived) in enumerate(zip(data, derive_chain(statement, data)))
    ]
    return {"version": 1, "statement": statement, "batches": batches}


PROPORTIONS = [{"k_a": 3, "n_a": 4, "k_b": 0, "n_b": 4}, {"k_a": 4, "n_a": 4, "k_b": 1, "n_b": 4}]


def test_a_product_chain_is_the_sum_of_its_batches_logs():
    ledger = check_ledger(_chain("two-proportions", PROPORTIONS, w_inf=0.5))
    logs = [two_proportions_log_evalue(d["k_a"], d["n_a"], d["k_b"], d["n_b"]) for d in PROPORTIONS]
    assert [b["batch_log_e_for"] for b in ledger["batches"]] == pytest.approx(logs, abs=1e-12)
    assert ledger["batches"][-1]["log_e_for"] == pytest.approx(sum(logs), abs=1e-12)
    t_chain = check_ledger(_chain("safe-t", [{"t": 2.5, "n": 8, "n2": 0}, {"t": 1.0, "n": 8, "n2": 0}], delta=0.7))
    assert t_chain["batches"][1]["log_e_against"] == pytest.approx(
        safe_t_log_evalue(-2.5, 8, 0.7) + safe_t_log_evalue(-1.0, 8, 0.7), abs=1e-12
    )


@pytest.mark.parametrize(
    "spoil, problem",
    [
        (lambda d: d["batches"][1].update(batch_log_e_for=9.0), "not its data's"),
        (lambda d: d["batches"][1].update(log_e_for=9.0), "not its data's"),
        (lambda d: d["batches"][0].update(k_a=5), "not valid at batch 0"),
        (lambda d: d["batches"][0].update(n_b=4.0), "not a whole number"),
        (lambda d: d["batches"][0].pop("k_b"), "lacks the field 'k_b'"),
        (lambda d: d["statement"].update(kind="mystery"), "no known kind"),
        (lambda d: d["statement"].pop("w_inf"), "statement parameters"),
        (lambda d: d["statement"].update(w_inf=-1.0), "not valid at batch 0"),
    ],
)
def test_a_spoiled_product_chain_is_refused(spoil, problem):
    ledger = _chain("two-proportions", PROPORTIONS, w_inf=0.5)
    spoil(ledger)
    with pytest.raises(LedgerInvalid, match=problem):
        check_ledger(ledger)


def test_seeds_chains_pool_into_the_product_of_all_their_batches():
    def record(seed: int, data: list[dict]) -> dict:
        chain = _chain("two-proportions", data, w_inf=0.5)
        for b in chain["batches"]:
            b["stream"] = b["stream"].replace("seed=0", f"seed={seed}")
        block = {"method": "two-proportions", "parameters": chain["statement"], "ledger": chain["batches"]}
        return {"test": "t", "outcome": "inconclusive", "evidence": {"x": {"anytime": block}}}

    one, two = [PROPORTIONS[0]], [PROPORTIONS[1], PROPORTIONS[0]]
    pooled = pool_chains({"2": record(2, two), "1": record(1, one)})
    logs = [two_proportions_log_evalue(d["k_a"], d["n_a"], d["k_b"], d["n_b"]) for d in one + two]
    assert pooled["log_e_for"] == pytest.approx(sum(logs), abs=1e-12) and pooled["batches"] == 3
    assert pooled["outcome"] == "held" and pooled["decided_at"] == {"seed": "2", "batch": 1}
    assert "successes" not in pooled and pooled["seeds"]["2"]["batches"] == 2


# ------------------------------------------------------------------------------------------------
# End to end: a toy two-proportions statement continued, pooled and refused a duplicated stream

TEST = """
import pytest
from pytest_claims import decide_two_proportions, registered_false_alarm
from pytest_claims.roles.seeding import keyed_rng


@pytest.mark.smoke
@pytest.mark.claim("drug/better", statement="cures")
def test_cures(claims_batch):
    rng = keyed_rng(f"trial|batch{{{batch}}}")
    drug, placebo = int((rng.random(10) < 0.8).sum()), int((rng.random(10) < 0.3).sum())
    decide_two_proportions(drug, 10, placebo, 10, alpha=registered_false_alarm(), what="cures", batch={batch})
"""


def make_trial(pytester, *, decision='decision = "anytime"', batch="claims_batch"):
    pytester.makefile(".ini", pytest=INI)
    pytester.makefile(".toml", registry=toy_registry("drug/better", "cures", "test_drug.py", decision))
    pytester.makepyfile(test_drug=TEST.format(batch=batch))


def run_trial(pytester, *args) -> dict:
    pytester.runpytest_inprocess("-m", "smoke", "-p", "no:randomly", "-p", "no:cacheprovider", *args)
    return json.loads((pytester.path / "out" / "verdicts.json").read_text())["claims"][0]["statements"][0]


def test_a_trial_continued_until_its_first_crossing_then_replayed(pytester):
    make_trial(pytester)
    records = []
    for _ in range(10):
        records.append(run_trial(pytester, "--claims-continue"))
        if records[-1]["outcome"] != "inconclusive":
            break
    assert records[0]["outcome"] == "inconclusive" and records[-1]["outcome"] == "held", records[-1]["reason"]
    block = records[-1]["evidence"]["cures"]["anytime"]
    assert len(block["ledger"]) == len(records) >= 2 and block["decided_at_look"] == len(records)
    assert block["log_e_for"] == pytest.approx(sum(b["batch_log_e_for"] for b in block["ledger"]), abs=1e-9)
    assert [b["batch"] for b in block["ledger"]] == list(range(len(records)))
    again = run_trial(pytester, "--claims-continue")  # decided: the first crossing is final, nothing is added
    assert again["outcome"] == "held" and again["evidence"]["cures"]["anytime"]["ledger"] == block["ledger"]


def test_a_duplicated_stream_and_a_fixed_registration_are_refused(pytester):
    make_trial(pytester, batch="0")
    run_trial(pytester)
    record = run_trial(pytester, "--claims-continue")
    assert record["outcome"] == "error" and "already in the ledger" in record["reason"], record["reason"]
    make_trial(pytester, decision='decision = { method = "fixed", why = "one look" }')
    record = run_trial(pytester)
    assert record["outcome"] == "error" and "registered decision is 'fixed'" in record["reason"], record["reason"]


def test_two_machines_continuations_of_a_trial_pool_in_a_merge(pytester, tmp_path):
    from pytest_claims.merge.command import main as merge_main

    make_trial(pytester)
    files, records = [], []
    for machine, seed in (("machine-a", 1), ("machine-b", 2)):
        record = run_trial(pytester, "--claims-seed", str(seed), "-o", f"claims_store_dir={machine}")
        kept = tmp_path / f"{machine}.json"
        kept.write_bytes((pytester.path / "out" / "verdicts.json").read_bytes())
        files.append(str(kept))
        records.append(record)
    assert merge_main([*files, "-o", str(tmp_path / "merged")]) in (0, 1)
    merged = json.loads((tmp_path / "merged" / "verdicts.json").read_text())
    (pooled,) = merged["replication"]["pooled"]
    logs = [b["batch_log_e_for"] for r in records for b in r["evidence"]["cures"]["anytime"]["ledger"]]
    assert pooled["batches"] == 2 and pooled["log_e_for"] == pytest.approx(sum(logs), abs=1e-9)
    assert merged["claims"][0]["statements"][0]["outcome"] == pooled["outcome"]
    assert "Anytime statements pooled over the seeds" in Path(tmp_path / "merged" / "verdict.html").read_text()
    # read back (merged alone again), its pooled record is pooled again from the seeds' chains it carries, alike
    assert merge_main([str(tmp_path / "merged" / "verdicts.json"), "-o", str(tmp_path / "again")]) in (0, 1)
    again = json.loads((tmp_path / "again" / "verdicts.json").read_text())["claims"][0]["statements"][0]
    assert (
        again["outcome"] == pooled["outcome"] and again["evidence"] == merged["claims"][0]["statements"][0]["evidence"]
    )


def test_a_test_that_is_no_statement_keeps_no_ledger(pytester):
    """A harness test of a decision (no claim marker) decides each call alone: two calls at different levels, or a
    rerun, meet no ledger (before, the second call was refused as a changed chain)."""
    make_trial(pytester)
    pytester.makepyfile(
        test_harness="""
from pytest_claims import decide_two_proportions
import pytest


@pytest.mark.smoke
def test_levels():
    assert decide_two_proportions(4, 4, 0, 4, alpha=0.05, what="c", batch=0)["decision"] == "held"
    with pytest.raises(Exception, match="neither e-value crossed"):
        decide_two_proportions(4, 4, 0, 4, alpha=1e-5, what="c", batch=0)
"""
    )
    for _ in range(2):
        result = pytester.runpytest_inprocess("-m", "smoke", "-p", "no:randomly", "test_harness.py")
        result.assert_outcomes(passed=1)
    assert not list((pytester.path / "claims-evidence").rglob("*.ledger.json"))


# ------------------------------------------------------------------------------------------------
# Alpha spent over rounds of p-values (decide_test under a registered anytime decision)


def test_each_round_tests_at_the_alpha_spent_on_it():
    from pytest_claims.anytime.evalues import round_alpha
    from pytest_claims.anytime.chain_kinds import decide_chain

    statement = {"what": "x", "alpha": 1e-3, "held_alpha": 1e-2, "kind": "spent-p"}
    rounds = [{"p_for": 0.5, "p_against": 0.5}, {"p_for": None, "p_against": 0.5}]
    for k in (3, 4):
        level = round_alpha(1e-2, k)
        chain = _chain("spent-p", [*rounds, {"p_for": level * 1.001, "p_against": 0.5}])
        assert decide_chain(statement, check_ledger(chain)["batches"]).decision == "inconclusive"
        chain = _chain("spent-p", [*rounds, {"p_for": level * 0.999, "p_against": 0.5}])
        assert decide_chain(statement, check_ledger(chain)["batches"]).decided_at_look == k
        rounds = [*rounds, {"p_for": 0.5, "p_against": 0.5}]
    refuting = [{"p_for": 0.5, "p_against": round_alpha(1e-3, 1) * 0.999}]
    assert decide_chain(statement, check_ledger(_chain("spent-p", refuting))["batches"]).decision == ("refuted")
    assert round_alpha(1e-2, 1) == pytest.approx(6e-2 / math.pi**2) and 6e-2 / math.pi**2 < 1e-2


@pytest.mark.parametrize(
    "spoil, problem",
    [
        (lambda d: d["batches"][0].update(p_for=1.5), "not a p-value"),
        (lambda d: d["batches"][0].update(held_level=0.5), "not its data's"),
        (lambda d: d["batches"][0].update(round=2), "not the running sum 1"),
    ],
)
def test_a_spoiled_spending_chain_is_refused(spoil, problem):
    ledger = _chain("spent-p", [{"p_for": 0.5, "p_against": 0.2}])
    spoil(ledger)
    with pytest.raises(LedgerInvalid, match=problem):
        check_ledger(ledger)


def test_spending_chains_are_not_pooled():
    def record(seed: int) -> dict:
        chain = _chain("spent-p", [{"p_for": 0.01, "p_against": 0.9}])
        chain["batches"][0]["stream"] = f"seed={seed}|test=t|batch=0"
        block = {"method": "spent-p", "parameters": chain["statement"], "ledger": chain["batches"]}
        return {"test": "t", "outcome": "inconclusive", "evidence": {"x": {"anytime": block}}}

    pooled = pool_chains({"1": record(1), "2": record(2)})
    assert pooled["outcome"] is None and "not pooled" in pooled["why"]


SPENT_TEST = """
import pytest
from pytest_claims import decide_test, registered_false_alarm
from pytest_claims.roles.seeding import keyed_rng


@pytest.mark.smoke
@pytest.mark.claim("drug/better", statement="cures")
def test_cures(claims_batch):
    p_for = [0.4, 3e-5, 1e-6][claims_batch]  # round 2 tests at 0.152 alpha = 1.5e-5: 3e-5 is not enough
    decide_test(p_for, 0.9, alpha=registered_false_alarm(), what="cures", batch=claims_batch, round_data="batch")
"""


def test_a_p_value_statement_continued_spends_alpha_round_by_round(pytester):
    make_trial(pytester)
    pytester.makepyfile(test_drug=SPENT_TEST)
    outcomes = [run_trial(pytester, "--claims-continue") for _ in range(3)]
    assert [r["outcome"] for r in outcomes] == ["inconclusive", "inconclusive", "held"]
    block = outcomes[-1]["evidence"]["cures"]["anytime"]
    assert [b["round"] for b in block["ledger"]] == [1, 2, 3] and block["decided_at_look"] == 3
    assert "in round 2" in outcomes[1]["reason"] and "continue it with --claims-continue" in outcomes[1]["reason"]


@pytest.mark.parametrize("declared", ["", ', round_data="cumulative"'])
def test_spent_alpha_on_cumulative_or_undeclared_round_data_is_refused_in_one_line(pytester, declared):
    """Spending alpha over rounds is valid only when each round tests its own new batch: p-values of cumulative data
    whose batch sizes follow the data exceed alpha (benchmarks/anytime_means_type_one.py), so a call that does not
    declare round_data="batch" is refused."""
    make_trial(pytester)
    pytester.makepyfile(test_drug=SPENT_TEST.replace(', round_data="batch"', declared))
    record = run_trial(pytester, "--claims-continue")
    assert record["outcome"] == "error" and "valid only when each round tests its own new batch" in record["reason"]
    assert "\n" not in record["reason"].strip()
