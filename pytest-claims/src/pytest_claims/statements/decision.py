"""The one decision core: a statement's decision as a typed record, and the one pytest-side adapter that ends a test.

Every `decide_*` route computes a `Decision` (a frozen record, as SciPy's `binomtest` returns a `BinomTestResult`)
by a function with no side effect, then hands it to `conclude`, the one adapter: it records the evidence, and ends
the test, refuted (ClaimRefuted with the reproduce line) or inconclusive (StatementInconclusive with the size that
would decide it, or how to decide it validly), every message built here by `ending`. An anytime decision carries its
chain as a `ChainRecord`, the typed record the merge reads back (`chain_in`) to keep the longest chain of a seed and to
pool the seeds'. The argument checks every route shares (`held_level`) and the check of the registered method
(`check_registered`) are also here, once.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pytest_claims import context
from pytest_claims.outcomes import INCONCLUSIVE, REFUTED, StatementInconclusive
from pytest_claims.statements.ledger import refuse_fixed_over_ledger
from pytest_claims.stats.binomial import check_level, not_a_number


DECIDING_CHANCE = 0.9  # the chance of deciding, at the observed rate, that a fresh run's suggested size gives
CONTINUE = "; continue it with --claims-continue"  # how an anytime decision that is not yet decided ends its message


@dataclass(frozen=True)
class ChainRecord:
    """An anytime decision's chain as its evidence keeps it: the statement's `parameters` (the ledger's, with their
    `kind`), its `batches` (the ledger's entries, each with its data, stream id and running totals) and the evidence
    name `what` it is recorded under. `ledger()` is the ledger these make, for pytest_claims.statements.ledger's
    check_ledger."""

    what: str
    parameters: dict[str, Any]
    batches: list[dict[str, Any]]

    def ledger(self, version: int) -> dict[str, Any]:
        """The chain as a ledger of `version` (the store's LEDGER_VERSION). Returns a plain dict."""
        return {"version": version, "statement": self.parameters, "batches": self.batches}


@dataclass(frozen=True)
class Decision:
    """A statement decided: the `decision` word (outcomes.py: held, refuted or inconclusive) about `statement` (its
    text, e.g. "rate >= 0.9"), the evidence `record` kept under the name `what` (plain JSON, the shape the report and
    the merge read), other evidence recorded before it (`records`: a rate's counts, a sample's size), and what the
    ending says: `because` (the words after "<what>: " when not held), `needed` (the size in total that would decide
    it, or None), `done` (the size this run had), `no_needed_reason` (why no size is given), `anytime` (an anytime
    decision, whose message says to continue it; a fixed-sample one says how to decide it afresh), `can_continue`
    (False where a fixed-sample decision has no anytime route) and `chain` (an anytime decision's ChainRecord)."""

    what: str
    decision: str
    statement: str
    record: dict[str, Any]
    records: tuple[tuple[str, dict[str, Any]], ...] = ()
    because: str = ""
    needed: int | None = None
    done: int | None = None
    no_needed_reason: str = ""
    anytime: bool = False
    can_continue: bool = True
    chain: ChainRecord | None = field(default=None, compare=False)


def ending(decision: Decision) -> str:
    """The message a test not held ends with: "<what>: <because>", then for an anytime decision the way on (continue
    it), for a fixed-sample one why no size is given (where none is) and how to decide it validly
    (fresh_run_advice). Returns the message ("" for a held decision)."""
    if decision.decision not in (REFUTED, INCONCLUSIVE):
        return ""
    message = f"{decision.what}: {decision.because}"
    if decision.decision == REFUTED:
        return message
    if decision.anytime:
        return message + CONTINUE
    return message + fixed_sample_tail(decision.needed, decision.done, decision.no_needed_reason, decision.can_continue)


def conclude(decision: Decision) -> Decision:
    """The one pytest-side adapter: record the decision's evidence in the running test (`records`, then `record`
    under `what`) and end the test as the decision says: ClaimRefuted (with the command that reproduces the test)
    when refuted, StatementInconclusive (with `needed`) when inconclusive. Returns the decision when held."""
    __tracebackhide__ = True
    for name, value in decision.records:
        context.record(name, value)
    context.record(decision.what, decision.record)
    if decision.decision == REFUTED:
        context.refute(ending(decision))
    if decision.decision == INCONCLUSIVE:
        raise StatementInconclusive(ending(decision), decision.needed)
    return decision


def fixed_sample_tail(needed: int | None, done: int | None, no_needed_reason: str, can_continue: bool) -> str:
    """How an inconclusive fixed-sample message ends: why no size is given (`no_needed_reason`, where `needed` is
    None), then fresh_run_advice. Returns the text, starting with "; "."""
    reason = f"; {no_needed_reason}" if not needed and no_needed_reason else ""
    return reason + fresh_run_advice(needed, done, can_continue)


def fresh_run_advice(needed: int | None, done: int | None, can_continue: bool = True) -> str:
    """What an inconclusive fixed-sample end says next: how to decide it validly (continuing an anytime registration
    only where `can_continue`), and a fresh run's size if known (`needed`; `done`: this run's size)."""
    size = (
        f" of {needed} trials (this run had {done}; {needed} give a {DECIDING_CHANCE:.0%} chance of deciding at the "
        "observed rate)"
        if needed
        else ""
    )
    continuing = (
        'to keep it, register the statement anytime (decision = "anytime", then --claims-continue); or decide it'
        if can_continue
        else "to keep it (this decision has no anytime route to continue), decide it"
    )
    return (
        "; adding data to this run and deciding again would break its registered false alarm: "
        f"{continuing} by a fresh run"
        f"{size} on a new stream (a new master seed), decided alone: a new test at the same false alarm, so that "
        "with this run the statement has had two chances to end falsely (at most twice the false alarm)"
    )


# ------------------------------------------------------------------------------------------------
# The checks every route shares


def held_level(
    alpha: float,
    held_alpha: float | None = None,
    *,
    held_confidence: float | None = None,
    anytime_what: str | None = None,
) -> float:
    """The registered false alarm `alpha` and the level at which the statement is held, checked once for every route:
    `held_alpha` (None: alpha), or `held_confidence` in (0.5, 1] (1: never held; None: 1 - held_alpha). Each is a
    level in [0, 0.5) (check_level); an anytime decision (`anytime_what`: the statement's name) needs both above 0,
    since an e-value crosses 1 / level only for a level above 0. Returns the held level; one ValueError naming the
    argument otherwise."""
    check_level("alpha", alpha)
    if held_confidence is not None:
        if not_a_number(held_confidence) or not 0.5 < float(held_confidence) <= 1.0:
            raise ValueError(f"held_confidence must be a confidence in (0.5, 1], got {held_confidence!r}")
        held = 1 - held_confidence
    else:
        held = alpha if held_alpha is None else held_alpha
        check_level("held_alpha", held)
    if anytime_what is not None:
        for name, level in (
            ("alpha (the registered false_alarm)", alpha),
            ("held_alpha (1 - held_confidence)", held),
        ):
            if float(level) <= 0.0:
                raise ValueError(
                    f"{anytime_what}: {name} is {level!r}: an anytime decision needs a level in (0, 0.5), since an "
                    "e-value crosses 1 / level only for a level above 0"
                )
    return held


def check_registered(what: str, function: str, *, anytime: bool, anytime_route: str = "") -> None:
    """The method was chosen before the data, in the registry: the one check of a call against the running statement's
    registered `decision`. An anytime route (`anytime`) refuses a statement registered "fixed" and a registered prior
    or plan (a rate's, decide_rate's own); a fixed-sample route refuses a statement registered "anytime" where
    `anytime_route` names the route to use instead, and a ledger of this statement's chain (refuse_fixed_over_ledger).
    Returns None; one ValueError naming `what` and `function` otherwise."""
    registered = context.registered_decision()
    if anytime:
        if registered.get("method") == "fixed":
            raise ValueError(
                f"{what}: the statement's registered decision is 'fixed', and {function} decides by anytime-valid "
                'e-values: register decision = "anytime", or decide a fixed-sample p-value with decide_test'
            )
        if "prior" in registered or "plan" in registered:
            raise ValueError(f"{what}: a registered prior or plan is a rate's (decide_rate); {function} takes none")
        return
    if anytime_route and registered.get("method") == "anytime":
        raise ValueError(
            f"{what}: the statement's registered decision is 'anytime', and {function} is a fixed-sample bound "
            f'(one look): decide it with {anytime_route}, or register decision = "fixed"'
        )
    refuse_fixed_over_ledger(what)


# ------------------------------------------------------------------------------------------------
# The chain in a statement's evidence, read back


def chain_in(evidence: Any) -> ChainRecord | None:
    """The anytime chain a statement test's evidence (a verdicts.json record's "evidence") holds: the record of its
    one anytime decision read as a ChainRecord (its parameters as the decision recorded them; a rate decided before
    they were recorded has them rebuilt from its record, so older files still merge). None when the evidence holds no
    anytime decision, or several (not one chain). KeyError or TypeError when the decision's record lacks a field of
    the chain; the numbers are checked by check_ledger, not here."""
    if not holds_chain(evidence):
        return None
    found = [(k, v) for k, v in evidence.items() if isinstance(v, dict) and "anytime" in v]
    if len(found) != 1:
        return None
    what, record = found[0]
    block = record["anytime"]
    parameters = block["parameters"] if "parameters" in block else _older_rate_parameters(what, record, block)
    return ChainRecord(what, parameters, block["ledger"])


def holds_chain(evidence: Any) -> bool:
    """Whether a statement test's evidence holds an anytime decision (sound or not: chain_in reads it)."""
    return isinstance(evidence, dict) and any(isinstance(v, dict) and "anytime" in v for v in evidence.values())


def _older_rate_parameters(what: str, record: dict[str, Any], block: dict[str, Any]) -> dict[str, Any]:
    """A rate chain's parameters from a decision recorded before its block carried them (their one older shape)."""
    return {
        "what": what,
        "threshold": record["threshold"],
        "at_least": str(record["statement"]).startswith("rate >="),
        "alpha": block["refute_alpha"],
        "held_alpha": block["held_alpha"],
        "prior": block["prior"],
    }
