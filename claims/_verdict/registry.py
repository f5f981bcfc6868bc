"""The claim registry (claims/registry.toml) and the exception that records a refutation."""
from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from pathlib import Path

REGISTRY_PATH = Path(__file__).resolve().parent.parent / "registry.toml"
TIERS = ("smoke", "full", "gpu")
EXPECTED_STATEMENT = ("holds", "refuted")


class ClaimRefuted(AssertionError):
    """Raised by a statement test when the statement, as asserted, is false on the evidence.

    Only this exception satisfies the strict expected failure of a statement registered as
    refuted, so an import error or a crash can never pass for a refutation.
    """


def statement_holds(condition: bool, message: str) -> None:
    """Assert a statement as printed; a false statement raises ClaimRefuted with the message."""
    __tracebackhide__ = True
    if not bool(condition):
        raise ClaimRefuted(message)


@dataclass(frozen=True)
class Statement:
    name: str
    text: str
    expected: str
    refutes_claim: bool = False
    required: bool = True
    decisive_tiers: tuple[str, ...] = TIERS


@dataclass(frozen=True)
class Claim:
    id: str
    key: str
    paper: str
    where: str
    text: str
    provenance: str
    expected: str
    statements: dict[str, Statement] = field(default_factory=dict)


@dataclass(frozen=True)
class Registry:
    papers: dict[str, dict[str, str]]
    claims: dict[str, Claim]


def load_registry(path: Path = REGISTRY_PATH) -> Registry:
    """Parse and validate the registry; a malformed record raises ValueError naming it."""
    with open(path, "rb") as handle:
        raw = tomllib.load(handle)
    papers = raw.get("paper", {})
    claims: dict[str, Claim] = {}
    for record in raw.get("claim", []):
        cid = record["id"]
        if cid in claims:
            raise ValueError(f"registry: duplicate claim id {cid!r}")
        if record["paper"] not in papers:
            raise ValueError(f"registry: claim {cid!r} names unknown paper {record['paper']!r}")
        statements: dict[str, Statement] = {}
        for st in record.get("statement", []):
            if st["expected"] not in EXPECTED_STATEMENT:
                raise ValueError(f"registry: {cid}:{st['name']} expected must be one of {EXPECTED_STATEMENT}")
            tiers = tuple(st.get("decisive_tiers", TIERS))
            if not set(tiers) <= set(TIERS):
                raise ValueError(f"registry: {cid}:{st['name']} has unknown decisive tiers {tiers}")
            statements[st["name"]] = Statement(
                name=st["name"],
                text=st["text"],
                expected=st["expected"],
                refutes_claim=bool(st.get("refutes_claim", st["expected"] == "refuted")),
                required=bool(st.get("required", True)),
                decisive_tiers=tiers,
            )
        claims[cid] = Claim(
            id=cid,
            key=record["key"],
            paper=record["paper"],
            where=record["where"],
            text=record["text"],
            provenance=record.get("provenance", ""),
            expected=record["expected"],
            statements=statements,
        )
    return Registry(papers=papers, claims=claims)
