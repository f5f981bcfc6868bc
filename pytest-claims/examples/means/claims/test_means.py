"""M1 (AM-GM, holds) and M2 (the printed HM >= GM, refuted): one test per statement."""

import math
import random

import pytest

import means_kernels as k
from pytest_claims import statement_holds

EPS = 2.0**-52


def positive_vectors(seed: int, count: int) -> list[list[float]]:
    rng = random.Random(f"{seed}|means")
    return [[math.exp(rng.uniform(-5, 5)) for _ in range(rng.randint(1, 30))] for _ in range(count)]


@pytest.mark.smoke
@pytest.mark.claim("means/am-gm", statement="am-gm")
def test_geometric_mean_at_most_arithmetic(evidence, claims_seed):
    vectors = positive_vectors(claims_seed, 2000) + [[3.0] * 7, [0.25] * 5]  # the last two: equality
    # Rounding: fsum is correctly rounded; log and exp add an ulp each, the mean of the logs magnified by
    # |ln GM| in exp, so GM is exact to about 4 eps (1 + |ln AM|) relative.
    gaps = [(k.arithmetic_mean(x) - k.geometric_mean(x)) / k.arithmetic_mean(x) for x in vectors]
    allowed = [4 * EPS * (1 + abs(math.log(k.arithmetic_mean(x)))) for x in vectors]
    bad = [i for i, (g, a) in enumerate(zip(gaps, allowed)) if g < -a]
    evidence.headline(instances=len(vectors), smallest_relative_gap=min(gaps))
    statement_holds(
        not bad,
        f"GM > AM beyond rounding on {len(bad)} of {len(vectors)} vectors, first {vectors[bad[0]][:4] if bad else ''}",
    )


@pytest.mark.smoke
@pytest.mark.claim("means/hm-above-gm", statement="as-printed")
def test_harmonic_mean_at_least_geometric(evidence, claims_seed):
    pinned = [1.0, 4.0]  # HM 1.6, GM 2
    vectors = [pinned] + positive_vectors(claims_seed, 200)
    below = [x for x in vectors if k.harmonic_mean(x) < k.geometric_mean(x) * (1 - 1e-12)]
    evidence.headline(
        vectors=len(vectors),
        violations=len(below),
        pinned_hm=k.harmonic_mean(pinned),
        pinned_gm=k.geometric_mean(pinned),
    )
    statement_holds(
        not below,
        f"HM < GM on {len(below)} of {len(vectors)} vectors, e.g. x = {pinned}: "
        f"HM {k.harmonic_mean(pinned):g} < GM {k.geometric_mean(pinned):g}",
    )
