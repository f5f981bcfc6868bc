"""The anytime-valid e-values of pytest_claims.anytime.evalues against their oracles: SciPy's beta functions (an
independent implementation of the formulas), the closed forms, the martingale identity (the e-value's exact mean under
the null is 1, by summing the binomial law), an exact dynamic program of the type-I error under 100 looks (at most alpha
for the e-process; today's Clopper-Pearson rule reapplied at every look inflates it), the chain rule of pooling, and
the design's measured numbers (docs/explanation/anytime-design.md, computed by a separate SciPy prototype).

Each oracle is also shown to reject a wrong e-value (an unrestricted prior, a wrong normalisation, a product of
dependent copies), so that a check that cannot fail is noticed. The tests marked smoke take a few seconds in all;
the others (run without -m smoke) cover the spec's full grid.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import special, stats

from pytest_claims.anytime import evalues
from pytest_claims.statements import decide
from pytest_claims.stats import binomial
from pytest_claims.anytime.evalues import UNIFORM, BetaPrior

PRIORS = {
    "uniform": UNIFORM,
    "beta(0.5,9.5)": BetaPrior(0.5, 9.5),
    "beta(9,1)": BetaPrior(9.0, 1.0),
    "point mass": BetaPrior(2.0, 3.0, point_mass=0.5),
}


def close(found: float, expected: float, relative: float = 1e-11) -> bool:
    """Equal to `relative` of the larger of |expected| and 1 (log e-values near 0 are compared absolutely)."""
    return abs(found - expected) <= relative * max(1.0, abs(expected))


# ------------------------------------------------------------------------------------------------
# The reference: the formulas of anytime-design.md 9 in SciPy (real counts allowed)


def scipy_log_e(successes, trials, t, prior=UNIFORM, *, greater=True, restricted=True):
    """ln E_gt (greater) or ln E_lt with SciPy's betaln and betainc; `restricted=False` is the wrong, unrestricted
    prior (valid for the point null p = t only), kept to show that the oracles below reject it."""
    a, b, s, f = prior.a, prior.b, successes, trials - successes
    if restricted:
        tail = special.betaincc if greater else special.betainc
        log_tails = math.log(tail(a + s, b + f, t)) - math.log(tail(a, b, t))
    else:
        log_tails = 0.0
    log_beta = special.betaln(a + s, b + f) - special.betaln(a, b) + log_tails - s * math.log(t) - f * math.log1p(-t)
    w = prior.point_mass
    if w == 0.0:
        return log_beta
    far_ok = f == 0 if greater else s == 0
    log_far = (-s * math.log(t) if greater else -f * math.log1p(-t)) if far_ok else -math.inf
    return float(np.logaddexp(math.log(w) + log_far, math.log1p(-w) + log_beta))


def null_mean(log_e, trials: int, rate: float) -> float:
    """E[e-value] when the successes of `trials` are Binomial(trials, rate): the sum over every count, each term
    taken in logs (at 3000 trials the extreme counts' mass underflows while their e-value overflows, and their
    products, 1 / (n + 1) each at t = 1/2, make up most of the mean)."""
    log_pmf = stats.binom.logpmf(np.arange(trials + 1), trials, rate)
    return math.fsum(math.exp(lp + log_e(s)) for s, lp in enumerate(log_pmf) if lp > -math.inf)


# ------------------------------------------------------------------------------------------------
# The e-values against SciPy and the closed forms

GRID = [(s, n, t) for n in (1, 7, 100, 2000) for t in (0.05, 0.4, 0.9) for s in sorted({0, 1, n // 3, n - 1, n})]


@pytest.mark.smoke
@pytest.mark.parametrize("prior", PRIORS.values(), ids=PRIORS.keys())
def test_the_log_evalues_are_the_formulas(prior):
    checked = 0
    for s, n, t in GRID:
        greater, less = evalues.rate_log_evalues(s, n, t, prior=prior)
        for found, side in ((greater, True), (less, False)):
            with np.errstate(all="ignore"):
                try:
                    expected = scipy_log_e(s, n, t, prior, greater=side)
                except (ValueError, ZeroDivisionError):  # SciPy's tail underflowed to 0: nothing to compare
                    continue
            if math.isfinite(expected):
                assert close(found, expected), (s, n, t, side, found, expected)
                checked += 1
    assert checked > 0.8 * 2 * len(GRID)


@pytest.mark.smoke
@pytest.mark.parametrize("n", [0, 1, 5, 60, 500])
@pytest.mark.parametrize("t", [0.1, 0.5, 0.93])
def test_the_uniform_prior_is_two_binomial_tails(n, t):
    """E_gt = P_t(Bin(n + 1) <= S) / ((1 - t)(n + 1) P_t(Bin(n) = S)), E_lt = P_t(Bin(n + 1) >= S + 1) / (t (n + 1)
    P_t(Bin(n) = S)), the tails from binomial.py (the plugin's own exact route), the mass in logs (t^S is subnormal
    at t = 0.1, S = 315)."""
    for s in range(n + 1):
        log_mass = math.log(math.comb(n, s)) + s * math.log(t) + (n - s) * math.log1p(-t)
        greater, less = evalues.rate_log_evalues(s, n, t)
        tail_le, tail_ge = binomial.binomial_cdf(s, n + 1, t), binomial.binomial_sf(s + 1, n + 1, t)
        if tail_le > 1e-290:  # a subnormal tail has lost digits
            assert close(greater, math.log(tail_le / ((1 - t) * (n + 1))) - log_mass, 1e-10), s
        if tail_ge > 1e-290:
            assert close(less, math.log(tail_ge / (t * (n + 1))) - log_mass, 1e-10), s


@pytest.mark.smoke
def test_every_trial_succeeding_and_no_trial_at_all():
    """E = 1 before any trial; all successes: E_gt = (1 - t^(n+1)) / ((n + 1)(1 - t) t^n) (anytime-design.md 4.2c: t =
    0.99 needs 1161 trials at alpha 1e-4, and E at Clopper-Pearson's 917 is 1096)."""
    for prior in PRIORS.values():
        assert evalues.rate_log_evalues(0, 0, 0.3, prior=prior) == (0.0, 0.0)
    for t, n in ((0.9, 88), (0.99, 917), (0.999, 9206), (0.99, 10**5)):
        closed = -math.log((n + 1) * (1 - t)) - n * math.log(t) + math.log1p(-(t ** (n + 1)))
        assert close(evalues.rate_log_evalues(n, n, t)[0], closed)
    assert round(math.exp(evalues.rate_log_evalues(917, 917, 0.99)[0])) == 1096


@pytest.mark.smoke
def test_a_huge_sample_stays_finite_where_the_tails_underflow():
    """At 10^6 trials the tails are far below the smallest double; the logs are not (their difference from the
    SciPy formula cannot be taken there, so the chain rule checks them: pooled = first half x second half)."""
    greater, less = evalues.rate_log_evalues(np.int64(520_000), np.int64(10**6), 0.5)  # NumPy's integers are counts
    # ln E_gt is about n KL(0.52 || 0.5) = 800.3 less a log term; E_lt's tail I_t(a + S, b + F) is near e^-800
    assert 785.0 < greater < 800.3 and -20.0 < less < 0.0
    first, _ = evalues.rate_log_evalues(260_000, 500_000, 0.5)
    second, _ = evalues.rate_log_evalues(260_000, 500_000, 0.5, prior=UNIFORM.after(260_000, 500_000))
    assert close(first + second, greater, 1e-12)


@pytest.mark.smoke
def test_log_incomplete_beta_is_the_log_of_the_tails_even_past_underflow():
    mpmath = pytest.importorskip("mpmath")
    mpmath.mp.dps = 40
    for a, b, x in ((3, 5, 0.2), (3, 5, 0.9), (100.5, 2000, 0.01), (2000, 3, 0.3)):  # I_0.3(2000, 3) ~ e^-2394
        lower, upper = binomial.log_incomplete_beta(a, b, x)
        exact_lower = mpmath.betainc(a, b, 0, x, regularized=True)
        exact_upper = mpmath.betainc(a, b, x, 1, regularized=True)
        assert close(lower, float(mpmath.log(exact_lower)), 1e-12), (a, b, x)
        assert close(upper, float(mpmath.log(exact_upper)), 1e-12), (a, b, x)
    # I_x(1, b) = 1 - (1 - x)^b: its upper tail at b = 10^6 + 1 is e^-693148 (mpmath's series does not converge)
    assert close(binomial.log_incomplete_beta(1.0, 10**6 + 1, 0.5)[1], (10**6 + 1) * math.log(0.5), 1e-14)


# ------------------------------------------------------------------------------------------------
# The martingale identity, and the supermartingale under the whole null


@pytest.mark.smoke
@pytest.mark.parametrize("prior", PRIORS.values(), ids=PRIORS.keys())
@pytest.mark.parametrize("t", [0.1, 0.5, 0.9])
@pytest.mark.parametrize("n", [1, 10, 200])
def test_the_evalue_has_mean_one_at_the_threshold(prior, t, n):
    for side in (0, 1):
        mean = null_mean(lambda s: evalues.rate_log_evalues(s, n, t, prior=prior)[side], n, t)
        assert abs(mean - 1.0) < 1e-12, (side, mean)


@pytest.mark.parametrize("t", [0.1, 0.5, 0.9])
def test_the_evalue_has_mean_one_at_the_threshold_for_3000_trials(t):
    for side in (0, 1):
        assert abs(null_mean(lambda s: evalues.rate_log_evalues(s, 3000, t)[side], 3000, t) - 1.0) < 1e-12


def supermartingale_gaps(log_e, t: float, n: int, greater: bool) -> list[float]:
    """mean - 1 at rates on the null's side of t (p <= t for E_gt): each must be <= 0 (rounding aside)."""
    rates = [t * f for f in (0.2, 0.6, 0.95)] if greater else [t + (1 - t) * f for f in (0.05, 0.4, 0.8)]
    return [null_mean(log_e, n, q) - 1.0 for q in rates]


@pytest.mark.smoke
@pytest.mark.parametrize("prior", PRIORS.values(), ids=PRIORS.keys())
def test_the_evalue_is_at_most_one_on_average_anywhere_in_the_null(prior):
    for t, n in ((0.3, 10), (0.5, 60), (0.9, 150)):
        for side, greater in ((0, True), (1, False)):
            gaps = supermartingale_gaps(lambda s: evalues.rate_log_evalues(s, n, t, prior=prior)[side], t, n, greater)
            assert max(gaps) <= 1e-12, (t, n, greater, gaps)


@pytest.mark.smoke
def test_the_oracles_reject_wrong_evalues():
    """An unrestricted prior has mean 1 at t but above 1 inside the null; dropping Q_t(a, b) misses mean 1; the
    mean below the threshold is the spec's 0.4155 (n = 10, q = 0.8 t, uniform), so the sum itself is right."""
    t, n = 0.5, 60
    unrestricted = lambda s: scipy_log_e(s, n, t, restricted=False)  # noqa: E731
    assert abs(null_mean(unrestricted, n, t) - 1.0) < 1e-12 and max(supermartingale_gaps(unrestricted, t, n, True)) > 1
    prior = BetaPrior(2.0, 3.0)
    unnormalised = lambda s: scipy_log_e(s, n, t, prior) + math.log(special.betaincc(2.0, 3.0, t))  # noqa: E731
    assert abs(null_mean(unnormalised, n, t) - 1.0) > 0.1
    assert round(null_mean(lambda s: evalues.rate_log_evalues(s, 10, 0.5)[0], 10, 0.4), 4) == 0.4155


# ------------------------------------------------------------------------------------------------
# Type-I error under 100 looks, exact


def refuted_chance(counts_at, t: float, step: int, looks: int) -> float:
    """P(refuted at some look) for 'rate >= t' at rate = t, a look every `step` trials, stopping at the first held
    or refuted look: the mass of the runs still going over the success count, convolved at each look."""
    step_law = stats.binom.pmf(np.arange(step + 1), step, t)
    going, refuted = np.ones(1), []
    for look in range(1, looks + 1):
        going = np.convolve(going, step_law)
        most_refuted, least_held = counts_at(look * step)
        refuted.append(float(going[: most_refuted + 1].sum()))
        going[: most_refuted + 1] = 0.0
        going[max(least_held, 0) :] = 0.0
    return math.fsum(refuted)


def type_one(t: float, step: int, alpha: float, *, looks: int = 100, spend: bool = False) -> tuple[float, float]:
    """(today's rule reapplied at each look, the uniform e-process), held_alpha = 0.01; `spend`: today's rule at
    evalues.round_alpha(alpha, k) at look k instead."""

    def today(n: int) -> tuple[int, int]:
        level = evalues.round_alpha(alpha, n // step) if spend else alpha
        return decide.rate_decision_counts(n, t, alpha=level, held_alpha=0.01)

    def evalue(n: int) -> tuple[int, int]:
        return evalues.anytime_decision_counts(n, t, alpha=alpha, held_alpha=0.01)

    return refuted_chance(today, t, step, looks), refuted_chance(evalue, t, step, looks)


@pytest.mark.smoke
def test_one_look_of_the_dynamic_program_is_the_binomial_tail():
    for counts_at in (
        lambda n: decide.rate_decision_counts(n, 0.5, alpha=1e-4, held_alpha=0.01),
        lambda n: evalues.anytime_decision_counts(n, 0.5, alpha=1e-4, held_alpha=0.01),
    ):
        most_refuted, _ = counts_at(1000)
        assert close(refuted_chance(counts_at, 0.5, 1000, 1), binomial.binomial_cdf(most_refuted, 1000, 0.5), 1e-9)


@pytest.mark.smoke
@pytest.mark.parametrize("step", [1, 10])
@pytest.mark.parametrize("alpha", [1e-2, 1e-4])
def test_only_the_evalue_keeps_its_false_alarm_under_100_looks(step, alpha):
    today, evalue = type_one(0.5, step, alpha)
    assert evalue <= alpha < today / 5


@pytest.mark.smoke
def test_the_type_one_errors_are_the_specs():
    """anytime-design.md 4.1 (its own prototype, printed to 3 digits): t = 0.5, a look every 10 trials."""
    for alpha, spec_today, spec_evalue in ((0.05, 0.2637, 0.0183), (1e-4, 0.00129, 3.28e-5)):
        today, evalue = type_one(0.5, 10, alpha)
        assert f"{today:.3g}" == f"{spec_today:.3g}" and f"{evalue:.3g}" == f"{spec_evalue:.3g}"


@pytest.mark.smoke
def test_spending_alpha_over_the_rounds_keeps_todays_rule_valid():
    spent, _ = type_one(0.5, 10, 1e-4, spend=True)
    assert spent <= 1e-4
    rounds = [evalues.round_alpha(1e-4, k) for k in range(1, 10**5)]
    gap = 1e-4 - math.fsum(rounds)  # the rounds not taken: 6 alpha / pi^2 times sum over k >= 1e5 of 1 / k^2
    assert gap > 0 and math.isclose(gap, 6e-4 / math.pi**2 / (10**5 - 0.5), rel_tol=1e-6)


@pytest.mark.parametrize("t", [0.5, 0.9])
@pytest.mark.parametrize("step", [1, 10, 100])
@pytest.mark.parametrize("alpha", [1e-2, 1e-4, 1e-5])
def test_only_the_evalue_keeps_its_false_alarm_on_the_whole_grid(t, step, alpha):
    today, evalue = type_one(t, step, alpha)
    assert evalue <= alpha < today / 4


# ------------------------------------------------------------------------------------------------
# Deciding along looks


@pytest.mark.smoke
def test_the_first_crossing_decides_and_stays():
    log_1e4 = math.log(1e4)
    found = evalues.decide_log_evalues([1.0, 5.0, 1.0], [0.0, log_1e4, 0.0], alpha=1e-4, held_alpha=0.01)
    assert (found.decision, found.decided_at_look, found.log_e_for, found.max_log_e_for) == ("held", 2, 1.0, 5.0)
    found = evalues.decide_log_evalues([0.0, 0.0], [1.0, log_1e4], alpha=1e-4, held_alpha=0.01)
    assert (found.decision, found.decided_at_look, found.max_log_e_against) == ("refuted", 2, log_1e4)
    found = evalues.decide_log_evalues([0.0], [50.0], alpha=0.0)
    assert (found.decision, found.decided_at_look) == ("inconclusive", None)


@pytest.mark.smoke
def test_a_rate_decided_along_its_looks():
    """60 of 100, 130 of 200, 175 of 300 for 'rate >= 0.5': held at the look where the pooled counts cross (the
    second), and still held at the third, where the counts alone would no longer hold it."""
    looks = [(60, 100), (130, 200), (175, 300)]
    found = evalues.decide_rate_looks(looks, 0.5, at_least=True, alpha=1e-4, held_alpha=0.01)
    crossed = [evalues.rate_log_evalues(s, n, 0.5)[0] >= math.log(100) for s, n in looks]
    assert crossed == [False, True, False]
    assert found.decision == "held" and found.decided_at_look == 2 and found.max_log_e_for > found.log_e_for
    mirrored = evalues.decide_rate_looks([(n - s, n) for s, n in looks], 0.5, at_least=False, alpha=1e-4)
    assert close(mirrored.log_e_for, found.log_e_for, 1e-12)
    with pytest.raises(ValueError, match="cumulative"):
        evalues.decide_rate_looks([(60, 100), (59, 200)], 0.5, at_least=True, alpha=1e-4)


# ------------------------------------------------------------------------------------------------
# Pooling: the chain rule, products and averages


@pytest.mark.smoke
@pytest.mark.parametrize(
    "t, first, second, prior",
    [
        (0.4, (60, 120), (33, 70), UNIFORM),
        (0.9, (95, 100), (480, 500), BetaPrior(9, 1)),
        (0.05, (1, 40), (7, 300), BetaPrior(0.5, 9.5)),
    ],
)
def test_pooled_counts_are_the_sequential_product(t, first, second, prior):
    pooled = evalues.rate_log_evalues(first[0] + second[0], first[1] + second[1], t, prior=prior)
    before = evalues.rate_log_evalues(*first, t, prior=prior)
    after = evalues.rate_log_evalues(*second, t, prior=prior.after(*first))
    for side in (0, 1):
        assert close(evalues.product_log_evalue([before[side], after[side]]), pooled[side], 1e-12)
    with pytest.raises(ValueError, match="point mass"):
        PRIORS["point mass"].after(*first)


@pytest.mark.smoke
def test_averages_survive_dependence_and_products_do_not():
    """Two runs of one seed see the same data: the average of their e-values keeps mean 1, their product does
    not (E[E^2] > 1); the average of two priors' e-values on the same data is an e-value too."""
    n, t = 200, 0.5
    one = lambda s: evalues.rate_log_evalues(s, n, t)[0]  # noqa: E731
    assert abs(null_mean(lambda s: evalues.average_log_evalue([one(s), one(s)]), n, t) - 1.0) < 1e-12
    assert null_mean(lambda s: evalues.product_log_evalue([one(s), one(s)]), n, t) > 10.0
    two = lambda s: evalues.rate_log_evalues(s, n, t, prior=BetaPrior(9, 1))[0]  # noqa: E731
    mixed = lambda s: evalues.average_log_evalue([one(s), two(s)], weights=[1.0, 3.0])  # noqa: E731
    assert abs(null_mean(mixed, n, t) - 1.0) < 1e-12
    assert evalues.product_log_evalue([1.0, -math.inf]) == -math.inf


# ------------------------------------------------------------------------------------------------
# The confidence sequence and the needed size


@pytest.mark.smoke
@pytest.mark.parametrize("s, n", [(60, 100), (600, 1000), (950, 1000), (100, 100), (6000, 10000), (1, 10**6), (3, 7)])
@pytest.mark.parametrize("alpha", [1e-2, 1e-4])
def test_the_bounds_are_the_edges_of_the_set_not_rejected(s, n, alpha):
    """At the bound the e-value (SciPy's) reaches 1 / alpha; a hair inside it does not; the bound is wider than
    Clopper-Pearson's, and E_gt falls with t below S / n (so the set is an interval)."""
    lower, upper = evalues.anytime_rate_lower_bound(s, n, alpha), evalues.anytime_rate_upper_bound(s, n, alpha)
    assert 0.0 < lower < s / n <= upper <= 1.0
    with np.errstate(all="ignore"):
        assert scipy_log_e(s, n, lower) >= -math.log(alpha) - 1e-9
        assert scipy_log_e(s, n, lower * (1 + 1e-9)) < -math.log(alpha)
        if upper < 1.0:
            assert scipy_log_e(s, n, upper, greater=False) >= -math.log(alpha) - 1e-9
            assert scipy_log_e(s, n, 1 - (1 - upper) * (1 + 1e-9), greater=False) < -math.log(alpha)
    assert lower < binomial.rate_lower_bound(s, n, alpha) and upper >= binomial.rate_upper_bound(s, n, alpha)
    grid = [lower * f for f in np.linspace(0.2, 1.0, 9)] + [lower + (s / n - lower) * f for f in (0.25, 0.5, 0.9)]
    values = [evalues.rate_log_evalues(s, n, t)[0] for t in grid]
    assert all(a > b for a, b in zip(values, values[1:]))


@pytest.mark.smoke
def test_the_bounds_are_the_specs():
    """anytime-design.md 4.2d, uniform prior, 4 digits."""
    for s, n, alpha, spec in ((60, 100, 1e-2, 0.4253), (60, 100, 1e-4, 0.3698), (100, 100, 1e-4, 0.8903)):
        assert round(evalues.anytime_rate_lower_bound(s, n, alpha), 4) == spec
    assert evalues.anytime_rate_lower_bound(0, 10, 1e-4) == 0.0 and evalues.anytime_rate_upper_bound(10, 10, 0.01) == 1


def least_all_successes(t: float, alpha: float, w: float = 0.0) -> int:
    """The least n with (w t^-n + (1 - w) E_closed(n)) >= 1 / alpha, by a scan over n of the closed form."""
    n = 1
    while True:
        closed = (1 - t ** (n + 1)) / ((n + 1) * (1 - t) * t**n)
        if w * t**-n + (1 - w) * closed >= 1 / alpha:
            return n
        n += 1


@pytest.mark.smoke
@pytest.mark.parametrize("t", [0.9, 0.99])
@pytest.mark.parametrize("alpha", [1e-2, 1e-4, 1e-5])
def test_the_needed_size_when_every_trial_succeeds(t, alpha):
    found = evalues.anytime_trials_to_decide(1.0, t, alpha, at_least=True)
    assert found == least_all_successes(t, alpha)
    point = BetaPrior(point_mass=0.5)
    assert evalues.anytime_trials_to_decide(1.0, t, alpha, at_least=True, prior=point) == least_all_successes(
        t, alpha, 0.5
    )


@pytest.mark.smoke
def test_the_needed_sizes_are_the_specs():
    """anytime-design.md 4.2c: uniform mixture 1161 (t = 0.99, alpha 1e-4), 62 / 111 / 134 at t = 0.9. The spec's
    986 for the point mass w = 1/2 counts the point mass alone (0.5 * 0.99^-n >= 1e4); the mixture with its beta
    part decides at 976 (least_all_successes scans it)."""
    assert evalues.anytime_trials_to_decide(1.0, 0.99, 1e-4, at_least=True) == 1161
    assert [evalues.anytime_trials_to_decide(1.0, 0.9, a, at_least=True) for a in (1e-2, 1e-4, 1e-5)] == [62, 111, 134]
    assert least_all_successes(0.99, 1e-4, 0.5) == 976
    assert math.ceil(math.log(2e4) / -math.log(0.99)) == 986


@pytest.mark.smoke
@pytest.mark.parametrize(
    "rate, t, at_least, trials",
    [(0.6, 0.5, True, 1), (0.05, 0.1, False, 300), (0.45, 0.5, True, 50), (0.7, 0.6, False, 1)],
)
def test_the_needed_size_is_the_least_by_a_scan(rate, t, at_least, trials):
    """Against every N, with SciPy's formula at the kept rate (rate * N successes, a real number)."""
    alpha, held_alpha = 1e-4, 1e-2
    found = evalues.anytime_trials_to_decide(rate, t, alpha, at_least=at_least, trials=trials, held_alpha=held_alpha)
    greater = rate > t
    level = held_alpha if greater == at_least else alpha
    n = trials
    while scipy_log_e(rate * n, n, t, greater=greater) < -math.log(level):
        n += 1
    assert found == n
    assert evalues.anytime_trials_to_decide(0.5, 0.5, alpha, at_least=True) is None
    assert evalues.anytime_trials_to_decide(0.6, 0.5, alpha, at_least=True, most=10) is None


# ------------------------------------------------------------------------------------------------
# Two proportions


@pytest.mark.smoke
def test_the_two_proportions_evalue_has_conditional_mean_one_under_equal_rates():
    """Given the margins, k_a is hypergeometric under p_A = p_B (SciPy's law): the mean is 1 for every margin; under
    odds ratio 1/2 (p_A < p_B) it is below 1."""
    for n_a, n_b in ((10, 10), (4, 9), (12, 3)):
        for total in range(n_a + n_b + 1):
            low, high = max(0, total - n_b), min(total, n_a)
            support = range(low, high + 1)
            values = [math.exp(evalues.two_proportions_log_evalue(x, n_a, total - x, n_b)) for x in support]
            null = stats.hypergeom.pmf(list(support), n_a + n_b, n_a, total)
            assert abs(math.fsum(p * v for p, v in zip(null, values)) - 1.0) < 1e-12
            below = stats.nchypergeom_fisher.pmf(list(support), n_a + n_b, n_a, total, 0.5)
            assert math.fsum(p * v for p, v in zip(below, values)) <= 1.0 + 1e-12


@pytest.mark.smoke
def test_the_two_proportions_evalue_at_extreme_tables_and_the_specs_values():
    """At the most extreme table, E = w_inf / p_Fisher + (1 - w_inf) x (the mixture part); anytime-design.md 4.3's
    values at 10 per arm: 10/10 vs 0/10 1.34e5, 9/10 vs 0/10 1.29e4, 8/10 vs 0/10 2240 (w_inf = 1/2); 1.85e5 at w_inf =
    1."""
    fisher = stats.fisher_exact([[10, 0], [0, 10]], alternative="greater")[1]
    mixture = math.exp(evalues.two_proportions_log_evalue(10, 10, 0, 10, w_inf=0.0))
    assert close(math.exp(evalues.two_proportions_log_evalue(10, 10, 0, 10)), 0.5 / fisher + 0.5 * mixture, 1e-12)
    shown = [f"{math.exp(evalues.two_proportions_log_evalue(k, 10, 0, 10)):.3g}" for k in (10, 9, 8)]
    assert shown == ["1.34e+05", "1.29e+04", "2.24e+03"]
    assert f"{math.exp(evalues.two_proportions_log_evalue(10, 10, 0, 10, w_inf=1.0)):.3g}" == "1.85e+05"
    assert evalues.two_proportions_log_evalue(0, 5, 0, 5) == 0.0  # one table for its margins: no evidence


@pytest.mark.smoke
def test_the_two_proportions_evalue_has_fishers_power_at_small_alpha():
    """anytime-design.md 4.3: overflow rates 0.9 against 0.05, 10 seeds per arm: 0.551 at 1e-4 and 0.209 at 1e-5 for
    both."""
    for alpha, spec in ((1e-4, 0.551), (1e-5, 0.209)):
        evalue = fisher = 0.0
        for k_a in range(11):
            for k_b in range(11):
                chance = stats.binom.pmf(k_a, 10, 0.9) * stats.binom.pmf(k_b, 10, 0.05)
                evalue += chance * (evalues.two_proportions_log_evalue(k_a, 10, k_b, 10) >= -math.log(alpha))
                fisher += chance * (stats.fisher_exact([[k_a, 10 - k_a], [k_b, 10 - k_b]], "greater")[1] < alpha)
        assert round(evalue, 3) == round(fisher, 3) == spec


# ------------------------------------------------------------------------------------------------
# Power and the prior tuned to a planned size


def held_quantiles(q: float, t: float, alpha: float, prior: BetaPrior, most: int) -> tuple[int, int]:
    """(tau50, tau90): the trials by which the e-process, looked at after every trial, has held 'rate >= t' with
    probability 0.5 and 0.9 when the rate is q (exact, held side only at level alpha)."""
    going, held = np.ones(1), []
    for n in range(1, most + 1):
        going = np.convolve(going, [1 - q, q])
        _, least_held = evalues.anytime_decision_counts(n, t, alpha=alpha, held_alpha=alpha, prior=prior)
        held.append(going[least_held:].sum())
        going[least_held:] = 0.0
    total = np.cumsum(held)
    return int(np.argmax(total >= 0.5)) + 1, int(np.argmax(total >= 0.9)) + 1


def test_the_cost_of_looking_at_will_is_the_specs():
    """anytime-design.md 4.2a, 0.9 against 0.8 at alpha 1e-4: Clopper-Pearson's n90 331; the uniform prior's tau50 /
    tau90 263 / 432; the prior planned at 331 trials 262 / 422 (1.27x)."""
    assert held_quantiles(0.9, 0.8, 1e-4, UNIFORM, 450) == (263, 432)
    assert held_quantiles(0.9, 0.8, 1e-4, evalues.planned_prior(0.8, 331, 1e-4), 450) == (262, 422)


@pytest.mark.smoke
def test_the_planned_prior_is_centred_on_the_threshold():
    prior = evalues.planned_prior(0.8, 331, 1e-4)
    assert math.isclose(prior.a / (prior.a + prior.b), 0.8) and 5 < prior.a + prior.b < 50


# ------------------------------------------------------------------------------------------------
# Arguments


@pytest.mark.smoke
@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: evalues.rate_log_evalues(1, 10, 1.0), "strictly between"),
        (lambda: evalues.rate_log_evalues(11, 10, 0.5), r"in \[0, trials\]"),
        (lambda: evalues.rate_log_evalues(1.0, 10, 0.5), "integers"),
        (lambda: evalues.decide_log_evalues([1.0], [1.0], alpha=0.99), "level"),
        (lambda: evalues.decide_log_evalues([1.0], [], alpha=0.01), "one e-value per side"),
        (lambda: evalues.decide_log_evalues([math.nan], [0.0], alpha=0.01), "NaN"),
        (lambda: BetaPrior(0.0, 1.0), "a, b > 0"),
        (lambda: BetaPrior(point_mass=1.5), "point_mass"),
        (lambda: evalues.planned_prior(0.5, 0, 1e-4), "planned_trials"),
        (lambda: evalues.round_alpha(1e-4, 0), "round_number"),
        (lambda: evalues.average_log_evalue([0.0, 1.0], weights=[1.0]), "weights"),
        (lambda: evalues.product_log_evalue([]), "non-empty"),
        (lambda: evalues.anytime_rate_lower_bound(5, 4, 0.01), r"in \[0, trials\]"),
        (lambda: evalues.two_proportions_log_evalue(3, 10, 1, 10, w_inf=2.0), "w_inf"),
        (lambda: binomial.log_incomplete_beta(1.0, 1.0, 1.5), r"\[0, 1\]"),
    ],
)
def test_bad_arguments_are_one_clear_error(call, message):
    with pytest.raises((ValueError, TypeError), match=message):
        call()
