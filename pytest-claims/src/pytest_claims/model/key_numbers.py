"""The registry's key numbers: each read from the evidence of its statement's runs, and checked against it.

A key number is `"statement: evidence name"`, or `"statement: evidence name.field"` for one field of a recorded
record; one that names evidence no test of its statement recorded is registry drift, reported once every statement
of its claim has decided in the run.
"""

from __future__ import annotations

from typing import Any, Iterable

from pytest_claims.model.evidence import RESERVED_NAMES
from pytest_claims.outcomes import DECIDED
from pytest_claims.model.registry import Claim


def _param_label(test: str) -> str:
    """The parametrisation of a test id ("smoke", "full-100k", ...), or the test's name."""
    if "[" in test and test.endswith("]"):
        return test[test.index("[") + 1 : -1]
    return test.rsplit("::", 1)[-1]


_MISSING = object()


def evidence_value(evidence: dict[str, Any], name: str) -> Any:
    """The evidence recorded under `name`, or one field of a record: `name.field` (as `fixed-point rate.lower`
    picks the lower bound of what decide_rate recorded) where no evidence is named `name.field` itself;
    _MISSING where there is neither."""
    if name in evidence:
        return evidence[name]
    record, dot, field = name.rpartition(".")
    found = evidence.get(record) if dot else None
    return found[field] if isinstance(found, dict) and field in found else _MISSING


def key_numbers(claim: Claim, runs: Iterable[Any]) -> list[dict[str, Any]]:
    """The registry's key numbers of a claim, with the value of every run that recorded them."""
    out = []
    for entry in claim.key_numbers:
        statement, _, name = (part.strip() for part in entry.partition(":"))
        found = [(r, evidence_value(r.evidence, name)) for r in runs if r.statement == statement]
        values = [
            {"run": _param_label(r.test), "tier": r.tier, "value": value} for r, value in found if value is not _MISSING
        ]
        out.append({"label": entry, "values": values})
    return out


def recorded_names(evidence: dict[str, Any]) -> list[str]:
    """What a key number can name in one run's evidence: each evidence name, and `name.field` for each field of a
    record (the report's own keys left out: a key number may not name them)."""
    names = []
    for name, value in evidence.items():
        if name in RESERVED_NAMES:
            continue
        names.append(name)
        if isinstance(value, dict):
            names.extend(f"{name}.{field}" for field in value)
    return names


def unknown_key_numbers(claim: Claim, runs: list[Any]) -> list[str]:
    """The claim's key numbers that name evidence no test of their statement recorded, each as one line naming the
    claim, the entry and the fields that exist; checked only once every statement of the claim has decided in
    `runs` (a claim whose statements did not all run, or did not decide, may yet record them)."""
    decided = {r.statement for r in runs if r.outcome in DECIDED}
    if not claim.key_numbers or not set(claim.statements) <= decided:
        return []
    problems = []
    for entry in claim.key_numbers:
        statement, _, name = (part.strip() for part in entry.partition(":"))
        recorded = [r.evidence for r in runs if r.statement == statement]
        if any(evidence_value(evidence, name) is not _MISSING for evidence in recorded):
            continue
        names = sorted({n for evidence in recorded for n in recorded_names(evidence)})
        shown = ", ".join(repr(n) for n in names[:20]) + (f" and {len(names) - 20} more" if len(names) > 20 else "")
        problems.append(
            f"key number {entry!r} of claim {claim.id!r}: no test of statement {statement!r} recorded {name!r} "
            f"(recorded: {shown or 'nothing'}); remedy: name one of these in the registry's key_numbers, or record it"
        )
    return problems
