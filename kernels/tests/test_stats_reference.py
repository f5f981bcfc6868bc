"""Reference tests of kernels/stats.py against scipy.stats and exact arithmetic, at the levels the K
statements use (one-sided 99% Clopper-Pearson bounds, a sign test read at p < 1e-6, Cochran-Armitage
at p < 1e-3, Fisher drops with Bonferroni at 0.01, a one-sided 99% Student-t bound).

Each bound and p-value is compared with a computation that does not share the kernel's formula:
scipy's binomtest(...).proportion_ci(method="exact") for the binomial bounds, exact rational tails
for the sign test, the identity chi2_trend = N r^2 over the individual outcomes for Cochran-Armitage,
the hypergeometric tail for Fisher's test, and scipy's one-sample t-test interval for the mean.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from numpy.testing import assert_allclose
from scipy import stats

from kernels import stats as ks
from pytest_claims import rate_lower_bound, rate_upper_bound

CONFIDENCE = 0.99  # claims/kmeans/common.py
BINOMIAL_CASES = [
    (n, x)
    for n in (1, 2, 5, 20, 60, 100, 1000)
    for x in sorted({0, 1, 2, n // 3, n // 2, n - 2, n - 1, n})
    if 0 <= x <= n
]


@pytest.mark.smoke
@pytest.mark.parametrize("confidence", [CONFIDENCE, 0.999])
def test_clopper_pearson_bounds_equal_scipy_exact_one_sided_intervals(confidence):
    # The plugin's bounds, which the K statements decide by (pytest_claims.stats.binomial), against SciPy's.
    # scipy finds its bounds by root finding (about 1e-9 relative); the defining equations below are
    # checked to 1e-8.
    for n, x in BINOMIAL_CASES:
        lower = (
            stats.binomtest(x, n, alternative="greater").proportion_ci(confidence_level=confidence, method="exact").low
        )
        upper = (
            stats.binomtest(x, n, alternative="less").proportion_ci(confidence_level=confidence, method="exact").high
        )
        assert_allclose(
            rate_lower_bound(x, n, 1 - confidence), lower, rtol=1e-7, atol=1e-14, err_msg=f"lower, x={x}, n={n}"
        )
        assert_allclose(
            rate_upper_bound(x, n, 1 - confidence), upper, rtol=1e-7, atol=1e-14, err_msg=f"upper, x={x}, n={n}"
        )


@pytest.mark.smoke
def test_clopper_pearson_bounds_solve_their_defining_equations():
    """P(X >= x | p = lower) = 1 - confidence = P(X <= x | p = upper): one-sided, at 99%."""
    alpha = 1 - CONFIDENCE
    for n, x in BINOMIAL_CASES:
        lower, upper = rate_lower_bound(x, n, alpha), rate_upper_bound(x, n, alpha)
        if x > 0:
            assert_allclose(stats.binom.sf(x - 1, n, lower), alpha, rtol=1e-8, err_msg=f"x={x}, n={n}")
        else:
            assert lower == 0.0
        if x < n:
            assert_allclose(stats.binom.cdf(x, n, upper), alpha, rtol=1e-8, err_msg=f"x={x}, n={n}")
        else:
            assert upper == 1.0
    # The statements' own case: 60 of 60 stalled trials gives 0.01 ** (1/60), not 0.1 ** (1/60) (90%)
    # nor 0.005 ** (1/60) (the lower end of a two-sided 99% interval).
    assert rate_lower_bound(60, 60, 1 - CONFIDENCE) == pytest.approx(0.01 ** (1 / 60), rel=1e-12)
    assert rate_upper_bound(0, 60, 1 - CONFIDENCE) == pytest.approx(1 - 0.01 ** (1 / 60), rel=1e-12)


def _exact_upper_tail(positive: int, n: int) -> float:
    return float(Fraction(sum(math.comb(n, j) for j in range(positive, n + 1)), 2**n))


@pytest.mark.smoke
def test_sign_test_equals_exact_binomial_tail():
    rng = np.random.default_rng(20260101)
    cases = [
        np.array([1.0] * 24),
        np.array([1.0] * 30 + [-1.0] * 2 + [0.0] * 5),
        np.array([0.0] * 4),
        np.array([-0.5] * 3 + [0.2] * 2),
    ]
    cases += [rng.normal(loc, 1.0, size) for loc, size in ((0.0, 40), (0.3, 60), (1.5, 100), (-0.2, 17))]
    for diff in cases:
        p, positive, negative = ks.sign_test_greater(diff)
        assert (positive, negative) == (int(np.sum(diff > 0)), int(np.sum(diff < 0))), (
            "ties must be dropped, not counted"
        )
        reference = _exact_upper_tail(positive, positive + negative) if positive + negative else 1.0
        assert_allclose(p, reference, rtol=1e-10, err_msg=str(diff))
        if positive + negative:
            assert_allclose(
                p, stats.binomtest(positive, positive + negative, 0.5, alternative="greater").pvalue, rtol=1e-10
            )
    # Around the threshold p < 1e-6 that K3 reads: 20 of 20 positive gives 2^-20 = 9.5e-7.
    assert ks.sign_test_greater(np.ones(20))[0] == pytest.approx(2.0**-20, rel=1e-12)
    assert ks.sign_test_greater(np.r_[np.ones(20), -np.ones(1)])[0] > 1e-6


def _trend_by_correlation(successes, trials, scores) -> tuple[float, float]:
    """Cochran-Armitage z from the identity z^2 = N r^2, r the correlation of score and outcome over the
    N individual trials (the sign of r is the sign of z)."""
    outcome = np.concatenate([np.r_[np.ones(x), np.zeros(m - x)] for x, m in zip(successes, trials)])
    score = np.repeat(np.asarray(scores, dtype=np.float64), trials)
    r = np.corrcoef(score, outcome)[0, 1]
    z = math.sqrt(outcome.size) * r
    return z, float(stats.norm.sf(z))


@pytest.mark.smoke
def test_cochran_armitage_equals_correlation_form():
    scores = np.log10([20, 200, 2000, 10000, 1e6])
    cases = [
        ([0, 42, 60, 60, 60], [60] * 5),  # the smoke grid's sigma2 = 100 row
        ([3, 10, 25, 40, 55], [60] * 5),
        ([30, 31, 29, 30, 32], [60] * 5),  # no trend
        ([50, 40, 30, 20, 10], [60] * 5),  # decreasing: p near 1
        ([1, 5, 9, 20, 90], [100, 50, 40, 60, 100]),  # unequal group sizes
    ]
    for successes, trials in cases:
        z, p = ks.cochran_armitage_increasing(np.array(successes), np.array(trials), scores)
        z_ref, p_ref = _trend_by_correlation(successes, trials, scores)
        assert_allclose([z, p], [z_ref, p_ref], rtol=1e-9, atol=1e-300, err_msg=str(successes))
    # Hand-checked: scores 0, 1; 0 of 10 and 10 of 10: r = 1, z = sqrt(20), one-sided p = sf(sqrt(20)).
    z, p = ks.cochran_armitage_increasing(np.array([0, 10]), np.array([10, 10]), np.array([0.0, 1.0]))
    assert z == pytest.approx(math.sqrt(20), rel=1e-12) and p == pytest.approx(stats.norm.sf(math.sqrt(20)), rel=1e-10)
    assert ks.cochran_armitage_increasing(np.array([0, 0]), np.array([5, 5]), np.array([0.0, 1.0])) == (0.0, 1.0)


@pytest.mark.smoke
def test_fisher_drop_pvalues_equal_hypergeometric_tails():
    cases = [([60, 55, 40, 58, 60], [60] * 5), ([10, 3, 30, 29], [40, 40, 50, 50]), ([0, 0, 5], [10, 10, 10])]
    for successes, trials in cases:
        got = ks.adjacent_drop_pvalues(np.array(successes), np.array(trials))
        reference = [
            stats.hypergeom.sf(successes[i] - 1, trials[i] + trials[i + 1], successes[i] + successes[i + 1], trials[i])
            for i in range(len(successes) - 1)
        ]
        assert_allclose(got, reference, rtol=1e-10, err_msg=str(successes))


@pytest.mark.smoke
def test_significant_drops_are_bonferroni_over_pairs_at_the_statement_level():
    alpha = 0.01  # DROP_ALPHA of K2
    # Pair (0, 1): 20/20 then 13/20 gives p = 0.0043, significant alone at 0.01 but not after
    # Bonferroni over 4 pairs (0.017); pair (2, 3): 20/20 then 9/20 gives p = 3.1e-5, significant.
    successes, trials = np.array([20, 13, 20, 9, 9]), np.array([20] * 5)
    pvalues = ks.adjacent_drop_pvalues(successes, trials)
    assert alpha / 4 < pvalues[0] < alpha and pvalues[2] * 4 < alpha
    assert [i for i, _ in ks.significant_drops(successes, trials, alpha)] == [2]
    assert ks.significant_drops(np.array([5, 10, 15]), np.array([20] * 3), alpha) == []  # rising: no drop


@pytest.mark.smoke
@pytest.mark.parametrize("confidence", [CONFIDENCE, 0.999])
def test_mean_lower_bound_equals_scipy_one_sided_t_interval(confidence):
    rng = np.random.default_rng(7)
    for values in (rng.uniform(0.9, 1.0, 60), rng.normal(0.5, 0.2, 100), np.array([0.2, 0.4]), rng.beta(20, 1, 7)):
        reference = stats.ttest_1samp(values, 0.0, alternative="greater").confidence_interval(confidence).low
        assert_allclose(ks.mean_lower_bound(values, confidence), reference, rtol=1e-12)
    assert ks.mean_lower_bound(np.array([1.0]), CONFIDENCE) == -math.inf
