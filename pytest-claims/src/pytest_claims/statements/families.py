"""Families of statements sharing one registered false-alarm budget: Holm on p-values, e-Holm on e-values.

A family (`[[claim.family]]` in the registry: its statements, its alpha, its method) is decided as one: a true
member is refuted, over the whole family, with probability at most the family's alpha, whatever the dependence
between the members' statistics. Explained in docs/explanation/means-and-families.md.

- `holm` (fixed-sample p-values): sort the K p-values ascending, reject the j-th (1-based) while
  p_(j) < alpha / (K - j + 1); stop at the first that is not. Holm (1979): family-wise error <= alpha under any
  dependence (closed testing of Bonferroni's intersections).
- `e_holm` (e-values, the anytime routes): reject member k when every average of e-values over a set of members that
  holds k reaches 1 / alpha. The average of e-values is an e-value under any dependence (its mean is the average of
  means <= 1), so each intersection test is valid by Markov and closed testing controls the family-wise error
  (Vovk & Wang 2021, "E-values: calibration, combination and applications", the e-Holm / e-merging closure). The
  least average over the sets holding k takes e_k and the j smallest others, for some j: O(K log K).

Each member is decided by two one-sided tests, as decide_test decides one statement: held when the family's
adjustment rejects the member's opposite at the statement's level (the `for` statistics at held_alpha), refuted
when it rejects the member itself at alpha (the `against` statistics): each side is a family of its own, so the
chance that any true member is refuted is at most alpha, and that any false member is held at most held_alpha.

`decide_family` decides them inside a statement test: every member's test passes the same statistics for all the
members (computed once, e.g. by a module-scoped fixture or the result store) and ends with its own member's
adjusted decision, so the verdicts are exactly the family's.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pytest_claims import context
from pytest_claims.stats.binomial import check_level, not_a_number
from pytest_claims.statements.decision import Decision, conclude, held_level
from pytest_claims.outcomes import HELD, INCONCLUSIVE, REFUTED
from pytest_claims.stats.shown_numbers import significant

METHODS = ("holm", "e-merging")


def holm(p_values: Mapping[str, float], alpha: float) -> dict[str, bool]:
    """Holm's step-down rejections at family-wise level `alpha` of the p-values by member name (a p-value that is
    not a number rejects nothing and counts in K). Returns {member: rejected}."""
    check_level("alpha", alpha)
    order = sorted(p_values, key=lambda k: (math.inf if not_a_number(p_values[k]) else p_values[k], k))
    out, size, going = {k: False for k in p_values}, len(p_values), alpha > 0
    for j, name in enumerate(order):
        p = p_values[name]
        going = going and not not_a_number(p) and p < alpha / (size - j)
        out[name] = going
    return out


def e_holm(log_e_values: Mapping[str, float], alpha: float) -> dict[str, bool]:
    """The e-Holm rejections at family-wise level `alpha` of the natural-log e-values by member name: member k is
    rejected when the least average of e-values over the sets of members holding k reaches 1 / alpha (NaN counts
    as e = 0). Returns {member: rejected}."""
    check_level("alpha", alpha)
    if alpha == 0:
        return {k: False for k in log_e_values}
    logs = {k: (-math.inf if not_a_number(v) else float(v)) for k, v in log_e_values.items()}
    level = -math.log(alpha)
    out = {}
    for name, own in logs.items():
        others = sorted(v for k, v in logs.items() if k != name)
        least, total = own, own  # ln of the running sum e_k + the j smallest others, and ln of the least average
        for j, value in enumerate(others, start=1):
            total = _log_add(total, value)
            least = min(least, total - math.log(j + 1))
        out[name] = least >= level - 1e-12 * level  # to rounding: e-values of exactly 1 / alpha reach it
    return out


def _log_add(x: float, y: float) -> float:
    high, low = max(x, y), min(x, y)
    return high if low == -math.inf else high + math.log1p(math.exp(low - high))


@dataclass(frozen=True)
class MemberDecision:
    """One member's adjusted decision in its family: the decision word (outcomes.py) and the statistics it came
    from (p-values for Holm, natural-log e-values for e-merging: for the statement, against it)."""

    name: str
    decision: str
    for_statistic: float
    against_statistic: float


@dataclass(frozen=True)
class FamilyDecision:
    """A family decided as one: its `name`, `method`, levels (`alpha` to refute, `held_alpha` to hold, each
    family-wise) and each member's adjusted decision (`members`, MemberDecision, in the order given)."""

    name: str
    method: str
    alpha: float
    held_alpha: float
    members: tuple[MemberDecision, ...]

    def decision_of(self, member: str) -> str:
        """The adjusted decision of `member` (KeyError if it is not one). Returns its decision word."""
        for m in self.members:
            if m.name == member:
                return m.decision
        raise KeyError(f"{member!r} is not a member of family {self.name!r}")

    def names(self) -> tuple[str, ...]:
        """The members' names, in order. Returns a tuple of strings."""
        return tuple(m.name for m in self.members)


def family_decision(
    statistics: Mapping[str, tuple[float, float]],
    *,
    method: str,
    alpha: float,
    held_alpha: float | None = None,
    name: str = "family",
) -> FamilyDecision:
    """Decide every member of a family from its (for, against) statistics by member name: p-values (p_for, the
    test of the member's opposite; p_against, the test of the member) under method "holm", natural-log e-values
    (ln E_for, ln E_against) under "e-merging". Held where the `for` side is rejected at family-wise `held_alpha`
    (None: alpha), refuted where the `against` side is at `alpha` and the member is not held, inconclusive
    otherwise. `name` labels the result. Returns a FamilyDecision."""
    if method not in METHODS:
        raise ValueError(f"family {name!r}: method must be one of {METHODS}, got {method!r}")
    held_alpha = held_level(alpha, held_alpha)
    if len(statistics) < 1:
        raise ValueError(f"family {name!r}: no members")
    pairs = {}
    for member, pair in statistics.items():
        numbers: tuple[float, ...]
        try:
            numbers = tuple(float(x) for x in pair)
        except (TypeError, ValueError):
            numbers = ()
        if len(numbers) != 2 or (method == "holm" and any(not math.isnan(p) and not 0 <= p <= 1 for p in numbers)):
            raise ValueError(
                f"family {name!r}: member {member!r} needs a pair (for, against) of "
                f"{'p-values in [0, 1]' if method == 'holm' else 'natural-log e-values'}, got {statistics[member]!r}"
            )
        pairs[member] = numbers
    adjust = holm if method == "holm" else e_holm
    held = adjust({k: v[0] for k, v in pairs.items()}, held_alpha)
    refuted = adjust({k: v[1] for k, v in pairs.items()}, alpha)
    members = tuple(
        MemberDecision(k, HELD if held[k] else REFUTED if refuted[k] else INCONCLUSIVE, v[0], v[1])
        for k, v in pairs.items()
    )
    return FamilyDecision(name, method, float(alpha), float(held_alpha), members)


def decide_family(
    statistics: Mapping[str, tuple[float, float]],
    *,
    what: str,
    method: str | None = None,
    alpha: float | None = None,
    held_alpha: float | None = None,
) -> FamilyDecision:
    """Decide a family of statements from every member's (for, against) statistics (family_decision's pairs: p-values
    under "holm", natural-log e-values under "e-merging") and end the running test with its member's adjusted
    decision. In the test of a statement registered in a `[[claim.family]]`, the family's registered method and
    alpha decide (`method` and `alpha` None, or equal to them: they cannot be chosen after the data), the statistics
    must name exactly the registered members, and the test ends with its own statement's decision. Elsewhere
    `method` and `alpha` are required, and the test ends with the conjunction: held when every member is held,
    refuted when any is refuted. `held_alpha` (None: alpha) is the family-wise level to hold at. `what` names the
    family's evidence (each member's adjusted decision is recorded under it). Returns the FamilyDecision when the
    ending decision is held; raises ClaimRefuted or StatementInconclusive otherwise."""
    __tracebackhide__ = True
    registered, member = context.registered_family(), context.running_statement()
    if registered:
        for key, given in (("method", method), ("alpha", alpha)):
            if given is not None and given != registered[key]:
                raise ValueError(
                    f"{what}: {key}={given!r} differs from family {registered['name']!r}'s registered {key} "
                    f"{registered[key]!r}: a family is decided as registered, before the data"
                )
        if sorted(statistics) != sorted(registered["statements"]):
            raise ValueError(
                f"{what}: family {registered['name']!r} registers members {sorted(registered['statements'])}, "
                f"the statistics name {sorted(statistics)}"
            )
        method, alpha = registered["method"], registered["alpha"]
    elif method is None or alpha is None:
        raise ValueError(f"{what}: outside a registered family, decide_family needs method= and alpha=")
    decided = family_decision(
        statistics,
        method=method,
        alpha=alpha,
        held_alpha=held_alpha,
        name=registered["name"] if registered else what,
    )
    record = {
        "family": decided.name,
        "method": decided.method,
        "alpha": decided.alpha,
        "held_alpha": decided.held_alpha,
        "members": {
            m.name: {"decision": m.decision, "for": m.for_statistic, "against": m.against_statistic}
            for m in decided.members
        },
        **({"member": member} if registered else {}),
    }
    conclude(_ending_decision(decided, what, record, member if registered else None))
    return decided


def _ending_decision(decided: FamilyDecision, what: str, record: dict[str, Any], member: str | None) -> Decision:
    """The test's decision: the member's adjusted decision, or (no member) the family's conjunction (held when every
    member is held, refuted when any is refuted), with the words its ending says."""
    kind = "p" if decided.method == "holm" else "ln E"
    shown = ", ".join(
        f"{m.name}: {m.decision} ({kind} {significant(m.for_statistic)} for, {significant(m.against_statistic)} "
        "against)"
        for m in decided.members
    )
    words = {m.decision for m in decided.members} if member is None else {decided.decision_of(member)}
    head = f"family {decided.name!r} by {decided.method} at family-wise {significant(decided.alpha)}"
    subject = f"member {member!r}" if member else "the family (every member held)"
    word = REFUTED if REFUTED in words else INCONCLUSIVE if INCONCLUSIVE in words else HELD
    because = f"{head}: {subject} {'refuted' if word == REFUTED else 'not decided'}; members {shown}"
    return Decision(what, word, subject, record, because=because, can_continue=False)


@dataclass(frozen=True)
class RecordedMember:
    """One member of a family as a run's evidence recorded it: its adjusted decision (the word the record holds) and
    the statistics it was decided from (`for_statistic`, `against_statistic`: p-values under Holm, natural-log
    e-values under e-merging; None where the record holds no number)."""

    name: str
    decision: str
    for_statistic: float | None
    against_statistic: float | None


@dataclass(frozen=True)
class RecordedFamily:
    """A family decided in a run, read from its members' evidence (the record decide_family wrote): the `claim` id,
    the family's `name` and `method`, its family-wise `alpha` (to refute) and `held_alpha` (to hold; None where not
    recorded), each member's adjusted decision (`members`, in the record's order), and `statistics_differ`: the
    members' tests recorded different statistics, so each decided another family (not one decision); and `tier`, the
    tier its records were decided at where the payload holds the family decided at more than one tier (a merge of
    smoke and full runs: each tier's decision is its own), None otherwise (nothing to tell apart)."""

    claim: str
    name: str
    method: str
    alpha: float | None
    held_alpha: float | None
    members: tuple[RecordedMember, ...]
    statistics_differ: bool
    tier: str | None = None

    @property
    def statistic(self) -> str:
        """What the members' statistics are: "p" (p-values, Holm) or "ln E" (natural-log e-values)."""
        return "p" if self.method == "holm" else "ln E"


def _recorded_number(value: Any) -> float | None:
    """A recorded number as a float (None for anything else: the payload is data from elsewhere)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


def decided_families(payload: dict[str, Any]) -> list[RecordedFamily]:
    """The families decided in a run (a verdicts.json payload, a merged one too), in the order their records appear:
    a statement's evidence value holding "family" and a "members" record is one of its family's records (the record
    decide_family wrote); the records of one family of one claim at one tier (the statement record's "tier") are its
    members' tests', and the first is shown. Returns a list of RecordedFamily ([] when no family was decided)."""
    seen: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
    for claim in payload.get("claims", []):
        for statement in claim.get("statements", []):
            tier = statement.get("tier")
            for found in (statement.get("evidence") or {}).values():
                if isinstance(found, dict) and "family" in found and isinstance(found.get("members"), dict):
                    key = (str(claim.get("id", "?")), str(found["family"]), tier if isinstance(tier, str) else "")
                    seen.setdefault(key, []).append(found)
    tiers: dict[tuple[str, str], int] = {}  # the tiers each family was decided at
    for cid, name, _ in seen:
        tiers[(cid, name)] = tiers.get((cid, name), 0) + 1
    families = []
    for (cid, name, tier), records in seen.items():
        found = records[0]
        members = tuple(
            RecordedMember(
                str(member),
                str(m.get("decision")),
                _recorded_number(m.get("for")),
                _recorded_number(m.get("against")),
            )
            for member, m in ((k, v if isinstance(v, dict) else {}) for k, v in found["members"].items())
        )
        families.append(
            RecordedFamily(
                claim=cid,
                name=name,
                method=str(found.get("method")),
                alpha=_recorded_number(found.get("alpha", 0)),
                held_alpha=_recorded_number(found.get("held_alpha")),
                members=members,
                statistics_differ=any(r.get("members") != found["members"] for r in records),
                tier=(tier or "?") if tiers[(cid, name)] > 1 else None,
            )
        )
    return families


def family_lines(payload: dict[str, Any]) -> list[str]:
    """The terminal's lines for the families decided in a run (a verdicts.json payload): one per family (and tier,
    where a merge holds it decided at several), its method, family-wise alpha and each member's adjusted decision,
    read by decided_families; a family whose members' tests recorded different statistics says so (each test decided
    another family: not one decision). Returns the lines ([] when no family was decided)."""
    lines = []
    for family in decided_families(payload):
        members = ", ".join(f"{m.name} {m.decision}" for m in family.members)
        alpha = "?" if family.alpha is None else significant(family.alpha)
        at = f" ({family.tier} tier)" if family.tier is not None else ""
        line = f"{family.claim}: family {family.name!r}{at} by {family.method} at family-wise {alpha}"
        if family.statistics_differ:
            line += (
                ": its members' tests passed different statistics, so each decided another family (compute them "
                "once, for every member)"
            )
        lines.append(f"{line}: {members}")
    return lines
