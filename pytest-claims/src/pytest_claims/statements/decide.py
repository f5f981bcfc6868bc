"""Statistical statements with three outcomes: held, refuted, inconclusive.

A statement about a rate, a mean or an effect is decided by two one-sided bounds: held when the bound
on the statement's side, at the confidence the statement states (`held_confidence`, e.g. 99%), clears
the threshold; refuted when the bound on the other side, at the level its registry record states
(`false_alarm` for the tier: `alpha`), clears it the other way; inconclusive when neither does. So a
true statement is refuted with probability at most its registered false alarm, whatever the master
seed, and shown at the confidence it states; a statement the sample cannot decide says so (with the
sample size that would decide it at the observed rate, where one can be computed) instead of passing or
failing on the draw.

Pure Python (math and statistics only): the binomial bounds are exact Clopper-Pearson bounds from the
regularized incomplete beta (`pytest_claims.stats.binomial`), so the plugin needs no SciPy.
"""

from __future__ import annotations

import math
from statistics import NormalDist
from typing import Any, Callable

from pytest_claims.anytime.evalues import NEEDED_TRIALS_MOST, no_trials_reason
from pytest_claims.statements.anytime_batches import decide_test_spent
from pytest_claims.statements.anytime_rate import chosen_prior, decide_rate_anytime
from pytest_claims.stats.binomial import binomial_cdf as _binomial_cdf
from pytest_claims.stats.binomial import (
    check_level,
    check_probability,
    kept_rate_bound,
    not_a_number,
    rate_lower_bound,
    rate_upper_bound,
)
from pytest_claims.context import registered_decision
from pytest_claims.statements.decision import (
    DECIDING_CHANCE,
    Decision,
    check_registered,
    conclude,
    fixed_sample_tail,
    held_level,
)
from pytest_claims.outcomes import HELD, INCONCLUSIVE, REFUTED, StatementInconclusive
from pytest_claims.stats.search import first_true, least_size
from pytest_claims.stats.shown_numbers import significant


def statement_inconclusive(
    message: str,
    *,
    needed: int | None = None,
    done: int | None = None,
    no_needed_reason: str = "",
    can_continue: bool = True,
) -> None:
    """End the statement test as inconclusive; never returns (raises StatementInconclusive). `message`: what
    straddled what; `needed`: the size of a *fresh* run that would decide it with a 90% chance at the observed rate,
    or None where none is given; `done`: the size this run had; `no_needed_reason`: where `needed` is None, why
    (anytime.no_trials_reason's words: "more than 10,000,000 trials in total would be needed ..."), so the hint
    never just vanishes. A fixed-sample decision cannot be looked at again after more data of the same stream (its
    false alarm would no longer hold: the audit of issue 47 measured 1.9-2.7 x alpha), so the message says how to
    decide it validly instead: register the statement anytime and continue it (only where an anytime route exists:
    `can_continue` False for a decision that has none, such as a relative standard error or a family), or run it
    afresh on a new stream (the ending decision.ending builds)."""
    __tracebackhide__ = True
    raise StatementInconclusive(message + fixed_sample_tail(needed, done, no_needed_reason, can_continue), needed)


# ------------------------------------------------------------------------------------------------
# Exact binomial bounds: pytest_claims.stats.binomial (the regularized incomplete beta, exact to rounding up to
# n = 1e9 in well under a millisecond), re-exported here under the names the helpers below use.


def trials_to_decide(
    rate: float,
    threshold: float,
    alpha: float,
    *,
    at_least: bool,
    trials: int = 1,
    held_alpha: float | None = None,
    most: int = NEEDED_TRIALS_MOST,
) -> int | None:
    """The least number of trials, at least `trials` (those already run), that would decide 'rate >= threshold'
    (at_least) or 'rate <= threshold' with the observed `rate` kept, by the exact Clopper-Pearson bounds
    decide_rate decides by: the statement's side at `held_alpha` (default alpha), the other side at `alpha`.
    The count at N trials is rate * N, a real number, in the bounds' beta-quantile form
    (binomial.kept_rate_bound): the bound then moves smoothly with N, where a whole count would jump by one
    success and make the answer hinge on rounding. Only one side can decide: the held side when the rate lies on
    the statement's side of the threshold, else the refuting side; that bound nears the rate as N grows, and
    the answer is found by doubling then bisection (about 2 log2(N / trials) bounds; tests/test_needed_trials.py
    checks it against a scan over every N).

    Returns the number of trials in total, or None: when the rate sits on the threshold (no sample size decides
    it at that rate), when the deciding side's level is 0, or when the answer exceeds `most` (NEEDED_TRIALS_MOST,
    1e7, by default); `anytime.no_trials_reason(rate, threshold, alpha, at_least=..., held_alpha=..., most=...)`
    says which, in the words decide_rate's inconclusive message uses."""
    rate, threshold = check_probability("rate", rate), check_probability("threshold", threshold)
    check_level("alpha", alpha)
    held_alpha = alpha if held_alpha is None else held_alpha
    check_level("held_alpha", held_alpha)
    if rate == threshold:
        return None
    statement_side = rate > threshold if at_least else rate < threshold
    level = held_alpha if statement_side else alpha
    if level == 0.0:
        return None
    # The deciding bound: the lower one when the rate lies above the threshold (it must come up to it), else the
    # upper one; it clears the threshold as decide_rate's comparisons say (held: >= or <=; refuted: strictly).
    above = rate > threshold

    def decides(n: int) -> bool:
        bound = kept_rate_bound(rate, n, level, lower=above)
        if above:
            return bound >= threshold if statement_side else bound > threshold
        return bound <= threshold if statement_side else bound < threshold

    return least_size(decides, max(1, trials), most)


# ------------------------------------------------------------------------------------------------
# The chance of an inconclusive end

# decide_rate computes the chance of an inconclusive end up to this many trials (binomial.py's exact range): its
# search evaluates about 20 binomial tails, each a continued fraction of constant cost (under 1 ms in all).
INCONCLUSIVE_CHANCE_MAX_TRIALS = 1_000_000_000


def _near_quantile(predicate: Callable[[int], bool], n: int, centre: float, spread: float) -> int:
    """first_true over [0, n + 1], searched first in a window around `centre` (the normal approximation's guess:
    a few counts off), then in one of 10 spreads, then everywhere, so it costs about 8 tail evaluations rather
    than log2(n)."""
    for width in (8 + 0.25 * spread, 10 * spread + 2):
        lo, hi = max(0, math.floor(centre - width)), min(n + 1, math.ceil(centre + width))
        if (lo == 0 or not predicate(lo - 1)) and (hi == n + 1 or predicate(hi)):
            return first_true(predicate, lo, hi)
    return first_true(predicate, 0, n + 1)


def rate_decision_counts(trials: int, threshold: float, *, alpha: float, held_alpha: float) -> tuple[int, int]:
    """For 'rate >= threshold' decided by decide_rate(at_least=True): (the largest success count that is refuted,
    or -1; the least that is held, or trials + 1). Counts strictly between them end inconclusive.

    By the Clopper-Pearson duality: the lower bound at held_alpha clears t exactly when P_t(X >= k) <= held_alpha,
    and the upper bound at alpha lies below t exactly when P_t(X <= k) < alpha, so both are binomial quantiles at
    p = t (tails by _binomial_cdf)."""
    n, t = trials, threshold
    z = NormalDist().inv_cdf(1.0 - min(0.5, alpha, held_alpha))
    spread = max(1.0, math.sqrt(n * t * (1.0 - t)))
    if t <= 0.0:  # the lower bound is 0 at k = 0 by definition, so every count holds (the duality needs k >= 1)
        return -1, 0
    held = _near_quantile(lambda k: _binomial_cdf(n - k, n, 1.0 - t) <= held_alpha, n, n * t + z * spread, spread)
    refuted = _near_quantile(lambda k: _binomial_cdf(k, n, t) >= alpha, n, n * t - z * spread, spread) - 1
    return refuted, held


def inconclusive_chance(
    trials: int, threshold: float, rate: float, *, at_least: bool, alpha: float, held_alpha: float | None = None
) -> float | None:
    """The probability that decide_rate ends inconclusive over `trials` trials when the true rate is `rate`:
    P(refuted count < X < held count) for X ~ Binomial(trials, rate). None past INCONCLUSIVE_CHANCE_MAX_TRIALS."""
    if trials > INCONCLUSIVE_CHANCE_MAX_TRIALS:
        return None
    held_alpha = alpha if held_alpha is None else held_alpha
    n, t = trials, threshold
    if at_least:
        refuted, held = rate_decision_counts(n, t, alpha=alpha, held_alpha=held_alpha)
        # The duality's counts, settled on decide_rate's own comparisons: where a bound equals the threshold to
        # rounding, the tail and the inverted bound can fall on either side of it (seen with n <= 3)
        held = _least_in(lambda k: rate_lower_bound(k, n, held_alpha) >= t, held, n)
        refuted = _largest_in(lambda k: rate_upper_bound(k, n, alpha) < t, refuted, n)
        below, above = refuted, held  # inconclusive: refuted < X < held
    else:  # 'rate <= t' in n - X is 'rate >= 1 - t', with the same bounds mirrored
        refuted, held = rate_decision_counts(n, 1.0 - t, alpha=alpha, held_alpha=held_alpha)
        held = _largest_in(lambda k: rate_upper_bound(k, n, held_alpha) <= t, n - held, n)
        refuted = _least_in(lambda k: rate_lower_bound(k, n, alpha) > t, n - refuted, n)
        below, above = held, refuted  # inconclusive: held < X < refuted
    if above - below <= 1:
        return 0.0
    chance = _binomial_cdf(above - 1, n, rate) - _binomial_cdf(below, n, rate)
    return min(1.0, max(0.0, chance))


def trials_for_chance(
    rate: float,
    threshold: float,
    alpha: float,
    *,
    at_least: bool,
    held_alpha: float | None = None,
    chance: float = DECIDING_CHANCE,
    most: int = 10_000_000,
) -> int | None:
    """The size of a fresh run that decide_rate decides (held or refuted) with probability at least `chance` were
    the true rate the observed `rate`: exact binomial, 1 - inconclusive_chance. Found by doubling from the size at
    which the deciding bound first reaches the threshold (trials_to_decide: about a one-half chance there), then
    bisection; the chance is a sawtooth in N, so the answer is a size at which it holds, the least up to a tooth.
    `alpha`: the refuting level, `held_alpha` the holding one (default alpha), `at_least` the statement's side, as
    decide_rate takes them. Returns the size, or None when the rate sits on the threshold, the deciding side's level
    is 0, or the answer exceeds `most`."""
    held_alpha = alpha if held_alpha is None else held_alpha
    start = trials_to_decide(rate, threshold, alpha, at_least=at_least, held_alpha=held_alpha, most=most)
    if start is None or not 0.0 < chance < 1.0:
        return None

    def enough(n: int) -> bool:
        left = inconclusive_chance(n, threshold, rate, at_least=at_least, alpha=alpha, held_alpha=held_alpha)
        return left is not None and 1.0 - left >= chance

    return least_size(enough, start, most)


def _least_in(member: Callable[[int], bool], guess: int, n: int) -> int:
    """The least count in [0, n] of a set closed upward (`member` false, then true), n + 1 if none is, from a guess
    a count or two off."""
    guess = min(max(guess, 0), n + 1)
    while guess > 0 and member(guess - 1):
        guess -= 1
    while guess <= n and not member(guess):
        guess += 1
    return guess


def _largest_in(member: Callable[[int], bool], guess: int, n: int) -> int:
    """The largest count in [0, n] of a set closed downward (`member` true, then false), -1 if none is."""
    guess = min(max(guess, -1), n)
    while guess < n and member(guess + 1):
        guess += 1
    while guess >= 0 and not member(guess):
        guess -= 1
    return guess


# ------------------------------------------------------------------------------------------------
# Deciding: each route's pure function returns a Decision; decision.conclude records it and ends the test


def interval_decision(
    lower: float,
    upper: float,
    threshold: float,
    *,
    at_least: bool,
    alpha: float,
    what: str,
    needed: int | None = None,
    done: int | None = None,
    held_confidence: float | None = None,
    inconclusive_chance: float | None = None,
    no_needed_reason: str = "",
    can_continue: bool = True,
    statement: str = "value",
    records: tuple[tuple[str, dict[str, Any]], ...] = (),
) -> Decision:
    """decide_interval's decision, with no side effect: 'value >= threshold' (at_least) or 'value <= threshold' from
    the bounds `lower` and `upper`, held when the one on the statement's side clears the threshold, refuted when the
    other lies wholly beyond it, inconclusive otherwise; `statement` names the value in the record ("value",
    "rate"); `records` are recorded before it. The other arguments are decide_interval's. Returns the Decision."""
    held_level(alpha, held_confidence=held_confidence)
    for name, value in (("lower", lower), ("upper", upper), ("threshold", threshold)):
        if not_a_number(value):
            raise ValueError(f"{name} must be a number, got {value!r}")
    if lower > upper:
        raise ValueError(f"lower must not exceed upper, got [{lower!r}, {upper!r}]")
    side = ">=" if at_least else "<="
    found: dict[str, Any] = {
        "lower": lower,
        "upper": upper,
        "threshold": threshold,
        "statement": f"value {side} {threshold:g}",
        "held_confidence": held_confidence if held_confidence is not None else 1 - alpha,
        "refute_alpha": alpha,
    }
    held = lower >= threshold if at_least else upper <= threshold
    refuted = upper < threshold if at_least else lower > threshold
    found["decision"] = HELD if held else REFUTED if refuted else INCONCLUSIVE
    if inconclusive_chance is not None:
        found["inconclusive_chance"] = inconclusive_chance
    if needed is not None:
        found["needed_to_decide"] = needed
    interval = (
        f"[{significant(lower)}, {significant(upper)}] (one-sided bounds at confidence "
        f"{significant(found['held_confidence'], 6)} to hold, {significant(1 - alpha, 6)} to refute: "
        f"false alarm {significant(alpha)})"
    )
    return Decision(
        what,
        found["decision"],
        f"{statement} {side} {threshold:g}",
        found,
        records,
        because=f"the interval {interval} lies wholly {'below' if at_least else 'above'} {threshold:g}"
        if refuted
        else f"the interval {interval} straddles {threshold:g}",
        needed=needed,
        done=done,
        no_needed_reason=no_needed_reason,
        can_continue=can_continue,
    )


def decide_interval(
    lower: float,
    upper: float,
    threshold: float,
    *,
    at_least: bool,
    alpha: float,
    what: str,
    needed: int | None = None,
    done: int | None = None,
    held_confidence: float | None = None,
    inconclusive_chance: float | None = None,
    no_needed_reason: str = "",
    can_continue: bool = True,
) -> dict[str, Any]:
    """Decide 'value >= threshold' (at_least) or 'value <= threshold' from two one-sided bounds, `lower` and
    `upper`: the one on the statement's side at `held_confidence`, the other at 1 - alpha (the registered false
    alarm).
    Held when the first clears the threshold, refuted (ClaimRefuted) when the second lies wholly on the
    other side, inconclusive otherwise. `inconclusive_chance`, where the caller can compute it, is recorded
    beside `refute_alpha`: the chance of an inconclusive end at this sample size. An alpha of 0 (a false alarm
    of 0 registered) refutes nothing; bounds that are not numbers or not in order are a caller's error.
    `needed`, `done`, `no_needed_reason` and `can_continue` go to the inconclusive message (statement_inconclusive:
    `can_continue` False where the decision has no anytime route to register and continue). Returns the
    decision's record (also recorded under `what`) when held; raises ClaimRefuted or StatementInconclusive.
    interval_decision is the same decision as a Decision, with no side effect."""
    __tracebackhide__ = True
    return conclude(
        interval_decision(
            lower,
            upper,
            threshold,
            at_least=at_least,
            alpha=alpha,
            what=what,
            needed=needed,
            done=done,
            held_confidence=held_confidence,
            inconclusive_chance=inconclusive_chance,
            no_needed_reason=no_needed_reason,
            can_continue=can_continue,
        )
    ).record


def rate_decision(
    successes: int,
    trials: int,
    threshold: float,
    *,
    at_least: bool,
    alpha: float,
    what: str,
    held_confidence: float | None = None,
) -> Decision:
    """decide_rate's fixed-sample decision, with no side effect: the exact Clopper-Pearson bounds decided as
    interval_decision decides them, the counts recorded before it (`"<what> counts"`), the chance of an
    inconclusive end and, when inconclusive, the size of a fresh run that would decide it. Returns the Decision."""
    if trials <= 0:
        raise ValueError(f"{what}: no trials")
    held_alpha = held_level(alpha, held_confidence=held_confidence)
    threshold = check_probability("threshold", threshold)
    if at_least:
        lower, upper = rate_lower_bound(successes, trials, held_alpha), rate_upper_bound(successes, trials, alpha)
    else:
        lower, upper = rate_lower_bound(successes, trials, alpha), rate_upper_bound(successes, trials, held_alpha)
    held = lower >= threshold if at_least else upper <= threshold
    refuted = upper < threshold if at_least else lower > threshold
    rate = successes / trials
    needed = (
        None if held or refuted else trials_for_chance(rate, threshold, alpha, at_least=at_least, held_alpha=held_alpha)
    )
    return interval_decision(
        lower,
        upper,
        threshold,
        at_least=at_least,
        alpha=alpha,
        what=what,
        needed=needed,
        done=trials,
        held_confidence=1 - held_alpha,
        inconclusive_chance=inconclusive_chance(
            trials, threshold, rate, at_least=at_least, alpha=alpha, held_alpha=held_alpha
        )
        if min(alpha, held_alpha) > 0  # at level 0 no count decides: nothing to compute
        else None,
        no_needed_reason=no_trials_reason(rate, threshold, alpha, at_least=at_least, held_alpha=held_alpha)
        if needed is None
        else "",
        statement="rate",
        records=((what + " counts", {"successes": successes, "trials": trials, "rate": rate}),),
    )


def decide_rate(
    successes: int,
    trials: int,
    threshold: float,
    *,
    at_least: bool,
    alpha: float,
    what: str,
    held_confidence: float | None = None,
    anytime: Any = None,
    batch: int | None = None,
) -> dict[str, Any]:
    """Decide a binomial rate against a threshold by exact Clopper-Pearson bounds: the statement's side at
    held_confidence (default 1 - alpha), the other side at 1 - alpha. Its evidence also holds the chance of an
    inconclusive end at this many trials were the true rate the observed one (`inconclusive_chance`; up to
    INCONCLUSIVE_CHANCE_MAX_TRIALS trials).

    `anytime` (True: a uniform prior; a BetaPrior; a planned number of trials), or the statement's registered
    `decision = "anytime"`, decides by the anytime-valid e-process instead, over the statement's ledger with this
    run's batch (`batch`: the claims_batch fixture) added: pytest_claims.statements.anytime_rate. None (the default)
    keeps the registry's choice, and the fixed-sample rule where it says none; a call that contradicts it is refused.

    `successes` of `trials`; `at_least`: True for 'rate >= threshold', False for 'rate <= threshold'; `what` names
    the rate in messages and keys its evidence (`what` and `"<what> counts"`). Returns the decision's record when
    held; raises ClaimRefuted (refuted) or StatementInconclusive (neither, saying how many trials in total would
    decide it, or why no number is given: trials_to_decide). rate_decision is the fixed-sample decision as a
    Decision, with no side effect."""
    __tracebackhide__ = True
    if trials <= 0:
        raise ValueError(f"{what}: no trials")
    held_alpha = held_level(alpha, held_confidence=held_confidence)
    threshold = check_probability("threshold", threshold)
    prior = chosen_prior(anytime, threshold, alpha)
    if prior is not None:
        return decide_rate_anytime(
            successes,
            trials,
            threshold,
            at_least=at_least,
            alpha=alpha,
            held_alpha=held_alpha,
            what=what,
            prior=prior,
            batch=batch,
        )
    if batch is not None:
        raise ValueError(f"{what}: batch= is for anytime decisions (a fixed-sample decision cannot be continued)")
    check_registered(what, "decide_rate", anytime=False)
    decided = rate_decision(
        successes, trials, threshold, at_least=at_least, alpha=alpha, what=what, held_confidence=held_confidence
    )
    return conclude(decided).record


def test_decision(
    p_for: float, p_against: float, *, alpha: float, what: str, held_alpha: float | None = None
) -> Decision:
    """decide_test's fixed-sample decision, with no side effect: held when p_for < held_alpha (None: alpha), refuted
    when p_against < alpha and not held, inconclusive otherwise. Returns the Decision."""
    shown_at = held_level(alpha, held_alpha)
    held = p_for < shown_at
    refuted = p_against < alpha and not held
    word = HELD if held else REFUTED if refuted else INCONCLUSIVE
    found = {"p_for": p_for, "p_against": p_against, "held_alpha": shown_at, "refute_alpha": alpha, "decision": word}
    because = (
        f"the opposite effect is significant (p = {p_against:.3g} < {alpha:g}; for the statement p = {p_for:.3g})"
        if refuted
        else f"neither the effect (p = {p_for:.3g} against {shown_at:g}) "
        f"nor its opposite (p = {p_against:.3g} against {alpha:g}) is significant"
    )
    return Decision(what, word, "the effect", found, because=because)


def decide_test(
    p_for: float,
    p_against: float,
    *,
    alpha: float,
    what: str,
    held_alpha: float | None = None,
    batch: int | None = None,
    round_data: str | None = None,
) -> dict[str, Any]:
    """Decide an effect by two one-sided tests: held when the test for the statement rejects its null at
    the level the statement states (p_for < held_alpha, default alpha), refuted when the test for the
    opposite effect rejects at the registered false alarm (p_against < alpha), inconclusive otherwise. A
    p-value that is not a number decides nothing (a t-test of fewer than two values, or of no spread, gives one);
    any other outside [0, 1] is a caller's error, as are levels outside [0, 0.5) (alpha 0 refutes nothing).

    A statement registered `decision = "anytime"` spends its levels over continuation rounds instead (a p-value read
    again after more data loses its level): round k, this run's `batch` (the claims_batch fixture) plus 1, tests at
    6 alpha / (pi^2 k^2) over the statement's ledger (pytest_claims.statements.anytime_batches.decide_test_spent). That
    is valid only when each round's p-values are of its own new batch alone, so such a call must say so,
    `round_data="batch"`; p-values of the cumulative data, whose batch sizes may follow the data, are refused
    (docs/explanation/anytime.md measures up to 3 x alpha for them).

    `what` names the effect in messages and keys its evidence. Returns the decision's record when held; raises
    ClaimRefuted or StatementInconclusive otherwise. test_decision is the fixed-sample decision as a Decision, with
    no side effect."""
    __tracebackhide__ = True
    shown_at = held_level(alpha, held_alpha)
    for name, p in (("p_for", p_for), ("p_against", p_against)):
        if not not_a_number(p):
            check_probability(name, p)
    if registered_decision().get("method") == "anytime":
        return decide_test_spent(
            p_for, p_against, alpha=alpha, held_alpha=shown_at, what=what, batch=batch, round_data=round_data
        )
    if round_data is not None:
        raise ValueError(f"{what}: round_data= is for a statement registered anytime (rounds of spent alpha)")
    if batch is not None:
        raise ValueError(f"{what}: batch= is for anytime decisions (a fixed-sample decision cannot be continued)")
    check_registered(what, "decide_test", anytime=False)
    return conclude(test_decision(p_for, p_against, alpha=alpha, what=what, held_alpha=shown_at)).record
