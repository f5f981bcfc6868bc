"""M3: a rate decided by confidence bounds (held, refuted or inconclusive), its sample in the result store."""

import random

import pytest

import means_kernels as k
from pytest_claims import current_store, decide_rate, registered_false_alarm

TIERS = [
    pytest.param("smoke", 20_000, marks=pytest.mark.smoke),
    pytest.param("full", 1_000_000, marks=pytest.mark.full),
]


@pytest.mark.claim("means/fixed-points", statement="rate")
@pytest.mark.parametrize(("tier", "trials"), TIERS)
def test_fixed_point_rate_above_threshold(evidence, claims_seed, tier, trials):
    def compute(checkpoint):
        rng = random.Random(f"{claims_seed}|permutations")
        return sum(k.has_fixed_point(k.random_permutation(20, rng)) for _ in range(trials))

    hits = current_store().get_or_compute(
        "means/fixed-points", {"seed": claims_seed, "trials": trials, "items": 20}, compute, code=[k]
    )
    evidence.headline(rate=hits / trials, trials=trials)
    decide_rate(hits, trials, 0.6, at_least=True, alpha=registered_false_alarm(), what="fixed-point rate")
