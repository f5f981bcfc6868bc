"""Statement outcomes and claim verdicts, as pure functions of the registry and the test runs."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pytest_claims.registry import Claim, Registry

# Statement outcomes.
HELD, REFUTED, FAILED, ERROR, SKIPPED = "held", "refuted", "failed", "error", "skipped"
# Claim verdicts, most severe first (the report's sort order).
VERDICTS = ("broken", "falsified", "reduced scale", "verified", "not run", "not exercised")


@dataclass
class StatementRun:
    """One statement test's definitive outcome, as carried from a worker to the controller."""

    test: str
    claim: str
    statement: str
    tier: str
    outcome: str
    reason: str = ""
    evidence: dict[str, Any] = field(default_factory=dict)
    figures: list[str] = field(default_factory=list)


def as_registered(run: StatementRun, claim: Claim) -> bool:
    expected = claim.statements[run.statement].expected
    return (run.outcome, expected) in ((HELD, "holds"), (REFUTED, "refuted"))


def contradicts(run: StatementRun, claim: Claim) -> bool:
    """An outcome that contradicts the registry: a crash, an error, or the opposite finding."""
    return run.outcome not in (SKIPPED,) and not as_registered(run, claim)


def claim_verdict(claim: Claim, runs: list[StatementRun], exercised: set[str]) -> tuple[str, str]:
    """(verdict, reason) for one claim from its statement runs and the statements that have tests."""
    if not exercised:
        return "not exercised", "no test in the suite names this claim"
    broken = [r for r in runs if contradicts(r, claim)]
    if broken:
        names = ", ".join(sorted({f"{r.statement} ({r.outcome})" for r in broken}))
        return "broken", f"outcome contradicts the registry: {names}"
    ran = [r for r in runs if r.outcome in (HELD, REFUTED)]
    if not ran:
        reasons = sorted({r.reason for r in runs if r.reason})
        return "not run", "; ".join(reasons) if reasons else "tier not selected"
    printed_refuted = sorted(
        {r.statement for r in ran if r.outcome == REFUTED and claim.statements[r.statement].refutes_claim}
    )
    if printed_refuted:
        return "falsified", "refuted as printed: " + ", ".join(printed_refuted)
    missing = []
    for name, statement in claim.statements.items():
        if not statement.required:
            continue
        decisive = [r for r in ran if r.statement == name and r.tier in statement.decisive_tiers]
        if not decisive:
            missing.append(name)
    if missing:
        return "reduced scale", "not run at a decisive scale: " + ", ".join(missing)
    return "verified", "every required statement ran at a decisive scale as registered"


def summarise(registry: Registry, runs: list[StatementRun], exercised: dict[str, set[str]]) -> list[dict[str, Any]]:
    """Claim records for the report and verdicts.json, in registry order (deterministic)."""
    by_claim: dict[str, list[StatementRun]] = {}
    for run in sorted(runs, key=lambda r: r.test):
        by_claim.setdefault(run.claim, []).append(run)
    records = []
    for claim in registry.claims.values():
        claim_runs = by_claim.get(claim.id, [])
        verdict, reason = claim_verdict(claim, claim_runs, exercised.get(claim.id, set()))
        headline: dict[str, Any] = {}
        for run in claim_runs:
            for name in run.evidence.get("headline", []):
                headline[f"{run.statement}: {name}"] = run.evidence.get(name)
        records.append(
            {
                "id": claim.id,
                "key": claim.key,
                "paper": claim.paper,
                "where": claim.where,
                "statement": claim.text,
                "provenance": claim.provenance,
                "expected": claim.expected,
                "verdict": verdict,
                "reason": reason,
                "tiers_run": sorted({r.tier for r in claim_runs if r.outcome in (HELD, REFUTED)}),
                "headline": headline,
                "statements": [
                    {
                        "test": r.test,
                        "statement": r.statement,
                        "text": claim.statements[r.statement].text,
                        "tier": r.tier,
                        "expected": claim.statements[r.statement].expected,
                        "outcome": r.outcome,
                        "as_registered": as_registered(r, claim) if r.outcome != SKIPPED else None,
                        "reason": r.reason,
                        "evidence": r.evidence,
                        "figures": r.figures,
                    }
                    for r in claim_runs
                ],
                "statements_without_tests": sorted(set(claim.statements) - exercised.get(claim.id, set())),
            }
        )
    return records
