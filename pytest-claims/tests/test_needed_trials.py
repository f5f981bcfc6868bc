"""The sample size an inconclusive rate statement names: exact (the Clopper-Pearson bounds the decision uses, at the
statement's two levels), counted from the trials already run, and checked against a scan of every sample size by
SciPy's beta quantiles; and numbers shown with the digits that tell them from 0 and 1."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from pytest_claims.stats.binomial import kept_rate_bound, rate_lower_bound, rate_upper_bound
from pytest_claims.statements.decide import decide_rate, trials_for_chance, trials_to_decide
from pytest_claims.outcomes import StatementInconclusive
from pytest_claims.stats.shown_numbers import significant

# (rate, threshold, at_least, alpha, held_alpha, trials already run)
CASES = [
    (0.999, 0.995, True, 1e-4, 1e-4, 1000),  # the new user's case (issue 37): 999 of 1000 against 0.995
    (0.999, 0.995, True, 1e-3, 1e-2, 1000),
    (0.999, 0.995, True, 1e-4, 1e-6, 1000),
    (0.7, 0.6, True, 1e-4, 1e-4, 50),
    (0.62, 0.6, True, 1e-4, 1e-4, 100),
    (0.62, 0.6, True, 1e-5, 1e-2, 100),
    (0.55, 0.6, True, 1e-4, 1e-4, 100),  # below: only refutation decides, at alpha
    (0.55, 0.6, True, 1e-6, 1e-2, 100),
    (0.3, 0.4, True, 1e-5, 1e-5, 20),
    (0.3, 0.4, False, 1e-5, 1e-3, 20),  # 'rate <= 0.4' held by the upper bound at held_alpha
    (0.45, 0.4, False, 1e-4, 1e-4, 200),  # 'rate <= 0.4' refuted by the lower bound at alpha
    (0.45, 0.4, False, 1e-3, 1e-8, 200),
    (0.01, 0.02, False, 1e-4, 1e-4, 500),
    (0.03, 0.02, False, 1e-4, 1e-4, 500),
    (0.5, 0.51, True, 1e-3, 1e-3, 1000),
    (0.95, 0.9, True, 1e-2, 1e-2, 10),
    (0.9, 0.95, False, 1e-2, 1e-4, 10),
    (0.2, 0.05, False, 1e-4, 1e-4, 5),
    (0.05, 0.2, True, 1e-4, 1e-4, 5),
    (1.0, 0.9, True, 1e-5, 1e-5, 10),  # all successes: the bound is alpha^(1/N)
    (0.0, 0.1, True, 1e-5, 1e-5, 10),  # no success: refuted once 1 - alpha^(1/N) < 0.1
    (0.0, 0.1, False, 1e-5, 1e-3, 10),
    (1.0, 0.999, False, 1e-4, 1e-4, 3),
    (0.8, 0.75, True, 1e-4, 1e-4, 1),
]


def decided_at(n, rate, threshold, at_least, alpha, held_alpha):
    """Which of the sample sizes `n` (an array) decide the statement as decide_rate does, the count rate * n kept
    (SciPy's beta quantiles, an implementation independent of the plugin's)."""
    k = rate * n
    with np.errstate(all="ignore"):
        lower_held = np.where(k > 0, stats.beta.ppf(held_alpha, k, n - k + 1), 0.0)
        lower_refute = np.where(k > 0, stats.beta.ppf(alpha, k, n - k + 1), 0.0)
        upper_held = np.where(k < n, stats.beta.isf(held_alpha, k + 1, n - k), 1.0)
        upper_refute = np.where(k < n, stats.beta.isf(alpha, k + 1, n - k), 1.0)
    if at_least:
        return (lower_held >= threshold) | (upper_refute < threshold)
    return (upper_held <= threshold) | (lower_refute > threshold)


def scanned(rate, threshold, at_least, alpha, held_alpha, trials):
    """The least N >= trials that decides (every N tried in turn, in growing blocks), and whether every N from there
    to twice as far decides too (the premise of the doubling and bisection search)."""
    start, end = trials, max(2 * trials, 1000)
    while True:
        decided = decided_at(np.arange(start, end, dtype=float), rate, threshold, at_least, alpha, held_alpha)
        if decided.any():
            first = start + int(np.argmax(decided))
            later = np.arange(first, 2 * first + 10, dtype=float)
            return first, bool(decided_at(later, rate, threshold, at_least, alpha, held_alpha).all())
        start, end = end, 2 * end
        assert start < 10_000_000, "no sample size below 1e7 decides this case"


@pytest.mark.parametrize("rate, threshold, at_least, alpha, held_alpha, trials", CASES)
def test_the_sample_size_is_the_least_that_decides(rate, threshold, at_least, alpha, held_alpha, trials):
    found = trials_to_decide(rate, threshold, alpha, at_least=at_least, trials=trials, held_alpha=held_alpha)
    exact, stays_decided = scanned(rate, threshold, at_least, alpha, held_alpha, trials)
    assert stays_decided  # once decided, every larger sample decides: what the doubling and bisection assume
    # SciPy's quantile and the plugin's agree to about 1e-12 relative; a sample size where the bound lies that close
    # to the threshold may fall either way, so the two may differ by one there and nowhere else
    assert abs(found - exact) <= 1, (found, exact)
    if found != exact:
        at = min(found, exact)
        level = held_alpha if (rate > threshold) == at_least else alpha
        assert abs(kept_rate_bound(rate, at, level, lower=rate > threshold) - threshold) < 1e-9 * threshold


def test_the_new_users_case_counts_the_trials_already_run():
    """999 of 1000 against 0.995 at 1e-4: the normal approximation said 'about 864 trials', fewer than had run."""
    found = trials_to_decide(0.999, 0.995, 1e-4, at_least=True, trials=1000)
    assert found == scanned(0.999, 0.995, True, 1e-4, 1e-4, 1000)[0]
    assert found > 1000 and abs(found - 864) > 1000
    with pytest.raises(StatementInconclusive) as ended:
        decide_rate(999, 1000, 0.995, at_least=True, alpha=1e-4, what="rate")
    fresh = trials_for_chance(0.999, 0.995, 1e-4, at_least=True)
    assert f"a fresh run of {fresh} trials (this run had 1000; {fresh} give a 90% chance" in str(ended.value)
    assert "more) would decide it" not in str(ended.value) and "register the statement anytime" in str(ended.value)


def _deciding_chance(n: int, rate: float, threshold: float, alpha: float, at_least: bool) -> float:
    """P(decide_rate decides at n trials | the true rate), by SciPy's binomial and Clopper-Pearson via beta
    quantiles: an oracle apart from the plugin's own tails."""
    k = np.arange(n + 1)
    lower = np.where(k > 0, stats.beta.ppf(alpha, k, n - k + 1), 0.0)
    upper = np.where(k < n, stats.beta.ppf(1 - alpha, k + 1, n - k), 1.0)
    decided = (lower >= threshold) | (upper < threshold) if at_least else (upper <= threshold) | (lower > threshold)
    return float(stats.binom.pmf(k, n, rate)[decided].sum())


@pytest.mark.parametrize(
    "rate, threshold, at_least, alpha",
    [(0.62, 0.6, True, 1e-4), (0.55, 0.6, True, 1e-3), (0.03, 0.05, False, 1e-4), (0.999, 0.995, True, 1e-4)],
)
def test_a_fresh_runs_size_decides_with_a_90_percent_chance_where_the_borderline_size_does_not(
    rate, threshold, at_least, alpha
):
    """The size an inconclusive fixed end suggests gives a 90% chance of deciding at the observed rate (exact); the
    borderline size (trials_to_decide, where a bound just reaches the threshold) gives about one half."""
    fresh = trials_for_chance(rate, threshold, alpha, at_least=at_least)
    borderline = trials_to_decide(rate, threshold, alpha, at_least=at_least)
    assert _deciding_chance(fresh, rate, threshold, alpha, at_least) >= 0.9
    assert _deciding_chance(borderline, rate, threshold, alpha, at_least) < 0.7 and fresh > borderline
    assert trials_for_chance(threshold, threshold, alpha, at_least=at_least) is None


def test_the_held_confidence_moves_the_answer():
    """The statement's own confidence decides a rate on its side, the registered false alarm one on the other."""
    loose = trials_to_decide(0.62, 0.6, 1e-4, at_least=True, trials=100, held_alpha=1e-2)
    strict = trials_to_decide(0.62, 0.6, 1e-4, at_least=True, trials=100, held_alpha=1e-6)
    assert loose < trials_to_decide(0.62, 0.6, 1e-4, at_least=True, trials=100) < strict
    assert trials_to_decide(0.58, 0.6, 1e-4, at_least=True, trials=100, held_alpha=1e-2) == trials_to_decide(
        0.58, 0.6, 1e-4, at_least=True, trials=100, held_alpha=1e-6
    )


def test_no_sample_size_where_none_decides():
    assert trials_to_decide(0.6, 0.6, 1e-4, at_least=True, trials=100) is None  # on the threshold
    assert trials_to_decide(0.62, 0.6, 1e-4, at_least=True, held_alpha=0.0) is None  # never shown at level 0
    assert trials_to_decide(0.58, 0.6, 0.0, at_least=True) is None  # never refuted at level 0
    assert trials_to_decide(0.6000001, 0.6, 1e-4, at_least=True, most=10**6) is None  # beyond the cap


def test_a_whole_count_gives_the_decisions_own_bounds():
    for rate, n, alpha in [(0.7, 10, 1e-3), (0.25, 400, 1e-5), (0.999, 1000, 1e-4), (0.5, 2, 0.1)]:
        count = round(rate * n)
        assert kept_rate_bound(rate, n, alpha, lower=True) == pytest.approx(
            rate_lower_bound(count, n, alpha), rel=1e-12
        )
        assert kept_rate_bound(rate, n, alpha, lower=False) == pytest.approx(
            rate_upper_bound(count, n, alpha), rel=1e-12
        )


@pytest.mark.parametrize(
    "value, shown",
    [
        (0.999999, "0.999999"),
        (1 - 1e-9, "0.999999999"),
        (1e-7, "1e-07"),
        (1e-9, "1e-09"),
        (0.5, "0.5"),
        (0.123456, "0.1235"),
        (1.0, "1"),
        (0.0, "0"),
        (0.99995, "0.99995"),
        (2.5e-5, "2.5e-05"),
        (3.99987, "4.000"),  # rounded: the zeros say it was measured (the newcomer read "4" as exact)
        (2.0, "2"),
        (4000.2, "4000"),
        (1.00001e-7, "1.000e-07"),
        (0.600004, "0.6000"),
    ],
)
def test_numbers_keep_the_digits_that_tell_them_from_0_and_1(value, shown):
    assert significant(value) == shown


def test_a_confidence_near_1_is_not_shown_as_1():
    with pytest.raises(StatementInconclusive) as ended:
        decide_rate(999, 1000, 0.995, at_least=True, alpha=1e-7, what="rate", held_confidence=1 - 1e-7)
    assert "at confidence 0.9999999 to hold, 0.9999999 to refute: false alarm 1e-07" in str(ended.value)


@pytest.mark.parametrize("anytime", [None, True], ids=["fixed", "anytime"])
def test_where_no_sample_size_is_given_the_message_says_why(anytime):
    """Past the search's cap (1e7 trials) the hint used to vanish, exactly in the near-threshold cases."""
    cases = [
        (5001, "more than 10,000,000 trials in total would be needed to decide it at the observed rate"),
        (5000, "the observed rate equals the threshold 0.5: no number of trials decides it at that rate"),
    ]
    for successes, reason in cases:
        assert trials_to_decide(successes / 10_000, 0.5, 1e-4, at_least=True, trials=10_000) is None
        with pytest.raises(StatementInconclusive) as ended:
            decide_rate(successes, 10_000, 0.5, at_least=True, alpha=1e-4, what="rate", anytime=anytime)
        assert str(ended.value).endswith(reason) or f"; {reason};" in str(ended.value), str(ended.value)
    with pytest.raises(StatementInconclusive) as ended:  # never refuted at level 0: the refuting side decides
        decide_rate(4999, 10_000, 0.5, at_least=True, alpha=0.0, what="rate", held_confidence=0.9999)
    assert "the refuting side (a false alarm of 0) has level 0, so no number of trials decides it" in str(ended.value)
