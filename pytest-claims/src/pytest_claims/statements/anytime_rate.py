"""decide_rate's anytime-valid branch: the beta-mixture e-process decides at its first crossing, over the ledger.

A statement decided by `decide_rate(..., anytime=...)`, or registered with `decision = "anytime"`, is decided by
the beta-mixture e-processes of pytest_claims.anytime.evalues instead of Clopper-Pearson bounds: held at the first look
where E_for >= 1 / held_alpha, refuted at the first where E_against >= 1 / alpha (and not held), inconclusive while
neither has crossed. By Ville's inequality that keeps the registered false alarm however many looks are taken, so an
inconclusive statement may be continued (pytest_claims.statements.ledger): each run adds a batch from a fresh stream,
the decision is made on the cumulative counts along the ledger's chain, and the first crossing is final. The method
and its prior are chosen before the data: the registry's `decision` and the call's `anytime` must agree.
"""

from __future__ import annotations

import math
import operator
from dataclasses import asdict
from typing import Any, Literal

from pytest_claims import context
from pytest_claims.anytime.evalues import (
    UNIFORM,
    BetaPrior,
    anytime_rate_lower_bound,
    anytime_rate_upper_bound,
    anytime_trials_to_decide,
    decide_rate_looks,
    no_trials_reason,
    planned_prior,
)
from pytest_claims.anytime.chain_kinds import floored
from pytest_claims.statements.decision import ChainRecord, Decision, conclude, held_level
from pytest_claims.stats.binomial import whole_counts
from pytest_claims.statements.ledger import extend_ledger
from pytest_claims.outcomes import INCONCLUSIVE, REFUTED
from pytest_claims.stats.shown_numbers import significant


def _as_prior(anytime: Any, threshold: float, alpha: float, source: str) -> BetaPrior:
    """The prior that `anytime` names: True (uniform), a BetaPrior, or a planned number of trials."""
    if anytime is True:
        return UNIFORM
    if isinstance(anytime, BetaPrior):
        return anytime
    try:
        planned = operator.index(anytime)
    except TypeError:
        raise TypeError(f"{source} must be None, True, a BetaPrior or a planned number of trials, got {anytime!r}")
    return planned_prior(threshold, planned, alpha)


def _registered_prior(decision: dict[str, Any], threshold: float, alpha: float) -> BetaPrior | None | Literal[False]:
    """The registry's choice: False (fixed-sample), a prior (anytime), or None (the record says nothing)."""
    if not decision:
        return None
    if decision["method"] == "fixed":
        return False
    if "prior" in decision:
        return BetaPrior(**decision["prior"])
    return _as_prior(decision.get("plan", True), threshold, alpha, "the registry's decision")


def chosen_prior(anytime: Any, threshold: float, alpha: float) -> BetaPrior | None:
    """The prior decide_rate decides by (None: the fixed-sample rule), from the call's `anytime` and the running
    statement's registered `decision`. The registry's choice stands where the call says nothing; a call that
    says otherwise is refused, so the method cannot be chosen after the data."""
    registered = _registered_prior(context.registered_decision(), threshold, alpha)
    if anytime is None:
        return registered or None
    called = None if anytime is False else _as_prior(anytime, threshold, alpha, "anytime")
    if registered is not None and (registered or None) != called:
        said = "fixed-sample" if registered is False else f"anytime with {registered}"
        raise ValueError(
            f"decide_rate(anytime={anytime!r}) differs from the statement's registered decision ({said}): "
            "the method is chosen before the data, in the registry; drop the argument or change the record"
        )
    return called


def _parameters(
    what: str, threshold: float, at_least: bool, alpha: float, held_alpha: float, prior: BetaPrior
) -> dict[str, Any]:
    return {
        "what": what,
        "threshold": threshold,
        "at_least": at_least,
        "alpha": alpha,
        "held_alpha": held_alpha,
        "prior": asdict(prior),
    }


def _bounds(
    batches: list[dict[str, Any]], at_least: bool, alpha: float, held_alpha: float, prior: BetaPrior
) -> tuple[float, float]:
    """The anytime confidence sequence after the last look: the intersection of every look's interval (valid along
    one chain), the lower bound at the statement's level when it says 'rate >=', else the upper one."""
    low_level, high_level = (held_alpha, alpha) if at_least else (alpha, held_alpha)
    lower, upper = 0.0, 1.0
    for entry in batches:
        s, n = entry["cum_successes"], entry["cum_trials"]
        lower = max(lower, anytime_rate_lower_bound(s, n, low_level, prior=prior))
        upper = min(upper, anytime_rate_upper_bound(s, n, high_level, prior=prior))
    return lower, upper


def rate_chain_decision(parameters: dict[str, Any], batches: list[dict[str, Any]], note: str = "") -> Decision:
    """The e-process's decision of a rate chain at its first crossing, with no side effect: `parameters` the
    statement's (_parameters), `batches` the ledger's with this run's, `note` what the ledger said. The record holds
    the counts' anytime interval and the "anytime" block (docs/explanation/anytime-design.md 3.5, with the chain's
    parameters); the counts are recorded before it; an inconclusive decision carries the trials in total that would
    decide it at the observed rate (or why none is given). Returns the Decision."""
    what, threshold, at_least = parameters["what"], parameters["threshold"], parameters["at_least"]
    alpha, held_alpha, prior = parameters["alpha"], parameters["held_alpha"], BetaPrior(**parameters["prior"])
    looks = [(b["cum_successes"], b["cum_trials"]) for b in batches]
    decided = decide_rate_looks(looks, threshold, at_least=at_least, alpha=alpha, held_alpha=held_alpha, prior=prior)
    total_s, total_n = looks[-1]
    rate = total_s / total_n
    lower, upper = _bounds(batches, at_least, alpha, held_alpha, prior)
    needed = None
    if decided.decision == INCONCLUSIVE:
        needed = anytime_trials_to_decide(
            rate, threshold, alpha, at_least=at_least, trials=total_n, held_alpha=held_alpha, prior=prior
        )
    statement = f"rate {'>=' if at_least else '<='} {threshold:g}"
    found = {
        "lower": lower,
        "upper": upper,
        "threshold": threshold,
        "statement": statement,
        "held_confidence": 1 - held_alpha,
        "refute_alpha": alpha,
        "decision": decided.decision,
        **({"needed_to_decide": needed} if needed is not None else {}),
        "anytime": {
            "method": "beta-mixture",
            "parameters": parameters,
            "prior": asdict(prior),
            "held_alpha": held_alpha,
            "refute_alpha": alpha,
            "log_e_for": floored(decided.log_e_for),
            "log_e_against": floored(decided.log_e_against),
            "max_log_e_for": floored(decided.max_log_e_for),
            "max_log_e_against": floored(decided.max_log_e_against),
            "decided_at_look": decided.decided_at_look,
            "bounds": [lower, upper],
            "ledger": batches,
            **({"note": note} if note else {}),
        },
    }
    interval = f"anytime interval [{significant(lower)}, {significant(upper)}]"
    if decided.decision == REFUTED:
        because = (
            f"the e-value against the statement reached e^{significant(floored(decided.max_log_e_against))} >= "
            f"1/{significant(alpha)} at look {decided.decided_at_look} of {len(batches)} (anytime-valid; the rate "
            f"lies {'below' if at_least else 'above'} {threshold:g}: {interval})"
        )
    else:
        more = f" ({needed - total_n} more)" if needed else ""
        advice = (
            f"; {needed} trials in total{more} would decide it at the observed rate"
            if needed
            else "; " + no_trials_reason(rate, threshold, alpha, at_least=at_least, held_alpha=held_alpha)
        )
        because = (
            f"neither e-value crossed after {total_n} trials in {len(batches)} batch(es) "
            f"(largest ln E for the statement {significant(floored(decided.max_log_e_for))}, needs "
            f"{significant(-math.log(held_alpha))}; against it {significant(floored(decided.max_log_e_against))}, "
            f"needs {significant(-math.log(alpha))}; {interval}){advice}"
        )
    return Decision(
        what,
        decided.decision,
        statement,
        found,
        ((what + " counts", {"successes": total_s, "trials": total_n, "rate": rate}),),
        because=because,
        needed=needed,
        done=total_n,
        anytime=True,
        chain=ChainRecord(what, parameters, batches),
    )


def decide_rate_anytime(
    successes: int,
    trials: int,
    threshold: float,
    *,
    at_least: bool,
    alpha: float,
    held_alpha: float,
    what: str,
    prior: BetaPrior,
    batch: Any = None,
) -> dict[str, Any]:
    """Decide 'rate >= threshold' (at_least) or 'rate <= threshold' by the e-process over the ledger's batches
    with this run's added (rate_chain_decision), and end the test as decide_rate does (decision.conclude:
    ClaimRefuted with the reproduce line, StatementInconclusive with the trials that would decide it). Returns the
    decision's record when held."""
    __tracebackhide__ = True
    held_level(alpha, held_alpha, anytime_what=what)
    counts = whole_counts(successes=successes, trials=trials)  # NumPy integers kept as Python ones, bools refused
    parameters = _parameters(what, threshold, at_least, alpha, held_alpha, prior)
    batches, note = extend_ledger(counts, batch, parameters)
    return conclude(rate_chain_decision(parameters, batches, note)).record
