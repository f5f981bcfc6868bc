"""Means with no normality assumption (pytest_claims.anytime.betting, anytime_means): the betting capital's
validity (each factor's null mean exactly 1 at the threshold, never below 1/2; the measured type-I error under a
look after every observation, against a deliberately invalid bet that exceeds alpha), its continuation over
batches, the ledger's checks of its chains, the decisions and their refusals, and the safe t refused without
its assumption."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from chains import INI, toy_registry
from pytest_claims import decide_mean, decide_mean_difference, decide_safe_t, decide_signs
from pytest_claims.anytime.evalues import rate_log_evalues
from pytest_claims.anytime.betting import BettingState, betting_path, betting_step
from pytest_claims.anytime.chain_kinds import derive_chain
from pytest_claims.statements.ledger import LedgerInvalid, check_ledger
from pytest_claims.outcomes import ClaimRefuted, StatementInconclusive

pytestmark = pytest.mark.smoke


# ------------------------------------------------------------------------------------------------
# Oracles


@pytest.mark.parametrize("m", [0.05, 0.5, 0.9])
def test_each_factor_has_null_mean_one_at_the_threshold_and_stays_above_a_half(m):
    """Under a two-point law on {0, 1} with mean m (the extreme law in [0, 1]), the expected next capital over the
    present one is exactly 1 on both sides, from any state; every factor is >= 1/2 (the truncation)."""
    rng = np.random.default_rng(3)
    state = BettingState()
    for _ in range(200):
        at_one = betting_step(state, 1.0, m, alpha=1e-3, held_alpha=1e-2)
        at_zero = betting_step(state, 0.0, m, alpha=1e-3, held_alpha=1e-2)
        for side in ("log_for", "log_against"):
            growth = [math.exp(getattr(s, side) - getattr(state, side)) for s in (at_zero, at_one)]
            assert (1 - m) * growth[0] + m * growth[1] == pytest.approx(1.0, abs=1e-12)
            assert min(growth) >= 0.5 - 1e-12
        state = betting_step(state, float(rng.random()), m, alpha=1e-3, held_alpha=1e-2)


def _type_one(draw, m: float, alpha: float, runs: int, n: int, aggressive: bool = False) -> float:
    """The share of `runs` null streams of n observations whose capital for 'mean > m' ever reaches 1 / alpha."""
    rng, crossed = np.random.default_rng(11), 0
    for _ in range(runs):
        path = betting_path(draw(rng, n), 0.0, 1.0, m, alpha=alpha, held_alpha=alpha, aggressive=aggressive)
        crossed += max(s.log_for for s in path) >= -math.log(alpha)
    return crossed / runs


NULLS = {
    "two-point, mean 0.5": (0.5, lambda rng, n: (rng.random(n) < 0.5).astype(float)),
    "two-point, mean 0.05 (skewed)": (0.05, lambda rng, n: (rng.random(n) < 0.05).astype(float)),
}


@pytest.mark.parametrize("name", NULLS)
def test_the_capital_keeps_alpha_under_a_look_after_every_observation_and_a_peeking_bet_does_not(name):
    m, draw = NULLS[name]
    alpha, runs = 0.05, 600
    measured = _type_one(draw, m, alpha, runs, 60)
    assert measured <= alpha + 4 * math.sqrt(alpha * (1 - alpha) / runs), measured
    assert _type_one(draw, m, alpha, 200, 60, aggressive=True) > 2 * alpha  # a bet chosen after its outcome


def test_a_chain_of_batches_is_the_capital_of_all_its_observations_in_order():
    values = [0.2, 0.9, 0.7, 1.0, 0.4, 0.8, 0.95]
    statement = {"what": "x", "alpha": 1e-3, "held_alpha": 1e-2, "kind": "betting", "lo": 0.0, "hi": 1.0,
                 "threshold": 0.3, "at_least": True}  # fmt: skip
    derived = derive_chain(statement, [{"values": values[:3]}, {"values": values[3:]}])
    whole = betting_path(values, 0.0, 1.0, 0.3, alpha=1e-3, held_alpha=1e-2)[-1]
    assert derived[-1]["log_e_for"] == pytest.approx(whole.log_for, abs=1e-12) and derived[-1]["cum_n"] == 7
    assert derived[-1]["log_e_against"] == pytest.approx(whole.log_against, abs=1e-12)
    below = derive_chain({**statement, "at_least": False}, [{"values": values}])[-1]
    swapped = betting_path(values, 0.0, 1.0, 0.3, alpha=1e-2, held_alpha=1e-3)[-1]  # each side at its own level
    assert (below["log_e_for"], below["log_e_against"]) == pytest.approx((swapped.log_against, swapped.log_for))


def _ledger(statement: dict, data: list[dict]) -> dict:
    statement, data = json.loads(json.dumps(statement)), json.loads(json.dumps(data))  # spoiled copies, not these
    batches = [
        {"batch": i, "stream": f"seed=0|test=t|batch={i}", "run": "", **d, **derived}
        for i, (d, derived) in enumerate(zip(data, derive_chain(statement, data)))
    ]
    return {"version": 1, "statement": statement, "batches": batches}


BETTING = {"what": "x", "alpha": 1e-3, "held_alpha": 1e-3, "kind": "betting", "lo": 0.0, "hi": 10.0,
           "threshold": 4.0, "at_least": True}  # fmt: skip


@pytest.mark.parametrize(
    "spoil, problem",
    [
        (lambda d: d["batches"][1]["values"].reverse(), "not its data's"),  # the order is the capital's
        (lambda d: d["batches"][0]["values"].append(11.0), "outside the registered bounds"),
        (lambda d: d["batches"][0].update(values=[]), "1 to"),
        (lambda d: d["batches"][0].update(sum_sq=0.0), "not its data's"),
        (lambda d: d["statement"].pop("lo"), "statement parameters"),
    ],
)
def test_a_spoiled_betting_chain_is_refused(spoil, problem):
    ledger = _ledger(BETTING, [{"values": [5.0, 9.0, 7.5]}, {"values": [8.0, 2.0, 9.5, 6.0]}])
    check_ledger(json.loads(json.dumps(ledger)))  # sound, and JSON keeps every float exactly
    spoil(ledger)
    with pytest.raises(LedgerInvalid, match=problem):
        check_ledger(ledger)


def test_a_sign_chain_counts_ties_for_neither_side():
    statement = {"what": "x", "alpha": 1e-3, "held_alpha": 1e-3, "kind": "sign"}
    last = check_ledger(_ledger(statement, [{"above": 30, "below": 2, "ties": 8}]))["batches"][-1]
    assert last["log_e_for"] == pytest.approx(rate_log_evalues(30, 40, 0.5)[0], abs=1e-12)
    assert last["log_e_against"] == pytest.approx(rate_log_evalues(2, 40, 0.5)[0], abs=1e-12)
    ties_only = derive_chain(statement, [{"above": 0, "below": 0, "ties": 50}])[-1]
    assert ties_only["log_e_for"] < 0 and ties_only["log_e_against"] < 0


# ------------------------------------------------------------------------------------------------
# Decisions and refusals


def test_decide_mean_holds_refutes_and_ends_inconclusive():
    rng = np.random.default_rng(5)
    high = list(np.clip(rng.normal(0.8, 0.1, 200), 0, 1))
    found = decide_mean(high, 0.5, bounds=(0, 1), alpha=1e-4, what="m")
    assert found["decision"] == "held" and found["statement"] == "mean > 0.5"
    assert "every observation lies in [0, 1]" in found["anytime"]["assumption"]
    with pytest.raises(ClaimRefuted, match="betting"):
        decide_mean(high, 0.5, bounds=(0, 1), alpha=1e-4, what="m", at_least=False)
    with pytest.raises(StatementInconclusive):
        decide_mean(high[:5], 0.5, bounds=(0, 1), alpha=1e-4, what="m")


def test_a_difference_of_means_and_signs_of_pairs_decide():
    rng = np.random.default_rng(6)
    a, b = rng.uniform(0.4, 1.0, 150), rng.uniform(0.0, 0.6, 150)
    assert decide_mean_difference(a, b, bounds=(0, 1), alpha=1e-4, what="d")["decision"] == "held"
    with pytest.raises(ClaimRefuted):
        decide_mean_difference(b, a, bounds=(0, 1), alpha=1e-4, what="d")
    found = decide_signs(a + 100.0, b, alpha=1e-4, what="s")  # no bounds needed
    assert found["decision"] == "held" and found["anytime"]["ledger"][0]["above"] == 150
    with pytest.raises(StatementInconclusive):
        decide_signs([1.0] * 40, [1.0] * 40, alpha=1e-4, what="s")  # ties decide nothing


@pytest.mark.parametrize(
    "call, problem",
    [
        (lambda: decide_mean([0.5, 1.2], 0.5, bounds=(0, 1), alpha=1e-3, what="m"), "observation 1 = 1.2 lies outside"),
        (lambda: decide_mean([0.5], 1.0, bounds=(0, 1), alpha=1e-3, what="m"), "strictly inside the bounds"),
        (lambda: decide_mean([0.5], 0.5, bounds=(1, 0), alpha=1e-3, what="m"), "lo < hi"),
        (lambda: decide_mean([0.5], 0.5, bounds=None, alpha=1e-3, what="m"), "bounds must be"),
        (lambda: decide_mean([], 0.5, bounds=(0, 1), alpha=1e-3, what="m"), "1 to"),
        (lambda: decide_mean([math.nan], 0.5, bounds=(0, 1), alpha=1e-3, what="m"), "not a finite number"),
        (lambda: decide_mean_difference([0.1], [0.2, 0.3], bounds=(0, 1), alpha=1e-3, what="d"), "equally long"),
        (lambda: decide_signs([1.0], [math.inf], alpha=1e-3, what="s"), "not a finite number"),
        (
            lambda: decide_safe_t(3.0, 10, delta=0.5, alpha=1e-3, what="t"),
            'valid only for normal data: pass assume="nor',
        ),
    ],
)
def test_bad_input_gets_one_line_naming_it(call, problem):
    with pytest.raises((TypeError, ValueError), match=problem) as caught:
        call()
    assert "\n" not in str(caught.value)


# ------------------------------------------------------------------------------------------------
# End to end: a bounded mean continued over runs

TEST = """
import pytest
from pytest_claims import decide_mean, registered_false_alarm
from pytest_claims.roles.seeding import keyed_rng


@pytest.mark.smoke
@pytest.mark.claim("score/high", statement="above")
def test_above(claims_batch):
    rng = keyed_rng(f"score|batch{claims_batch}")
    scores = rng.beta(0.3, 0.2, 8)  # mean 0.6, U-shaped: far from normal
    decide_mean(scores, 0.4, bounds=(0, 1), alpha=registered_false_alarm(), what="above", batch=claims_batch)
"""


def test_a_bounded_mean_continued_until_its_first_crossing(pytester):
    pytester.makefile(".ini", pytest=INI)
    pytester.makefile(".toml", registry=toy_registry("score/high", "above", "test_score.py", 'decision = "anytime"'))
    pytester.makepyfile(test_score=TEST)
    records = []
    for _ in range(30):
        pytester.runpytest_inprocess("-m", "smoke", "-p", "no:randomly", "-p", "no:cacheprovider", "--claims-continue")
        records.append(json.loads((pytester.path / "out" / "verdicts.json").read_text())["claims"][0]["statements"][0])
        if records[-1]["outcome"] != "inconclusive":
            break
    assert records[0]["outcome"] == "inconclusive" and records[-1]["outcome"] == "held", records[-1]["reason"]
    block = records[-1]["evidence"]["above"]["anytime"]
    values = [v for b in block["ledger"] for v in b["values"]]
    whole = betting_path(values, 0.0, 1.0, 0.4, alpha=block["refute_alpha"], held_alpha=block["held_alpha"])
    assert block["log_e_for"] == pytest.approx(whole[-1].log_for, abs=1e-9) and len(values) == 8 * len(records)


def _seed_record(seed: int, data: list[dict]) -> dict:
    chain = _ledger(BETTING, data)
    for b in chain["batches"]:
        b["stream"] = b["stream"].replace("seed=0", f"seed={seed}")
        b["run"] = f"20261201T{seed:06d}Z-{b['batch']}"  # a run id begins with its start: seeds started in order
    block = {"method": "betting", "parameters": chain["statement"], "ledger": chain["batches"]}
    return {"test": "t", "outcome": "inconclusive", "evidence": {"x": {"anytime": block}}}


def test_seeds_betting_chains_pool_in_seed_order_and_one_stream_under_two_labels_is_refused():
    from pytest_claims.merge.pool import chain_contradiction, pool_chains, with_pooled

    one, two = [{"values": [6.0, 7.5, 5.0]}], [{"values": [8.0, 4.5]}, {"values": [9.0]}]
    pooled = pool_chains({"2": _seed_record(2, two), "1": _seed_record(1, one)})
    whole = betting_path([6.0, 7.5, 5.0, 8.0, 4.5, 9.0], 0.0, 10.0, 4.0, alpha=1e-3, held_alpha=1e-3)[-1]
    assert pooled["log_e_for"] == pytest.approx(whole.log_for, abs=1e-12) and pooled["n"] == 6
    merged = with_pooled({"claims": [{"statements": [_seed_record(1, one)]}]}, {"t": pooled})
    statement = json.loads(json.dumps(merged["claims"][0]["statements"][0]))  # as a merged verdicts.json holds it
    assert chain_contradiction(statement, merged_seeds=True) == ""  # its seeds' betting chains pool again alike
    statement["evidence"]["x"]["pooled"]["chains"]["2"][1]["values"] = [10.0]  # a seed's observation edited
    assert "the seeds' chains it carries pool to None" in chain_contradiction(statement, merged_seeds=True)
    same = pool_chains({"1": _seed_record(1, one), "3": _seed_record(3, one)})  # a test that ignores the seed
    assert same["outcome"] is None and "seeds 1 and 3 hold the same observations" in same["why"]
