"""Anytime decisions over the ledger beside a rate's: two proportions and the safe t-test, and alpha spent on p-values.

`decide_two_proportions` ('p_A > p_B', the conditional e-value of each batch given its margins) and `decide_safe_t`
('mean > 0', or a first sample's mean above the second's: the safe t-test's e-value of each batch) decide by
e-values only, so their statements may be continued as decide_rate's anytime statements are
(pytest_claims.statements.ledger, docs/how-to/continue.md): each run adds a batch drawn from a fresh stream, the chain's
e-value is the product of its batches' (each has mean at most 1 under the null whatever came before, the batches being
independent), held at the first look where the product for the statement reaches 1 / held_alpha, refuted where the one
against it reaches 1 / alpha; the first crossing is final. A batch is judged alone: its t statistic is that of its own
data.

The method is the function's, chosen when the test was written: a statement registered `decision = "fixed"` is
refused (decide it with decide_test and a fixed-sample p-value), and so is a registered prior or plan (those are a
rate's).

`decide_test_spent` is decide_test under a registered `decision = "anytime"`, for tests with no e-process (trend,
sign and Kolmogorov-Smirnov tests, any p-value): round k of the statement's continuation (its ledger's batch k - 1)
tests at the alpha spent on it, anytime.round_alpha = 6 alpha / (pi^2 k^2), held when its p_for is below the held
level's share, refuted when its p_against is below alpha's. The shares sum to alpha over all rounds, and by the union
bound the false alarm stays at most alpha under any rule for continuing *provided each round's p-value is valid at
its level given the rounds before*: true when a round tests its own new batch alone (a fresh stream, whatever size
the earlier data chose), false for the cumulative data when the batch sizes follow the data (the audit of issue 47
measured 1.13-3 x alpha; benchmarks/anytime_means_type_one.py). So only the first is allowed: the caller declares
round_data="batch", and anything else is refused in one line. It costs: round 1 tests at 0.61 alpha, round 2 at
0.15 alpha.
"""

from __future__ import annotations

import math
from typing import Any

from pytest_claims.anytime.safe_t import MAX_DELTA
from pytest_claims.stats.binomial import check_probability, not_a_number, whole_counts
from pytest_claims.anytime.chain_kinds import SAFE_T, SPENT_P, TWO_PROPORTIONS, decide_chain, floored
from pytest_claims.statements.decision import (
    ChainRecord,
    Decision,
    check_registered,
    conclude,
    held_level,
)
from pytest_claims.statements.ledger import extend_ledger
from pytest_claims.outcomes import REFUTED
from pytest_claims.stats.shown_numbers import significant


def chain_decision(
    parameters: dict[str, Any],
    batches: list[dict[str, Any]],
    note: str = "",
    *,
    statement: str,
    assumption: str,
    basis: str = "the product of its batches' e-values",
) -> Decision:
    """The decision of a chain of batch e-values at its first crossing, with no side effect: `parameters` the
    statement's (with its "kind" and "what"), `batches` the ledger's with this run's, `note` what the ledger said;
    the record keeps the e-process's `basis` and the `assumption` its validity rests on. Returns the Decision, its
    ChainRecord the chain."""
    what, kind = parameters["what"], parameters["kind"]
    decided = decide_chain(parameters, batches)
    found = {
        "statement": statement,
        "held_alpha": parameters["held_alpha"],
        "refute_alpha": parameters["alpha"],
        "decision": decided.decision,
        "anytime": {
            "method": kind,
            "parameters": parameters,
            "held_alpha": parameters["held_alpha"],
            "refute_alpha": parameters["alpha"],
            "log_e_for": floored(decided.log_e_for),
            "log_e_against": floored(decided.log_e_against),
            "max_log_e_for": floored(decided.max_log_e_for),
            "max_log_e_against": floored(decided.max_log_e_against),
            "decided_at_look": decided.decided_at_look,
            "basis": basis,
            "assumption": assumption,
            "ledger": batches,
            **({"note": note} if note else {}),
        },
    }
    looks = len(batches)
    if decided.decision == REFUTED:
        because = (
            f"the e-value against '{statement}' reached e^{significant(floored(decided.max_log_e_against))} "
            f">= 1/{significant(parameters['alpha'])} at look {decided.decided_at_look} of {looks} "
            f"(anytime-valid: {basis}; assuming {assumption})"
        )
    else:
        because = (
            f"neither e-value crossed after {looks} batch(es) of '{statement}' (largest ln E for the statement "
            f"{significant(floored(decided.max_log_e_for))}, needs {significant(-math.log(parameters['held_alpha']))}; "
            f"against it {significant(floored(decided.max_log_e_against))}, needs "
            f"{significant(-math.log(parameters['alpha']))})"
        )
    chain = ChainRecord(what, parameters, batches)
    return Decision(what, decided.decision, statement, found, because=because, anytime=True, chain=chain)


def decide_batch_product(
    kind: str,
    data: dict[str, Any],
    parameters: dict[str, Any],
    *,
    statement: str,
    batch: Any,
    function: str,
    assumption: str,
    basis: str = "the product of its batches' e-values",
) -> dict[str, Any]:
    """Add this run's batch (`data`) to the statement's ledger, decide the chain at its first crossing
    (chain_decision) and end the test with it (decision.conclude). Returns the decision's record when held."""
    __tracebackhide__ = True
    what = parameters["what"]
    check_registered(what, function, anytime=True)
    held_level(parameters["alpha"], parameters["held_alpha"], anytime_what=what)
    parameters = {**parameters, "kind": kind}
    batches, note = extend_ledger(data, batch, parameters)
    decided = chain_decision(parameters, batches, note, statement=statement, assumption=assumption, basis=basis)
    return conclude(decided).record


def decide_two_proportions(
    k_a: int,
    n_a: int,
    k_b: int,
    n_b: int,
    *,
    alpha: float,
    what: str,
    held_alpha: float | None = None,
    batch: int | None = None,
    w_inf: float = 0.5,
) -> dict[str, Any]:
    """Decide 'p_A > p_B' from k_a events in n_a trials of arm A and k_b in n_b of arm B, anytime-valid: by the
    product over the statement's batches (this run's, and its ledger's under --claims-continue; `batch`: the
    claims_batch fixture) of each batch's conditional e-value given its margins (docs/explanation/anytime-design.md
    3.2; w_inf: the weight on 'B never, A always'), held when it reaches 1 / held_alpha (default alpha), refuted when
    the mirror product (the arms swapped) reaches 1 / alpha. At one look it has Fisher's power at the levels the design
    measured. pytest_claims.statements.anytime_batches; a statement registered decision = "fixed" is refused. `what`
    names it in messages and keys its evidence; returns the decision's record when held, raises ClaimRefuted or
    StatementInconclusive."""
    __tracebackhide__ = True
    held = held_level(alpha, held_alpha)
    data = whole_counts(k_a=k_a, n_a=n_a, k_b=k_b, n_b=n_b)
    if data["k_a"] > data["n_a"] or data["k_b"] > data["n_b"]:
        raise ValueError(f"{what}: an arm has more events than trials ({data})")
    check_probability("w_inf", w_inf)
    parameters = {"what": what, "alpha": alpha, "held_alpha": held}
    return decide_batch_product(
        TWO_PROPORTIONS,
        data,
        {**parameters, "w_inf": float(w_inf)},
        statement="p_A > p_B",
        batch=batch,
        function="decide_two_proportions",
        assumption="independent trials, each arm's at one rate within a batch (any rates)",
    )


def decide_safe_t(
    t: float,
    n: int,
    *,
    delta: float,
    alpha: float,
    what: str,
    n2: int | None = None,
    held_alpha: float | None = None,
    batch: int | None = None,
    assume: str | None = None,
) -> dict[str, Any]:
    """Decide 'mean > 0' (one sample of n; t its t statistic) or 'mean_A > mean_B' (n and n2, t the pooled two-sample
    statistic) by the safe t-test, anytime-valid: the product over the statement's batches (this run's, and its
    ledger's under --claims-continue; `batch`: the claims_batch fixture) of each batch's e-value
    f_nct(t; nu, sqrt(n_eff) delta) / f_t(t; nu) (pytest_claims.anytime.safe_t), for the effect `delta` in standard
    deviations fixed before the data; held when it reaches 1 / held_alpha (default alpha), refuted when the product
    at -t (the effect -delta) reaches 1 / alpha. Each batch's t is of its own data alone.

    Valid only for normal data (the t statistic's law under the null is the central t only then): on skewed data
    with mean exactly 0 a batch's e-value has a null mean far above 1 (measured 1.3-25, and the product's false
    alarm up to ~1000 x alpha: docs/explanation/anytime.md). So the caller must state the assumption,
    `assume="normal"`, or it is refused; for data of unknown law use decide_mean (bounded data, by betting) or
    decide_signs (pairs). A statement registered decision = "fixed" is refused. `what` names it in messages and
    keys its evidence; returns the decision's record when held, raises ClaimRefuted or StatementInconclusive."""
    __tracebackhide__ = True
    if assume != "normal":
        raise ValueError(
            f'{what}: decide_safe_t is valid only for normal data: pass assume="normal" to state it, or decide '
            "the mean of bounded data by betting (decide_mean, decide_mean_difference) or pairs by signs (decide_signs)"
        )
    held = held_level(alpha, held_alpha)
    if not_a_number(t) or not math.isfinite(float(t)):
        raise ValueError(f"{what}: t must be a finite number, got {t!r}")
    sizes = whole_counts(n=n, n2=0 if n2 is None else n2)
    if n2 is not None and sizes["n2"] == 0:
        raise ValueError(f"{what}: n2 must be >= 1 for a two-sample statistic (None for one sample)")
    if isinstance(delta, bool) or not_a_number(delta) or not 0.0 < float(delta) <= MAX_DELTA:
        raise ValueError(
            f"{what}: delta must be a positive effect in standard deviations, at most {MAX_DELTA:g}, got {delta!r}"
        )
    parameters = {"what": what, "alpha": alpha, "held_alpha": held}
    return decide_batch_product(
        SAFE_T,
        {"t": float(t), **sizes},
        {**parameters, "delta": float(delta)},
        statement="mean > 0" if n2 is None else "mean_A > mean_B",
        batch=batch,
        function="decide_safe_t",
        assumption='normal data (assume="normal", stated by the caller)',
    )


def _p_shown(p: float | None) -> str:
    return "none" if p is None else f"{p:.3g}"


def spent_decision(
    parameters: dict[str, Any], batches: list[dict[str, Any]], note: str, p_for: float, p_against: float
) -> Decision:
    """The decision of rounds of spent alpha at their first decided round, with no side effect: `parameters` the
    statement's (kind SPENT_P), `batches` the ledger's rounds with this one's (p_for, p_against as given). Returns the
    Decision."""
    what, alpha, held_alpha = parameters["what"], parameters["alpha"], parameters["held_alpha"]
    decided, last = decide_chain(parameters, batches), batches[-1]
    found = {
        "p_for": p_for,
        "p_against": p_against,
        "held_alpha": held_alpha,
        "refute_alpha": alpha,
        "decision": decided.decision,
        "anytime": {
            "method": SPENT_P,
            "parameters": parameters,
            "round": last["round"],
            "held_level": last["held_level"],
            "refute_level": last["refute_level"],
            "decided_at_look": decided.decided_at_look,
            "ledger": batches,
            **({"note": note} if note else {}),
        },
    }
    k, at = last["round"], batches[decided.decided_at_look - 1] if decided.decided_at_look else last
    spent = f"the alpha spent on round {at['round']}: 6 alpha / (pi^2 k^2)"
    if decided.decision == REFUTED:
        because = (
            f"the opposite effect is significant in round {at['round']} of {k} (p = "
            f"{_p_shown(at['p_against'])} < {at['refute_level']:.3g}, {spent} of {alpha:g}; for the statement p = "
            f"{_p_shown(at['p_for'])})"
        )
    else:
        because = (
            f"in round {k} neither the effect (p = {_p_shown(last['p_for'])} against "
            f"{last['held_level']:.3g}) nor its opposite (p = {_p_shown(last['p_against'])} against "
            f"{last['refute_level']:.3g}) is significant at {spent}"
        )
    chain = ChainRecord(what, parameters, batches)
    return Decision(what, decided.decision, "the effect", found, because=because, anytime=True, chain=chain)


def decide_test_spent(
    p_for: float, p_against: float, *, alpha: float, held_alpha: float, what: str, batch: Any, round_data: Any = None
) -> dict[str, Any]:
    """decide_test's route for a statement registered anytime: this round's p-values added to the ledger (round k =
    batch k - 1), decided at the first round whose p_for is below round_alpha(held_alpha, k) (held) or whose
    p_against is below round_alpha(alpha, k) (refuted) (spent_decision). A p-value that is not a number decides
    nothing (kept as None). Recorded and ended as decide_test does (decision.conclude)."""
    __tracebackhide__ = True
    check_registered(what, "decide_test", anytime=True)
    if round_data != "batch":
        raise ValueError(
            f"{what}: alpha spent over rounds is valid only when each round tests its own new batch: pass "
            f'round_data="batch" with p-values of this batch alone (got round_data={round_data!r}; p-values of the '
            "cumulative data, with batch sizes that follow the data, reach up to 3 x alpha)"
        )
    data = {name: None if not_a_number(p) else float(p) for name, p in (("p_for", p_for), ("p_against", p_against))}
    parameters = {"what": what, "alpha": alpha, "held_alpha": held_alpha, "kind": SPENT_P}
    batches, note = extend_ledger(data, batch, parameters)
    return conclude(spent_decision(parameters, batches, note, p_for, p_against)).record
