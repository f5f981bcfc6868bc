"""Anytime-valid evidence: e-values for rates and two proportions, their confidence sequences, pooling, alpha spending.

A decision by a fixed-sample test (Clopper-Pearson, Fisher) keeps its false alarm for one look only: a statement
decided again after more trials were added refutes a true rate 5-18 times more often than its alpha after 100
looks (benchmarks/anytime_type_one.py). An e-process E_n (a nonnegative supermartingale with E_0 = 1 under every
null law) keeps it at every look: by Ville's inequality P(sup_n E_n >= 1 / alpha) <= alpha, so the first crossing
of 1 / alpha may decide, whenever the looks were taken and whatever made the user continue. The design, its
proofs and the measured costs are in docs/explanation/anytime-design.md; this module is its pure-Python core (math
only), in natural logs throughout (e-values overflow doubles: ln E reaches 1e4 at n = 5000).

- Rates (`rate_log_evalues`): the beta-mixture e-processes. For 'rate > t' (null p <= t) the likelihood ratio
  (p / t)^S ((1 - p) / (1 - t))^F averaged over a Beta(a, b) prior restricted to (t, 1]:
      E_gt = B(a + S, b + F) Q_t(a + S, b + F) / (B(a, b) Q_t(a, b) t^S (1 - t)^F),     Q_x = 1 - I_x,
  and E_lt, its mirror on [0, t) with I_t in place of Q_t. The restriction is what makes it valid for the whole
  composite null: each factor of a component p > t has mean q p / t + (1 - q)(1 - p) / (1 - t) <= 1 under any
  rate q <= t. An optional point mass at the alternative's far end (p = 1 for E_gt) serves 'never' statements.
- A confidence sequence (`anytime_rate_lower_bound`, `..._upper_bound`): the thresholds not rejected at alpha.
- Two proportions (`two_proportions_log_evalue`): a conditional e-value per batch, given the margins.
- Pooling (`product_log_evalue`, `average_log_evalue`) and alpha spending for p-value tests (`round_alpha`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from pytest_claims.stats.binomial import (
    check_counts,
    check_level,
    check_probability,
    log_beta_prefactor,
    log_incomplete_beta,
)
from pytest_claims.outcomes import HELD, INCONCLUSIVE, REFUTED
from pytest_claims.stats.search import first_true, least_size


#: The odds ratios mixed by the two-proportions e-value: 2, 4, ..., 4096 (anytime-design.md 3.2).
ODDS_RATIOS = tuple(2.0**j for j in range(1, 13))


def _check_threshold(threshold: float) -> float:
    t = check_probability("threshold", threshold)
    if not 0.0 < t < 1.0:
        raise ValueError(f"threshold must lie strictly between 0 and 1 for an e-value, got {threshold!r}")
    return t


def _log_add(x: float, y: float) -> float:
    """ln(e^x + e^y) without overflow (either may be -inf)."""
    high, low = max(x, y), min(x, y)
    return high if low == -math.inf else high + math.log1p(math.exp(low - high))


def _log_weight(w: float) -> float:
    return math.log(w) if w > 0.0 else -math.inf


# ------------------------------------------------------------------------------------------------
# Rates: the beta-mixture e-processes


@dataclass(frozen=True)
class BetaPrior:
    """The mixing prior of a rate's e-processes, fixed before the data (registered, or derived from registered
    numbers): Beta(a, b), restricted in each e-value to the alternative's side of the threshold, and a weight
    `point_mass` at the alternative's far end (p = 1 for 'rate > t', p = 0 for 'rate < t'), for 'never'
    statements, where every trial succeeds (anytime-design.md 3.1: w = 1/2 needs 986 trials at t = 0.99 and alpha =
    1e-4, the beta part alone 1161, Clopper-Pearson 917)."""

    a: float = 1.0
    b: float = 1.0
    point_mass: float = 0.0

    def __post_init__(self) -> None:
        if not (0.0 < self.a < math.inf and 0.0 < self.b < math.inf):
            raise ValueError(f"a beta prior needs finite a, b > 0, got a={self.a!r}, b={self.b!r}")
        check_probability("point_mass", self.point_mass)

    def after(self, successes: int, trials: int) -> BetaPrior:
        """The posterior after a batch: Beta(a + S, b + F). The e-value of a next batch under it, times this
        batch's, is the e-value of the pooled counts (the chain rule). Only for priors with no point mass, whose
        posterior weight would depend on the side and the threshold."""
        successes, trials = check_counts(successes, trials)
        if self.point_mass:
            raise ValueError("the posterior of a prior with a point mass depends on the side: pool the counts instead")
        return BetaPrior(self.a + successes, self.b + trials - successes)


UNIFORM = BetaPrior()


def planned_prior(threshold: float, planned_trials: int, alpha: float) -> BetaPrior:
    """`planned_prior(threshold, planned_trials, alpha)`, all three required: the BetaPrior for
    `decide_rate(..., anytime=planned_prior(...))`, or pass `anytime=planned_trials` (an int) and decide_rate builds
    it with the statement's threshold and alpha. `threshold` in (0, 1), `planned_trials` > 0 (an int), `alpha` in
    (0, 0.5) the refuting level; ValueError otherwise.

    The prior tuned to be tightest at `planned_trials` (Howard et al. 2021's beta-binomial mixture, as the
    confseq package tunes it; anytime-design.md 3.1): centred on t, with a + b = r / (t (1 - t)),
    r = max(rho - t(1 - t), 1e-3 t (1 - t)), rho = v / (2 L + ln(1 + 2 L)), L = ln(1 / (2 alpha)),
    v = t (1 - t) planned_trials. It saved 0.3-8 % of the trials against the uniform prior in the design's
    measurements (anytime-design.md 4.2)."""
    t, level = _check_threshold(threshold), check_level("alpha", alpha)
    if not (isinstance(planned_trials, int) and planned_trials > 0) or level == 0.0:
        raise ValueError(f"planned_prior needs planned_trials > 0 and alpha > 0, got {planned_trials!r}, {alpha!r}")
    variance = t * (1.0 - t)
    big_l = math.log(1.0 / (2.0 * level))
    rho = variance * planned_trials / (2.0 * big_l + math.log1p(2.0 * big_l))
    r = max(rho - variance, 1e-3 * variance)
    return BetaPrior(r / (1.0 - t), r / t)


def _log_beta_part(successes: float, failures: float, t: float, prior: BetaPrior, greater: bool) -> float:
    """ln of the restricted beta mixture's e-value. With lp(a, b) = ln(t^a (1 - t)^b / B(a, b)) (accurate however
    large a and b), ln[B(a + S, b + F) / (B(a, b) t^S (1 - t)^F)] = lp(a, b) - lp(a + S, b + F): no lgamma of a
    large count is ever differenced, and the tails stay in logs (they underflow long before the ratio does)."""
    a, b = prior.a, prior.b
    new_lower, new_upper = log_incomplete_beta(a + successes, b + failures, t)
    old_lower, old_upper = log_incomplete_beta(a, b, t)
    tails = new_upper - old_upper if greater else new_lower - old_lower
    return tails + log_beta_prefactor(a, b, t) - log_beta_prefactor(a + successes, b + failures, t)


def _log_evalue(successes: float, failures: float, t: float, prior: BetaPrior, greater: bool) -> float:
    """ln E_gt (greater) or ln E_lt for counts that may be real numbers (the needed-size search keeps a rate)."""
    log_beta = _log_beta_part(successes, failures, t, prior, greater) if prior.point_mass < 1.0 else -math.inf
    if prior.point_mass == 0.0:
        return log_beta
    # the far end: p = 1 has likelihood ratio t^-S if no trial failed (else 0); p = 0 mirrors it
    if greater:
        log_far = -successes * math.log(t) if failures == 0 else -math.inf
    else:
        log_far = -failures * math.log1p(-t) if successes == 0 else -math.inf
    return _log_add(_log_weight(prior.point_mass) + log_far, _log_weight(1.0 - prior.point_mass) + log_beta)


def rate_log_evalues(
    successes: int, trials: int, threshold: float, *, prior: BetaPrior = UNIFORM
) -> tuple[float, float]:
    """(ln E_gt, ln E_lt) after `successes` of `trials`: E_gt tests the null 'rate <= threshold' (it grows with
    evidence that the rate is above it), E_lt the null 'rate >= threshold'. Both are 1 (log 0) before any trial;
    either may be -inf where the data rule its alternative out (a point-mass-only prior). Exact to a few eps times
    the log-likelihood's size (against SciPy's betaln and betainc: at most 6e-13 relative over tests/test_anytime.py's
    grid, n up to 2000)."""
    successes, trials = check_counts(successes, trials)
    t = _check_threshold(threshold)
    failures = trials - successes
    return _log_evalue(successes, failures, t, prior, True), _log_evalue(successes, failures, t, prior, False)


def rate_log_evalues_for(
    successes: int, trials: int, threshold: float, *, at_least: bool, prior: BetaPrior = UNIFORM
) -> tuple[float, float]:
    """(ln E_for, ln E_against) of 'rate >= threshold' (at_least) or 'rate <= threshold': E_for tests the
    statement's opposite and holds the statement when it reaches 1 / held_alpha; E_against tests the statement
    and refutes it at 1 / alpha."""
    greater, less = rate_log_evalues(successes, trials, threshold, prior=prior)
    return (greater, less) if at_least else (less, greater)


# ------------------------------------------------------------------------------------------------
# Deciding along a chain of looks


@dataclass(frozen=True)
class AnytimeDecision:
    """Where a chain of looks stands: the decision at its first crossing (sticky), the look (1-based) it was made
    at, the last look's log e-values and their running maxima (valid along one nested chain of looks only)."""

    decision: str
    decided_at_look: int | None
    log_e_for: float
    log_e_against: float
    max_log_e_for: float
    max_log_e_against: float


def _crosses(log_evalue: float, level: float) -> bool:
    """E >= 1 / level (a level of 0 is never crossed)."""
    return level > 0.0 and log_evalue >= -math.log(level)


def decide_log_evalues(
    log_e_for: Sequence[float], log_e_against: Sequence[float], *, alpha: float, held_alpha: float | None = None
) -> AnytimeDecision:
    """Decide a statement from its e-values at each look of one chain (each look holding all the data of the one
    before): held at the first look where E_for >= 1 / held_alpha (default alpha), refuted at the first where
    E_against >= 1 / alpha and it is not held (decide_test's tie rule; both guarantees hold under any tie rule).
    The first crossing is final: later looks do not undo it. Inconclusive if neither ever crossed."""
    alpha = check_level("alpha", alpha)
    held_alpha = alpha if held_alpha is None else check_level("held_alpha", held_alpha)
    if len(log_e_for) != len(log_e_against) or not log_e_for:
        raise ValueError(f"one e-value per side at each look is needed, got {len(log_e_for)} and {len(log_e_against)}")
    if any(math.isnan(v) for v in (*log_e_for, *log_e_against)):
        raise ValueError("a log e-value is NaN")
    decision, look = INCONCLUSIVE, None
    for k, (e_for, e_against) in enumerate(zip(log_e_for, log_e_against), start=1):
        held, refuted = _crosses(e_for, held_alpha), _crosses(e_against, alpha)
        if held or refuted:
            decision, look = (HELD if held else REFUTED), k
            break
    return AnytimeDecision(decision, look, log_e_for[-1], log_e_against[-1], max(log_e_for), max(log_e_against))


def decide_rate_looks(
    looks: Sequence[tuple[int, int]],
    threshold: float,
    *,
    at_least: bool,
    alpha: float,
    held_alpha: float | None = None,
    prior: BetaPrior = UNIFORM,
) -> AnytimeDecision:
    """Decide 'rate >= threshold' (at_least) or 'rate <= threshold' from cumulative (successes, trials) counts,
    one pair per look, along one chain: counts of successes and of failures may only grow."""
    if not looks:
        raise ValueError("no looks to decide from")
    pairs = [rate_log_evalues_for(s, n, threshold, at_least=at_least, prior=prior) for s, n in looks]
    for (s0, n0), (s1, n1) in zip(looks, looks[1:]):
        if s1 < s0 or n1 - s1 < n0 - s0:
            raise ValueError(f"looks must be cumulative: ({s1}, {n1}) does not contain ({s0}, {n0})")
    return decide_log_evalues([p[0] for p in pairs], [p[1] for p in pairs], alpha=alpha, held_alpha=held_alpha)


def anytime_decision_counts(
    trials: int, threshold: float, *, alpha: float, held_alpha: float, prior: BetaPrior = UNIFORM
) -> tuple[int, int]:
    """For 'rate >= threshold' at one look of `trials`: (the largest success count that is refuted, or -1; the
    least that is held, or trials + 1), decide.rate_decision_counts' twin. E_lt falls and E_gt grows with the
    count (each component's likelihood ratio does), so each set is an interval found by bisection."""
    t, (_, trials) = _check_threshold(threshold), check_counts(0, trials)
    alpha, held_alpha = check_level("alpha", alpha), check_level("held_alpha", held_alpha)

    def refuted(k: int) -> bool:
        return _crosses(_log_evalue(k, trials - k, t, prior, False), alpha)

    def held(k: int) -> bool:
        return _crosses(_log_evalue(k, trials - k, t, prior, True), held_alpha)

    return first_true(lambda k: not refuted(k), 0, trials + 1) - 1, first_true(held, 0, trials + 1)


# The largest sample size the needed-trials searches look at (trials_to_decide, anytime_trials_to_decide); past it
# they return None and the messages say "more than" it (no_trials_reason).
NEEDED_TRIALS_MOST = 10_000_000


def no_trials_reason(
    rate: float,
    threshold: float,
    alpha: float,
    *,
    at_least: bool,
    held_alpha: float | None = None,
    most: int = NEEDED_TRIALS_MOST,
) -> str:
    """What None from trials_to_decide or anytime_trials_to_decide means for these arguments, as the inconclusive
    message says it: the rate sits on the threshold (no sample size decides it at that rate), the side that would
    decide has level 0 (it decides nothing), or more than `most` trials in total would be needed."""
    if rate == threshold:
        return f"the observed rate equals the threshold {threshold:g}: no number of trials decides it at that rate"
    statement_side = rate > threshold if at_least else rate < threshold
    level = (alpha if held_alpha is None else held_alpha) if statement_side else alpha
    if level == 0.0:
        side = "the statement's side" if statement_side else "the refuting side (a false alarm of 0)"
        return f"{side} has level 0, so no number of trials decides it"
    return f"more than {most:,} trials in total would be needed to decide it at the observed rate"


def anytime_trials_to_decide(
    rate: float,
    threshold: float,
    alpha: float,
    *,
    at_least: bool,
    trials: int = 1,
    held_alpha: float | None = None,
    prior: BetaPrior = UNIFORM,
    most: int = NEEDED_TRIALS_MOST,
) -> int | None:
    """The least total number of trials, at least `trials`, at which the e-process would decide 'rate >= threshold'
    (at_least) or 'rate <= threshold' with the observed `rate` kept (rate * N successes, a real number, as
    decide.trials_to_decide keeps it). Exact: ln E(rN, N) is a cumulant generating function in N (the log of
    the prior mean of exp(N g(p))), so convex and 0 at N = 0, and once above ln(1 / level) > 0 it stays above;
    doubling then bisection finds the least N. None when the rate sits on the threshold, the deciding side's level
    is 0, or the answer exceeds `most` (NEEDED_TRIALS_MOST, 1e7): no_trials_reason says which, in words."""
    rate, t = check_probability("rate", rate), _check_threshold(threshold)
    alpha = check_level("alpha", alpha)
    held_alpha = alpha if held_alpha is None else check_level("held_alpha", held_alpha)
    if rate == t:
        return None
    greater = rate > t  # the side whose e-value grows: E_gt when the rate lies above the threshold
    level = held_alpha if greater == at_least else alpha
    if level == 0.0:
        return None

    def decides(n: int) -> bool:
        return _crosses(_log_evalue(rate * n, (1.0 - rate) * n, t, prior, greater), level)

    return least_size(decides, max(1, trials), most)


# ------------------------------------------------------------------------------------------------
# The confidence sequence: the thresholds an e-value at alpha does not reject


def _edge(rejected: Callable[[float], bool], far: float, near: float) -> float:
    """The edge between `far` (0 or 1, where `rejected` holds in the limit) and `near` (not rejected): bisection on
    the distance from `far`, geometric while the two ends differ by more than 4x, to the last double. Returns the
    rejected end, so the interval it bounds contains the whole confidence set."""
    sign = 1.0 if far == 0.0 else -1.0
    out_distance, in_distance = 0.0, abs(near - far)
    for _ in range(10_000):  # about 60 steps in practice; the bound only guards the loop
        if out_distance == 0.0:
            distance = 0.5 * in_distance
        elif in_distance > 4.0 * out_distance:
            distance = math.sqrt(out_distance * in_distance)
        else:
            distance = 0.5 * (out_distance + in_distance)
        point = far + sign * distance
        ends = (far + sign * out_distance, far + sign * in_distance)
        if not out_distance < distance < in_distance or point in ends or not 0.0 < point < 1.0:
            break  # no double left between the two ends
        if rejected(point):
            out_distance = distance
        else:
            in_distance = distance
    return far + sign * out_distance


def anytime_rate_lower_bound(successes: int, trials: int, alpha: float, *, prior: BetaPrior = UNIFORM) -> float:
    """The anytime-valid lower confidence bound at level alpha, rate_lower_bound's twin: inf{t : E_gt(S, n; t) <
    1 / alpha}, so that P(the true rate ever falls below it, at any look) <= alpha. 0.0 for no successes or alpha
    = 0. Wider than Clopper-Pearson's (60 of 100 at 1e-4: 0.370 against 0.410; anytime-design.md 4.2d)."""
    successes, trials = check_counts(successes, trials)
    alpha = check_level("alpha", alpha)
    if successes == 0 or alpha == 0.0:
        return 0.0
    # E_gt <= 1 at t >= S / n (the likelihood peaks at S / n, below every component), so the edge lies below it
    return _edge(
        lambda t: _crosses(_log_evalue(successes, trials - successes, t, prior, True), alpha), 0.0, successes / trials
    )


def anytime_rate_upper_bound(successes: int, trials: int, alpha: float, *, prior: BetaPrior = UNIFORM) -> float:
    """The anytime-valid upper confidence bound at level alpha, rate_upper_bound's twin: sup{t : E_lt(S, n; t) <
    1 / alpha}. 1.0 when every trial succeeded or alpha = 0."""
    successes, trials = check_counts(successes, trials)
    alpha = check_level("alpha", alpha)
    if successes == trials or alpha == 0.0:
        return 1.0
    return _edge(
        lambda t: _crosses(_log_evalue(successes, trials - successes, t, prior, False), alpha), 1.0, successes / trials
    )


# ------------------------------------------------------------------------------------------------
# Two proportions: the conditional e-value of one batch


def _log_choose(n: int, k: int) -> float:
    return math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1)


def _log_sum(values: Iterable[float]) -> float:
    values = list(values)
    top = max(values)
    return top if top == -math.inf else top + math.log(sum(math.exp(v - top) for v in values))


# Terms of a log-concave sum more than this many nats below its largest are left out: each is under e^-60 (1e-26) of
# the sum, and past the first such term the rest fall at least geometrically, so what is left out is below 1e-20 of it.
_TAIL_NATS = 60.0


def _tilted(log_weight: Callable[[int], float], log_psi: float) -> Callable[[int], float]:
    """The log weight x -> log_weight(x) + x ln psi: the conditional law tilted by the odds ratio psi."""
    return lambda x: log_weight(x) + x * log_psi


def _log_sum_log_concave(term: Callable[[int], float], low: int, high: int) -> float:
    """ln sum_{x=low..high} e^term(x) for a log-concave `term` (differences falling in x), from the terms within
    _TAIL_NATS of the largest only: the work and memory grow with the spread of the terms (about the square root of
    the counts for a hypergeometric law), not with high - low."""
    lo = first_true(lambda x: term(x + 1) - term(x) <= 0.0, low, high)  # the mode: the first x whose next is smaller
    top = term(lo)
    if top == -math.inf:
        return top
    total = 1.0
    for step in (-1, 1):
        x = lo + step
        while low <= x <= high:
            value = term(x) - top
            total += math.exp(value)
            if value < -_TAIL_NATS:
                break
            x += step
    return top + math.log(total)


def two_proportions_log_evalue(k_a: int, n_a: int, k_b: int, n_b: int, *, w_inf: float = 0.5) -> float:
    """ln E of one batch for 'p_A > p_B' (null p_A <= p_B), from k_a of n_a and k_b of n_b: given the margins,
    k_a follows Fisher's noncentral hypergeometric law with odds ratio psi, and the null is psi <= 1. E mixes
    the likelihood ratios P_psi(k_a) / P_1(k_a) over psi in ODDS_RATIOS with weight 1 - w_inf, and with weight
    w_inf the most extreme table's indicator over its null probability (psi -> infinity; there it is w_inf /
    Fisher's one-sided p). Each ratio grows with k_a, and the law of k_a under psi <= 1 is stochastically
    smaller than under psi = 1, so E's conditional mean is at most 1. Batches multiply (add the logs); there is no
    peeking inside a batch. The mirror statement swaps the arms. Each normalising sum is over the terms near its
    mode (the law is log-concave): a billion trials per arm take a fraction of a second and no array."""
    k_a, n_a = check_counts(k_a, n_a)
    k_b, n_b = check_counts(k_b, n_b)
    w_inf = check_probability("w_inf", w_inf)
    total = k_a + k_b
    low, high = max(0, total - n_b), min(total, n_a)

    def log_weight(x: int) -> float:
        return _log_choose(n_a, x) + _log_choose(n_b, total - x)

    log_null = _log_sum_log_concave(log_weight, low, high)
    log_p1 = log_weight(k_a) - log_null
    ratios = []
    for psi in ODDS_RATIOS:
        log_psi = math.log(psi)
        log_norm = _log_sum_log_concave(_tilted(log_weight, log_psi), low, high)
        ratios.append(k_a * log_psi + log_null - log_norm)
    log_mixture = _log_sum(ratios) - math.log(len(ratios))
    log_extreme = -log_p1 if k_a == high else -math.inf
    return _log_add(_log_weight(w_inf) + log_extreme, _log_weight(1.0 - w_inf) + log_mixture)


# ------------------------------------------------------------------------------------------------
# Combining, and tests with no e-process


def _check_log_evalues(log_evalues: Iterable[float]) -> list[float]:
    values = [float(v) for v in log_evalues]
    if not values or any(math.isnan(v) for v in values):
        raise ValueError(f"log e-values must be a non-empty sequence of numbers, got {values!r}")
    return values


def product_log_evalue(log_evalues: Iterable[float]) -> float:
    """ln of the product of e-values: an e-value when they come from independent data, or sequentially (each
    valid given the ones before). For one rate's beta mixture, pooling the counts is the sequential product
    with each next batch under the posterior (BetaPrior.after), never worse than multiplying e-values that
    each started from the prior (anytime-design.md 4.4: 0.81 against 0.13 with 16 runs)."""
    values = _check_log_evalues(log_evalues)
    return -math.inf if -math.inf in values else math.fsum(values)


def average_log_evalue(log_evalues: Iterable[float], weights: Sequence[float] | None = None) -> float:
    """ln of a weighted mean of e-values (equal weights by default): an e-value under any dependence (Vovk &
    Wang 2021), for runs whose independence cannot be asserted, such as two runs of one seed."""
    values = _check_log_evalues(log_evalues)
    weights = [1.0] * len(values) if weights is None else [float(w) for w in weights]
    if len(weights) != len(values) or any(not w >= 0.0 for w in weights) or not sum(weights) > 0.0:
        raise ValueError(f"weights must be {len(values)} numbers >= 0 with a positive sum, got {weights!r}")
    return _log_sum(_log_weight(w) + v for w, v in zip(weights, values)) - math.log(math.fsum(weights))


def round_alpha(alpha: float, round_number: int) -> float:
    """The level of continuation round k = 1, 2, ... for a test with no e-process (KS, trend tests, other
    p-values), each round testing all the data so far: 6 alpha / (pi^2 k^2), which sums to alpha over all
    rounds (0.608 alpha, 0.152 alpha, 0.068 alpha, ...). By the union bound the false alarm stays at most alpha
    under any rule for continuing; it needs only p-values."""
    alpha = check_level("alpha", alpha)
    if isinstance(round_number, bool) or not isinstance(round_number, int) or round_number < 1:
        raise ValueError(f"round_number must be an integer >= 1, got {round_number!r}")
    return 6.0 * alpha / (math.pi**2 * round_number**2)
