"""Pooling anytime chains in a merge (pytest_claims.merge.pool): the seeds' independent chains joined into one decision
that ends at the product of their e-values, one seed's chain at several lengths kept at its longest, and chains
that are not independent, not sound or contradictory left unpooled."""

from __future__ import annotations

import copy
import json
import math

import pytest
from chains import ledger_batches
from pytest_claims.anytime.evalues import UNIFORM, rate_log_evalues_for
from pytest_claims.anytime.chain_kinds import decide_chain
from pytest_claims.merge.pool import chain_contradiction, chain_of, longest_chain, pool_chains, with_pooled

THRESHOLD, ALPHA = 0.6, 1e-4


def record(seed: int, *counts: tuple[int, int], outcome: str = "inconclusive") -> dict:
    """A statement record as a run writes it: its anytime chain over batches of (successes, trials)."""
    batches = ledger_batches(*counts, threshold=THRESHOLD, seed=seed)
    for batch in batches:  # a run id begins with its start: seeds started in ascending order, as declared
        batch["run"] = f"20261201T{seed:06d}Z-{batch['batch']}"
    block = {"method": "beta-mixture", "prior": {"a": 1.0, "b": 1.0, "point_mass": 0.0}, "ledger": batches}
    block.update(held_alpha=ALPHA, refute_alpha=ALPHA)
    decision = {"threshold": THRESHOLD, "statement": f"rate >= {THRESHOLD}", "anytime": block}
    return {"test": "t", "outcome": outcome, "reason": "", "evidence": {"heads rate": decision}}


def evalues(successes: int, trials: int, prior=UNIFORM) -> tuple[float, float]:
    return rate_log_evalues_for(successes, trials, THRESHOLD, at_least=True, prior=prior)


def test_the_pooled_chain_ends_at_the_e_value_of_all_the_seeds_counts():
    one, two = record(1, (140, 200), (137, 200)), record(2, (139, 200), (140, 200))
    pooled = pool_chains({"2": two, "1": one})
    assert (pooled["successes"], pooled["trials"]) == (556, 800)
    assert (pooled["log_e_for"], pooled["log_e_against"]) == pytest.approx(evalues(556, 800), abs=1e-12)
    # the chain rule: seed 1's e-value times seed 2's under seed 1's posterior; more than the two e-values' product
    chain_rule = [a + b for a, b in zip(evalues(277, 400), evalues(279, 400, UNIFORM.after(277, 400)))]
    assert [pooled["log_e_for"], pooled["log_e_against"]] == pytest.approx(chain_rule, abs=1e-9)
    assert pooled["log_e_for"] > evalues(277, 400)[0] + evalues(279, 400)[0]
    # each seed alone is inconclusive at 1e-4; joined (seed 1 first: the seeds' order, not the caller's) the chain
    # crosses at its first look whose pooled counts reach ln(1/alpha)
    assert max(evalues(277, 400)[0], evalues(279, 400)[0]) < -math.log(ALPHA)
    looks = [("1", 0, 140, 200), ("1", 1, 277, 400), ("2", 0, 416, 600), ("2", 1, 556, 800)]
    seed, batch, *_ = next(look for look in looks if evalues(*look[2:])[0] >= -math.log(ALPHA))
    assert seed == "2" and pooled["outcome"] == "held" and pooled["decided_at"] == {"seed": seed, "batch": batch}


def test_pooling_refutes_as_it_holds():
    one, two = record(1, (91, 200)), record(2, (92, 200))
    pooled = pool_chains({"1": one, "2": two})
    assert max(evalues(91, 200)[1], evalues(92, 200)[1]) < -math.log(ALPHA) <= pooled["log_e_against"]
    assert pooled["outcome"] == "refuted" and pooled["decided_at"] == {"seed": "2", "batch": 0}


def test_a_chain_that_crossed_alone_stays_decided_when_it_comes_first():
    held = record(1, (140, 200), (137, 200), (150, 200), outcome="held")
    pooled = pool_chains({"1": held, "2": record(2, (120, 200))})
    assert pooled["outcome"] == "held" and pooled["decided_at"] == {"seed": "1", "batch": 2}


@pytest.mark.parametrize(
    "second, why",
    [
        (record(2, (105, 200), outcome="refuted"), "held under one seed and refuted under another"),
        (record(1, (139, 200)), "a stream id appears under two seeds"),
        (dict(record(2, (139, 200)), outcome="error"), "not held, refuted or inconclusive"),
    ],
)
def test_chains_that_are_not_one_decision_are_not_pooled(second, why):
    first = record(1, (140, 200), (137, 200), (150, 200), outcome="held")
    pooled = pool_chains({"1": first, "2": second})
    assert pooled["outcome"] is None and why in pooled["why"]


def test_chains_under_other_parameters_or_spoiled_are_not_pooled():
    other = record(2, (139, 200))
    other["evidence"]["heads rate"]["anytime"]["held_alpha"] = 1e-3
    assert "different statement parameters" in pool_chains({"1": record(1, (140, 200)), "2": other})["why"]
    spoiled = record(2, (139, 200))
    spoiled["evidence"]["heads rate"]["anytime"]["ledger"][0]["log_e_for"] = 50.0  # not its counts' e-value
    assert pool_chains({"1": record(1, (140, 200)), "2": spoiled})["outcome"] is None
    for spoil in (
        lambda r: r["evidence"]["heads rate"].update(threshold=5.0),  # no rate's threshold
        lambda r: r["evidence"]["heads rate"].update(anytime="a string"),
        lambda r: r["evidence"]["heads rate"]["anytime"].update(prior=[1, 2]),
        lambda r: r.update(evidence=["not", "a", "dict"]),
    ):
        forged = record(2, (139, 200))
        spoil(forged)
        assert pool_chains({"1": record(1, (140, 200)), "2": forged})["outcome"] is None


def test_one_seed_at_several_lengths_is_kept_at_its_longest():
    longer = record(1, (140, 200), (137, 200), (150, 200), outcome="held")
    shorter = record(1, (140, 200))
    shorter["evidence"]["heads rate"]["anytime"]["ledger"][0]["run"] = "another machine's run"
    assert longest_chain([shorter, longer]) == 1 and longest_chain([longer, shorter]) == 0
    forked = record(1, (140, 200), (130, 200))  # batch 1 with other counts: not the same chain
    assert longest_chain([longer, forked]) is None
    assert longest_chain([longer, {"evidence": {}}]) is None


def test_a_record_holds_one_checked_chain_or_none():
    assert chain_of({"evidence": {"x": 1}}) is None
    what, chain = chain_of(record(1, (140, 200)))
    assert what == "heads rate" and len(chain["batches"]) == 1


def test_with_pooled_sets_the_outcome_and_keeps_the_seed_s_own_chain():
    one, two = record(1, (140, 200), (137, 200)), record(2, (139, 200), (140, 200))
    pooled = {"t": pool_chains({"1": one, "2": two})}
    payload = {"claims": [{"statements": [copy.deepcopy(one)]}]}
    out = with_pooled(payload, pooled)["claims"][0]["statements"][0]
    assert out["outcome"] == "held" and "pooled over master seeds 1, 2" in out["reason"]
    assert out["evidence"]["heads rate"]["pooled"] == pooled["t"]
    assert out["evidence"]["heads rate"]["anytime"] == one["evidence"]["heads rate"]["anytime"]
    assert payload["claims"][0]["statements"][0] == one  # the input is not changed


HELD_CHAIN = ((140, 200), (137, 200), (150, 200))  # crosses for the statement at its third look
REFUTED_CHAIN = ((60, 200),)  # 30% against 60%: crosses against it at once
INCONCLUSIVE_CHAIN = ((140, 200),)


@pytest.mark.parametrize(
    "counts, outcome, contradicts",
    [
        (INCONCLUSIVE_CHAIN, "held", True),  # the review's case: an outcome edited to held, its chain undecided
        (INCONCLUSIVE_CHAIN, "refuted", True),  # an undecided chain ends its test inconclusive
        (REFUTED_CHAIN, "held", True),
        (REFUTED_CHAIN, "inconclusive", True),  # a refuted chain ends its test refuted
        (HELD_CHAIN, "refuted", False),  # a held chain lets the test go on: a later check may refute it
        (HELD_CHAIN, "inconclusive", False),  # ... or leave it inconclusive
        (HELD_CHAIN, "held", False),
        (REFUTED_CHAIN, "refuted", False),
        (INCONCLUSIVE_CHAIN, "inconclusive", False),
        (INCONCLUSIVE_CHAIN, "error", False),  # not a decision's outcome: nothing to compare
    ],
)
def test_an_outcome_its_own_chain_cannot_have_given_is_named_with_both_values(counts, outcome, contradicts):
    given = record(1, *counts, outcome=outcome)
    _, chain = chain_of(given)
    decided = decide_chain(chain["statement"], chain["batches"]).decision
    why = chain_contradiction(given)
    assert bool(why) == contradicts, (decided, why)
    if contradicts:
        assert f"records outcome {outcome!r}" in why and f"decides {decided!r}" in why and "needs 9.21" in why


def test_a_decided_outcome_on_a_spoiled_chain_is_named_and_a_pooled_one_taken_from_a_merged_set_only():
    spoiled = record(1, *INCONCLUSIVE_CHAIN, outcome="held")
    spoiled["evidence"]["heads rate"]["anytime"]["ledger"][0]["log_e_for"] = 50.0  # not its counts' e-value
    assert "fails its check" in chain_contradiction(spoiled)
    assert chain_contradiction(dict(spoiled, outcome="inconclusive")) == ""  # nothing decided on it
    one, two = record(1, (140, 200), (137, 200)), record(2, (139, 200), (140, 200))
    out = with_pooled({"claims": [{"statements": [one]}]}, {"t": pool_chains({"1": one, "2": two})})
    pooled = out["claims"][0]["statements"][0]  # held pooled; its own chain alone is not
    assert pooled["outcome"] == "held" and chain_contradiction(one) == ""
    assert chain_contradiction(pooled, merged_seeds=True) == ""
    assert "its file is one master seed's" in chain_contradiction(pooled)  # a pooled record in a one-seed file
    # ... also beside the record's own outcome (a merge of the file kept it, and the exports said "pooled over seeds")
    assert "its file is one master seed's" in chain_contradiction(dict(pooled, outcome=one["outcome"]))


def merged_statement(by_seed: dict[str, dict]) -> dict:
    """A statement record as a merged replication set's verdicts.json holds it: the first seed's record carrying the
    pooled decision of all the seeds (pool_chains, with_pooled), read back from JSON."""
    first = next(iter(by_seed.values()))
    out = with_pooled({"claims": [{"statements": [first]}]}, {"t": pool_chains(by_seed)})
    return json.loads(json.dumps(out["claims"][0]["statements"][0]))


def pooled_of(statement: dict) -> dict:
    return statement["evidence"]["heads rate"]["pooled"]


HELD_POOLED = ((1, (140, 200), (137, 200)), (2, (139, 200), (140, 200)))  # each inconclusive, held pooled
UNDECIDED_POOLED = ((1, (140, 200)), (2, (125, 200)))  # inconclusive pooled too


def honest(chains) -> dict:
    return merged_statement({str(seed): record(seed, *counts) for seed, *counts in chains})


def forged_chain(statement: dict) -> None:
    """Seed 2's chain in the pooled record replaced by a sound chain with other counts (its numbers its data's)."""
    pooled_of(statement)["chains"]["2"] = record(2, (180, 200), (180, 200))["evidence"]["heads rate"]["anytime"][
        "ledger"
    ]


def spoiled_chain(statement: dict) -> None:
    pooled_of(statement)["chains"]["2"][0]["log_e_for"] = 50.0  # not its counts' e-value


def own_chain_swapped(statement: dict) -> None:
    own = record(1, (150, 200), (150, 200))["evidence"]["heads rate"]["anytime"]["ledger"]
    statement["evidence"]["heads rate"]["anytime"]["ledger"] = own


@pytest.mark.parametrize(
    "chains, forge, named",
    [
        (  # the review's case: a set inconclusive pooled, its outcome and pooled outcome both edited to held
            UNDECIDED_POOLED,
            lambda s: (s.update(outcome="held"), pooled_of(s).update(outcome="held")),
            "records pooled outcome 'held', but the seeds' chains it carries pool to 'inconclusive'",
        ),
        (
            UNDECIDED_POOLED,
            lambda s: (s.update(outcome="held"), pooled_of(s).update(outcome="held", log_e_for=12.0)),
            "differs in log_e_for, outcome",
        ),
        (HELD_POOLED, lambda s: s.update(outcome="inconclusive"), "its pooled record decides 'held'"),
        (HELD_POOLED, lambda s: pooled_of(s).update(log_e_for=pooled_of(s)["log_e_for"] + 1), "differs in log_e_for"),
        (HELD_POOLED, lambda s: pooled_of(s).update(successes=600), "differs in successes"),
        (HELD_POOLED, forged_chain, "log_e_for, max_log_e_for, seeds, successes"),
        (HELD_POOLED, spoiled_chain, "pool to None (a seed's record holds no single sound anytime chain)"),
        (HELD_POOLED, own_chain_swapped, "none of the chains its pooled record 'heads rate' pools"),
        (
            HELD_POOLED,
            lambda s: pooled_of(s)["seeds"]["2"].update(outcome="held"),
            "pools seed 2, which records outcome 'held', but its anytime chain 'heads rate' decides 'inconclusive'",
        ),
        (HELD_POOLED, lambda s: pooled_of(s).pop("chains"), "without its seeds' chains (written by an older"),
        (HELD_POOLED, lambda s: pooled_of(s).update(chains=[[], []]), "whose seeds and chains do not match"),
    ],
)
def test_a_merged_record_s_pooled_decision_is_pooled_again_from_the_chains_it_carries(chains, forge, named):
    statement = honest(chains)
    assert chain_contradiction(statement, merged_seeds=True) == ""
    forge(statement)
    why = chain_contradiction(statement, merged_seeds=True)
    assert named in why, why


def test_a_pooled_record_keeps_each_seed_s_chain_and_pools_the_declared_set_only():
    statement = honest(HELD_POOLED)
    chains = pooled_of(statement)["chains"]
    assert list(chains) == ["1", "2"] and chains["1"] == statement["evidence"]["heads rate"]["anytime"]["ledger"]
    assert chains["2"] == record(2, *HELD_POOLED[1][1:])["evidence"]["heads rate"]["anytime"]["ledger"]
    # seeds 1 and 3 (a gap: not the declared replication set), pooled by hand: the merge would not have pooled them
    gap = merged_statement({"1": record(1, *HELD_POOLED[0][1:]), "3": record(3, *HELD_POOLED[1][1:])})
    assert pooled_of(gap)["outcome"] == "held"
    assert "pool to None (the declared replication set is seeds 1 to 3" in chain_contradiction(gap, merged_seeds=True)


def test_merged_files_of_one_seed_set_keep_the_pooled_record_longest_in_every_seed():
    """Two merged files of seeds 1 and 2 whose records are seed 2's (the first input's) at one length, seed 1's
    chain pooled at 1 batch in one and at 2 in the other: the merge of the two kept the first given (its own chains
    coincide), so the order chose the shorter look, held where the longer pools to inconclusive. The record longest
    in every seed is kept; where none is, they are not one chain (their outcomes then conflict)."""
    two = record(2, (150, 200), (150, 200))
    short = merged_statement({"2": two, "1": record(1, (140, 200))})
    longer = merged_statement({"2": two, "1": record(1, (140, 200), (70, 200))})
    assert (pooled_of(short)["outcome"], pooled_of(longer)["outcome"]) == ("held", "inconclusive")
    assert chain_contradiction(short, merged_seeds=True) == chain_contradiction(longer, merged_seeds=True) == ""
    assert longest_chain([short, longer]) == 1 and longest_chain([longer, short]) == 0
    other = merged_statement({"2": record(2, (150, 200), (150, 200), (150, 200)), "1": record(1, (140, 200))})
    assert longest_chain([longer, other]) is None  # seed 1 longer in one, seed 2 in the other: neither holds both
    forked = merged_statement({"2": two, "1": record(1, (140, 200), (71, 200))})
    assert longest_chain([longer, forked]) is None  # seed 1's second batch differs: not one chain
    assert longest_chain([longer, two]) is None  # a pooled record beside none


def with_counts(statement: dict, successes: int, trials: int) -> dict:
    """The record with the counts decide_rate records beside its chain (`heads rate counts`, a key number's source)."""
    counts = {"successes": successes, "trials": trials, "rate": successes / trials}
    return dict(statement, evidence=dict(statement["evidence"], **{"heads rate counts": counts}))


def test_counts_recorded_beside_a_rate_chain_are_its_totals():
    """The counts beside a rate chain are its ledger's totals, in a run's file and in a merged one (the record's own
    seed's): an edited count (a key number, an export's cell) was merged as written."""
    one = record(1, (140, 200), (137, 200))
    assert chain_contradiction(with_counts(one, 277, 400)) == ""
    why = chain_contradiction(with_counts(one, 390, 400))
    assert why.startswith("records 'heads rate counts' {'successes': 390") and "totals 277 of 400" in why, why
    statement = honest(HELD_POOLED)  # seed 1's record, pooled with seed 2's chain (other counts)
    assert chain_contradiction(with_counts(statement, 277, 400), merged_seeds=True) == ""
    assert "totals 277 of 400" in chain_contradiction(with_counts(statement, 279, 400), merged_seeds=True)
