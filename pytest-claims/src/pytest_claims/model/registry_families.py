"""The registry's `[[claim.family]]` records: statements of one claim that share one false-alarm budget, as data.

Read and checked here (the decision is pytest_claims.statements.families); registry.py raises each problem as one
RegistryError naming the claim and the family.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

FAMILY_METHODS = ("holm", "e-merging")


@dataclass(frozen=True)
class Family:
    """Statements of one claim decided as one family, sharing one false-alarm budget
    (pytest_claims.statements.families):
    `alpha` family-wise, by `method` ("holm": fixed-sample p-values; "e-merging": e-values, the anytime routes)."""

    name: str
    statements: tuple[str, ...]
    alpha: float = field(metadata={"toml": (int, float)})
    method: str
    why: str = ""


def families_of(records: Any, statements: dict[str, Any]) -> tuple[dict[str, Family], str]:
    """The claim's [[claim.family]] records, validated against its `statements` (name: registry.Statement): each a
    table {name, statements (two or more of the claim's, each in one family only), alpha in (0, 0.5), method "holm"
    or "e-merging"[, why]}, the method matching its members' registered decision (holm: none registered anytime;
    e-merging: none registered fixed). Returns (the families by name, "") or ({}, the first problem, naming the
    family)."""
    out: dict[str, Family] = {}
    member_of: dict[str, str] = {}
    for raw in records if isinstance(records, list) else [records]:
        name = raw.get("name", "?") if isinstance(raw, dict) else "?"
        problem = _family_problem(raw, statements) if isinstance(raw, dict) else "must be a table"
        if not problem and name in out:
            problem = "is named twice"
        if not problem:
            for member in raw["statements"]:
                if member in member_of:
                    problem = f"lists {member!r}, already in family {member_of[member]!r} (a statement has one budget)"
                    break
                member_of[member] = name
        if problem:
            return {}, f"family {name!r} {problem}"
        out[name] = Family(name, tuple(raw["statements"]), float(raw["alpha"]), raw["method"], raw.get("why", ""))
    return out, ""


def family_records(families: dict[str, Family]) -> list[dict[str, Any]]:
    """A claim's families as verdicts.json carries them: each as its `[[claim.family]]` table (name, statements,
    alpha, method[, why]), read back by families_of. Returns the list, in the registry's order ([] for none)."""
    return [
        {
            "name": f.name,
            "statements": list(f.statements),
            "alpha": f.alpha,
            "method": f.method,
            **({"why": f.why} if f.why else {}),
        }
        for f in families.values()
    ]


def _family_problem(raw: dict[str, Any], statements: dict[str, Any]) -> str:
    """Why one family record is malformed ("" if it is not)."""
    extra = sorted(set(raw) - {"name", "statements", "alpha", "method", "why"})
    if extra or not {"name", "statements", "alpha", "method"} <= set(raw):
        return f"must give name, statements, alpha and method (and optionally why), got keys {sorted(raw)}"
    if not isinstance(raw["name"], str) or not raw["name"].strip():
        return f"name must be a non-empty string, got {raw['name']!r}"
    members = raw["statements"]
    if not isinstance(members, list) or len(members) < 2 or not all(isinstance(m, str) for m in members):
        return f"statements must be an array of two or more statement names, got {members!r}"
    if len(set(members)) != len(members):
        return f"lists a statement twice: {members!r}"
    unknown = [m for m in members if m not in statements]
    if unknown:
        return f"names unknown statement(s) {unknown} (the claim's statements: {sorted(statements)})"
    alpha = raw["alpha"]
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float)) or not 0 < alpha < 0.5:
        return f"alpha must be a family-wise false alarm in (0, 0.5), got {alpha!r}"
    if raw["method"] not in FAMILY_METHODS:
        return f"method must be one of {FAMILY_METHODS}, got {raw['method']!r}"
    clash = "anytime" if raw["method"] == "holm" else "fixed"
    wrong = [m for m in members if statements[m].decision.get("method") == clash]
    if wrong:
        return (
            f"by {raw['method']!r} cannot hold {wrong}, registered decision = {clash!r} ('holm' adjusts fixed-sample "
            "p-values, 'e-merging' e-values)"
        )
    if "why" in raw and not isinstance(raw["why"], str):
        return f"why must be a string, got {raw['why']!r}"
    return ""
