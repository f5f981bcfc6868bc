"""The claim registry (TOML, kept as data), its checks against the project, and `statement_holds`."""

from __future__ import annotations

import math
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

from pytest_claims.evidence import RESERVED_NAMES, reserved_name_problem
from pytest_claims.assertions import statement_holds  # noqa: F401 (its old import path)
from pytest_claims.outcomes import ClaimRefuted  # noqa: F401 (statement_holds raises it; its old import path)

DEFAULT_TIERS = ("smoke", "full", "gpu")
EXPECTED_STATEMENT = ("holds", "refuted")

CLAIM_FIELDS = {
    "id",
    "key",
    "paper",
    "where",
    "text",
    "provenance",
    "expected",
    "tests",
    "key_numbers",
    "figure",
    "statement",
}
STATEMENT_FIELDS = {
    "name",
    "text",
    "expected",
    "refutes_claim",
    "required",
    "decisive_tiers",
    "scale_free",
    "mutants",
    "mutants_waived",
    "mutants_expected_end",
    "false_alarm",
    "false_alarm_basis",
}
# A claim's `expected` is a verdict, or a verdict followed by the reading it depends on ("verified under ...").
CLAIM_EXPECTED = ("verified", "falsified", "inconclusive", "reduced scale", "not run", "not exercised")


class RegistryError(ValueError):
    """A malformed registry record; the message names the record and the field."""


@dataclass(frozen=True)
class Statement:
    name: str
    text: str
    expected: str
    refutes_claim: bool = False
    required: bool = True
    decisive_tiers: tuple[str, ...] = DEFAULT_TIERS
    scale_free: bool = False  # gives the same result at any scale: its tests run in every tier
    mutants: tuple[str, ...] = ()  # names of the mutants its tests must kill (change the registered outcome)
    mutants_waived: str = ""  # why a holds statement lists fewer than claims_min_mutants (say why none can be tried)
    # Mutants whose end is expected to be `errored` or `undecided` rather than a kill, with why:
    # {"mutant": "errored: why ..."}. Without an entry such an end fails the power check like a survivor.
    mutants_expected_end: dict[str, str] = field(default_factory=dict)
    # The probability, per tier, that its tests end against the registry although the statement is true
    # (random draws, a chaotic trajectory); absent: no random ingredient decides it. `false_alarm_basis`
    # says where each number comes from (a test's level, a computed tail, a simulation).
    false_alarm: dict[str, float] = field(default_factory=dict)
    false_alarm_basis: str = ""

    def false_alarm_at(self, tier: str) -> float:
        """The registered false-alarm probability at `tier` (0 where none is registered)."""
        return float(self.false_alarm.get(tier, 0.0))


@dataclass(frozen=True)
class Claim:
    id: str
    key: str
    paper: str
    where: str
    text: str
    provenance: str
    expected: str
    tests: str = ""  # the module holding its statement tests (a collection error there breaks the claim)
    key_numbers: tuple[str, ...] = ()  # "statement: evidence name" entries shown in the claim table
    figure: str = ""  # the statement whose first figure is the claim's thumbnail
    statements: dict[str, Statement] = field(default_factory=dict)


@dataclass(frozen=True)
class Registry:
    papers: dict[str, dict[str, str]]
    claims: dict[str, Claim]
    tiers: tuple[str, ...] = DEFAULT_TIERS

    def claims_of_module(self, module: str) -> list[Claim]:
        """The claims whose statement tests live in `module` (a path relative to the rootdir)."""
        module = module.replace("\\", "/")
        return [c for c in self.claims.values() if c.tests and (module == c.tests or module.endswith("/" + c.tests))]


# The type of every field (a string is not a boolean: `refutes_claim = "false"` would read as true).
CLAIM_TYPES: dict[str, tuple[type, ...]] = {
    **{name: (str,) for name in ("id", "key", "paper", "where", "text", "provenance", "expected", "tests", "figure")},
    "key_numbers": (list,),
    "statement": (list,),
}
STATEMENT_TYPES: dict[str, tuple[type, ...]] = {
    **{name: (str,) for name in ("name", "text", "expected", "false_alarm_basis", "mutants_waived")},
    **{name: (bool,) for name in ("refutes_claim", "required", "scale_free")},
    "decisive_tiers": (list,),
    "mutants": (list,),
    "mutants_expected_end": (dict,),
    "false_alarm": (int, float, dict),
}
TYPE_NAMES = {
    str: "a string",
    bool: "a boolean (true or false, unquoted)",
    list: "an array",
    dict: "a table",
    int: "a number",
    float: "a number",
}


def _check_types(record: dict[str, Any], types: dict[str, tuple[type, ...]], where: str) -> None:
    for name, value in record.items():
        allowed = types.get(name)
        if allowed is None:
            continue
        ok = isinstance(value, allowed) and not (isinstance(value, bool) and bool not in allowed)
        if ok and isinstance(value, list) and name != "statement":
            ok = all(isinstance(v, str) for v in value)
        if not ok:
            wanted = " or ".join(dict.fromkeys(TYPE_NAMES[t] for t in allowed))
            suffix = " of strings" if allowed == (list,) and name != "statement" else ""
            raise RegistryError(f"registry: {where} field {name!r} must be {wanted}{suffix}, got {value!r}")


def _unknown(record: dict[str, Any], allowed: set[str], where: str) -> None:
    extra = sorted(set(record) - allowed)
    if extra:
        raise RegistryError(f"registry: {where} has unknown field(s) {extra} (allowed: {sorted(allowed)})")


def _false_alarm(record: dict[str, Any], tiers: tuple[str, ...], where: str) -> dict[str, float]:
    """`false_alarm` as {tier: probability}: a table of tiers, or one number for every tier it runs in."""
    raw = record.get("false_alarm")
    if raw is None:
        if record.get("false_alarm_basis"):
            raise RegistryError(f"registry: {where} has false_alarm_basis but no false_alarm")
        return {}
    table = raw if isinstance(raw, dict) else {tier: raw for tier in tiers}
    out = {}
    for tier, value in table.items():
        if tier not in tiers:
            raise RegistryError(f"registry: {where} false_alarm names unknown tier {tier!r} (tiers: {tiers})")
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < 0.5:
            raise RegistryError(
                f"registry: {where} false_alarm[{tier}] must be a probability in [0, 0.5) (what the statistics "
                f"helpers take as a level), got {value!r}"
            )
        out[tier] = float(value)
    if any(out.values()) and not str(record.get("false_alarm_basis", "")).strip():
        raise RegistryError(
            f"registry: {where} states a false_alarm without false_alarm_basis (say how it was obtained)"
        )
    return out


MUTANT_ENDS_NOT_KILLS = ("errored", "undecided")  # the ends a registry may say are expected for a mutant


def _expected_ends(record: dict[str, Any], where: str) -> dict[str, str]:
    """`mutants_expected_end` as {mutant: "errored: why"}: each key a mutant the statement lists, each value
    an end that is not a kill followed by a colon and the reason."""
    table = record.get("mutants_expected_end", {})
    listed = set(record.get("mutants", ()))
    for mutant, text in table.items():
        if mutant not in listed:
            raise RegistryError(
                f"registry: {where} mutants_expected_end names {mutant!r}, not a mutant the statement lists"
            )
        end, sep, why = text.partition(":") if isinstance(text, str) else ("", "", "")
        if end.strip() not in MUTANT_ENDS_NOT_KILLS or not sep or not why.strip():
            raise RegistryError(
                f"registry: {where} mutants_expected_end[{mutant!r}] must read 'errored: why' or "
                f"'undecided: why', got {text!r}"
            )
    return {mutant: text.strip() for mutant, text in table.items()}


def check_against_project(registry: "Registry", root: Path, min_mutants: int) -> None:
    """What the registry names must exist in the project: each claim's `tests` module, and at least
    `min_mutants` mutants per holds statement (or `mutants_waived` saying why not)."""
    for claim in registry.claims.values():
        if claim.tests and not (root / claim.tests).is_file():
            raise RegistryError(
                f"registry: claim {claim.id!r} field 'tests' names {claim.tests!r}, not a file under the rootdir {root}"
            )
        for s in claim.statements.values():
            if s.expected == "holds" and len(s.mutants) < min_mutants and not s.mutants_waived.strip():
                raise RegistryError(
                    f"registry: statement {claim.id}:{s.name} field 'mutants' lists {len(s.mutants)}, fewer than "
                    f"claims_min_mutants = {min_mutants} (add mutants, or say why none can be tried in mutants_waived)"
                )


def false_alarm_budget(registry: "Registry") -> dict[str, dict[str, Any]]:
    """Per tier: every statement's registered false-alarm probability and their sum (a union bound on the
    chance that a run of the tier ends against the registry although every statement is true)."""
    out: dict[str, dict[str, Any]] = {}
    for tier in registry.tiers:
        rows = [
            {
                "claim": c.id,
                "key": c.key,
                "statement": s.name,
                "probability": s.false_alarm[tier],
                "basis": s.false_alarm_basis,
            }
            for c in registry.claims.values()
            for s in c.statements.values()
            if tier in s.false_alarm
        ]
        out[tier] = {"sum": math.fsum(r["probability"] for r in rows), "statements": rows}
    return out


def _read_files(paths: Iterable[Path]) -> tuple[dict[str, dict[str, str]], list[dict[str, Any]]]:
    """The papers and the raw claim records of every registry file."""
    papers: dict[str, dict[str, str]] = {}
    raw_claims: list[dict[str, Any]] = []
    for path in paths:
        try:
            with open(path, "rb") as handle:
                raw = tomllib.load(handle)
        except FileNotFoundError:
            raise RegistryError(f"registry file not found: {path}") from None
        except tomllib.TOMLDecodeError as error:
            raise RegistryError(f"registry {path}: {error}") from None
        papers.update(raw.get("paper", {}))
        raw_claims.extend(raw.get("claim", []))
    return papers, raw_claims


def _statement(st: dict[str, Any], cid: str, tiers: tuple[str, ...]) -> Statement:
    """One [[claim.statement]] record, validated."""
    name = st.get("name", "?")
    where = f"{cid}:{name}"
    _unknown(st, STATEMENT_FIELDS, f"statement {where}")
    _check_types(st, STATEMENT_TYPES, f"statement {where}")
    lacking = sorted({"name", "text", "expected"} - set(st))
    if lacking:
        raise RegistryError(f"registry: statement {where} lacks {lacking}")
    if st.get("expected") not in EXPECTED_STATEMENT:
        raise RegistryError(f"registry: {where} expected must be one of {EXPECTED_STATEMENT}")
    decisive = tuple(st.get("decisive_tiers", tiers))
    if not set(decisive) <= set(tiers):
        raise RegistryError(f"registry: {where} has unknown decisive tiers {decisive} (tiers: {tiers})")
    if st["expected"] == "refuted" and "refutes_claim" not in st:
        raise RegistryError(
            f"registry: statement {where} is registered refuted and must say refutes_claim = true "
            "(its refutation falsifies the claim as printed) or false (a side finding)"
        )
    return Statement(
        name=name,
        text=st["text"],
        expected=st["expected"],
        refutes_claim=st.get("refutes_claim", False),
        required=bool(st.get("required", True)),
        decisive_tiers=decisive,
        scale_free=bool(st.get("scale_free", False)),
        mutants=tuple(st.get("mutants", ())),
        mutants_waived=st.get("mutants_waived", ""),
        mutants_expected_end=_expected_ends(st, where),
        false_alarm=_false_alarm(st, tiers, where),
        false_alarm_basis=str(st.get("false_alarm_basis", "")),
    )


def _claim(record: dict[str, Any], papers: dict[str, dict[str, str]], tiers: tuple[str, ...]) -> Claim:
    """One [[claim]] record with its statements, validated."""
    cid = record.get("id", "?")
    _unknown(record, CLAIM_FIELDS, f"claim {cid!r}")
    _check_types(record, CLAIM_TYPES, f"claim {cid!r}")
    missing = sorted({"id", "key", "paper", "where", "text", "expected"} - set(record))
    if missing:
        raise RegistryError(f"registry: claim {cid!r} lacks {missing}")
    if not any(record["expected"] == v or record["expected"].startswith(v + " ") for v in CLAIM_EXPECTED):
        raise RegistryError(
            f"registry: claim {cid!r} field 'expected' must be a verdict of {CLAIM_EXPECTED} "
            f"(optionally followed by the reading it depends on), got {record['expected']!r}"
        )
    if record["paper"] not in papers:
        raise RegistryError(f"registry: claim {cid!r} names unknown paper {record['paper']!r}")
    statements: dict[str, Statement] = {}
    for st in record.get("statement", []):
        statement = _statement(st, cid, tiers)
        if statement.name in statements:
            raise RegistryError(f"registry: duplicate statement {cid}:{statement.name}")
        statements[statement.name] = statement
    key_numbers = tuple(record.get("key_numbers", ()))
    for entry in key_numbers:
        statement_name, sep, evidence_name = entry.partition(":")
        if evidence_name.strip() in RESERVED_NAMES:
            raise RegistryError(
                f"registry: claim {cid!r} key number {entry!r}: {reserved_name_problem(evidence_name.strip())}"
            )
        if not sep or statement_name.strip() not in statements:
            raise RegistryError(
                f"registry: claim {cid!r} key number {entry!r} "
                "must read 'statement: evidence name' with a known statement"
            )
    figure = record.get("figure", "")
    if figure and figure not in statements:
        raise RegistryError(f"registry: claim {cid!r} figure names unknown statement {figure!r}")
    return Claim(
        id=cid,
        key=record["key"],
        paper=record["paper"],
        where=record["where"],
        text=record["text"],
        provenance=record.get("provenance", ""),
        expected=record["expected"],
        tests=record.get("tests", ""),
        key_numbers=key_numbers,
        figure=figure,
        statements=statements,
    )


def load_registry(paths: Iterable[Path] | Path, tiers: tuple[str, ...] = DEFAULT_TIERS) -> Registry:
    """Parse and validate one or more registry files; a malformed record raises RegistryError naming it."""
    papers, raw_claims = _read_files([Path(paths)] if isinstance(paths, (str, Path)) else paths)
    claims: dict[str, Claim] = {}
    for record in raw_claims:
        claim = _claim(record, papers, tiers)
        if claim.id in claims:
            raise RegistryError(f"registry: duplicate claim id {claim.id!r}")
        claims[claim.id] = claim
    return Registry(papers=papers, claims=claims, tiers=tiers)
