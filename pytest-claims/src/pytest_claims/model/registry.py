"""The claim registry (TOML, kept as data) and its checks against the project."""

from __future__ import annotations

import dataclasses
import datetime as dt
import math
import re
import tomllib
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

from pytest_claims.model.evidence import RESERVED_NAMES, reserved_name_problem
from pytest_claims.outcomes import VERDICTS, Expected, Verdict
from pytest_claims.model.registry_families import Family, families_of

# A claim's `expected` is a verdict that says what the claim is, or one followed by the reading it depends on
# ("verified under ..."); broken, interrupted and not selected say what became of a run, not of the claim.
CLAIM_EXPECTED = tuple(v for v in VERDICTS if v not in (Verdict.BROKEN, Verdict.INTERRUPTED, Verdict.NOT_SELECTED))
EXPECTED_STATEMENT = tuple(Expected)


class RegistryError(ValueError):
    """A malformed registry record; the message names the record and the field."""


# Statement and Claim are the one definition of the registry's fields: their names, their types (a TOML array for a
# tuple, a table for a dict; `toml` in a field's metadata where the TOML form differs) and which are required (those
# without a default). The checks below and the merge's schema of a registered statement (inputs.py) derive from them.
@dataclass(frozen=True)
class Statement:
    name: str
    text: str
    expected: str
    refutes_claim: bool = False
    required: bool = True
    # The tiers whose run of it is decisive; a registry record that omits them means every tier of claims_tiers.
    decisive_tiers: tuple[str, ...] = field(kw_only=True, metadata={"toml_default": "claims_tiers"})
    scale_free: bool = False  # gives the same result at any scale: its tests run in every tier
    mutants: tuple[str, ...] = ()  # names of the mutants its tests must kill (change the registered outcome)
    mutants_waived: str = ""  # why a holds statement lists fewer than claims_min_mutants (say why none can be tried)
    # Mutants whose end is expected to be `errored` or `undecided` rather than a kill, with why:
    # {"mutant": "errored: why ..."}. Without an entry such an end fails the power check like a survivor.
    mutants_expected_end: dict[str, str] = field(default_factory=dict)
    # The probability, per tier, that its tests end against the registry although the statement is true
    # (random draws, a chaotic trajectory); absent: no random ingredient decides it. `false_alarm_basis`
    # says where each number comes from (a test's level, a computed tail, a simulation). In TOML also one number
    # for every tier.
    false_alarm: dict[str, float] = field(default_factory=dict, metadata={"toml": (int, float, dict)})
    false_alarm_basis: str = ""
    # How its rate decisions decide, registered before the data: {} (not said), {"method": "fixed"}, or
    # {"method": "anytime"} with an optional "prior" {a, b[, point_mass]} or "plan" (trials): _decision.
    decision: dict[str, Any] = field(default_factory=dict, metadata={"toml": (str, dict)})
    # Its test, level or expectation changed after its data existed: {"date": "YYYY-MM-DD", "commit": "<hex>",
    # "why": "..."} (_changed_after_data); {} if its rule is the one registered before the data. Shown beside its
    # verdict and its claim's in the report.
    changed_after_data: dict[str, str] = field(default_factory=dict)

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
    provenance: str = field(default="", kw_only=True)
    expected: str
    tests: str = ""  # the module holding its statement tests (a collection error there breaks the claim)
    key_numbers: tuple[str, ...] = ()  # "statement: evidence name" entries shown in the claim table
    figure: str = ""  # the statement whose first figure is the claim's thumbnail
    # In TOML an array of tables named `statement`, one per statement.
    statements: dict[str, Statement] = field(default_factory=dict, metadata={"toml": (list,), "toml_name": "statement"})
    # In TOML an array of tables named `family` (registry_families): statements decided as one, with one alpha.
    families: dict[str, Family] = field(default_factory=dict, metadata={"toml": (list,), "toml_name": "family"})

    def family_of(self, statement: str) -> Family | None:
        """The family that holds `statement`, or None where it is decided alone. Returns a Family or None."""
        return next((f for f in self.families.values() if statement in f.statements), None)


@dataclass(frozen=True)
class Registry:
    papers: dict[str, dict[str, str]]
    claims: dict[str, Claim]
    tiers: tuple[str, ...]  # claims_tiers (empty in a merge, which reads verdicts.json files and no ini)

    def claims_of_module(self, module: str) -> list[Claim]:
        """The claims whose statement tests live in `module` (a path relative to the rootdir)."""
        module = module.replace("\\", "/")
        return [c for c in self.claims.values() if c.tests and (module == c.tests or module.endswith("/" + c.tests))]


def field_types(cls: type) -> dict[str, Any]:
    """The Python type of each field of a registry dataclass, by its name in the dataclass."""
    return typing.get_type_hints(cls)


def toml_types(cls: type) -> dict[str, tuple[type, ...]]:
    """Each field of a registry dataclass by its TOML name, with the TOML types it may be written as (a string is not a
    boolean: `refutes_claim = "false"` would read as true)."""
    hints = field_types(cls)
    out = {}
    for f in dataclasses.fields(cls):
        origin = typing.get_origin(hints[f.name]) or hints[f.name]
        out[f.metadata.get("toml_name", f.name)] = f.metadata.get("toml", (list,) if origin is tuple else (origin,))
    return out


def required_fields(cls: type) -> set[str]:
    """The fields a registry record must give: those without a default, in the dataclass or in the registry."""
    no_default = dataclasses.MISSING
    return {
        f.name
        for f in dataclasses.fields(cls)
        if f.default is no_default and f.default_factory is no_default and "toml_default" not in f.metadata
    }


CLAIM_TYPES = toml_types(Claim)
STATEMENT_TYPES = toml_types(Statement)
CLAIM_FIELDS, STATEMENT_FIELDS = set(CLAIM_TYPES), set(STATEMENT_TYPES)
# The fields written as an array of strings (a tuple of them in the dataclass).
STRING_ARRAYS = {
    name for cls in (Claim, Statement) for name, hint in field_types(cls).items() if typing.get_origin(hint) is tuple
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
        if ok and isinstance(value, list) and name in STRING_ARRAYS:
            ok = all(isinstance(v, str) for v in value)
        if not ok:
            wanted = " or ".join(dict.fromkeys(TYPE_NAMES[t] for t in allowed))
            suffix = " of strings" if name in STRING_ARRAYS else ""
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


def _decision(record: dict[str, Any], where: str) -> dict[str, Any]:
    """`decision` as {"method": "fixed" | "anytime"[, "prior": {a, b[, point_mass]} | "plan": trials][, "why": ..]};
    {} if absent. A string names the method alone; a table may add an anytime statement's prior or planned size,
    and the reason for the choice (`why`, kept in the statement's registry record in verdicts.json)."""
    raw = record.get("decision")
    if raw is None:
        return {}
    table = {"method": raw} if isinstance(raw, str) else dict(raw)
    problem = _decision_problem(table)
    if problem:
        raise RegistryError(f"registry: {where} field 'decision': {problem}")
    return table


def _decision_problem(table: dict[str, Any]) -> str:
    method, extra = table.get("method"), sorted(set(table) - {"method", "prior", "plan", "why"})
    if method not in ("fixed", "anytime"):
        return f"method must be 'fixed' or 'anytime', got {method!r}"
    if extra:
        return f"unknown key(s) {extra} (allowed: method, prior, plan, why)"
    if "why" in table and not (isinstance(table["why"], str) and table["why"].strip()):
        return f"why must be a non-empty string (the reason for the method), got {table['why']!r}"
    if method == "fixed" and {"prior", "plan"} & set(table):
        return "'fixed' takes no prior or plan"
    if {"prior", "plan"} <= set(table):
        return "give a prior or a plan, not both"
    plan = table.get("plan", 1)
    if isinstance(plan, bool) or not isinstance(plan, int) or plan < 1:
        return f"plan must be a whole number of trials > 0, got {plan!r}"
    return _prior_problem(table["prior"]) if "prior" in table else ""


def _prior_problem(prior: Any) -> str:
    """Why `prior` is not {a = .., b = .. [, point_mass = ..]} with a, b > 0 and point_mass in [0, 1]; "" if it is."""
    numbers = isinstance(prior, dict) and all(
        isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) for v in prior.values()
    )
    if not numbers or not {"a", "b"} <= set(prior) <= {"a", "b", "point_mass"}:
        return f"prior must be a table {{a = .., b = .. [, point_mass = ..]}} of numbers, got {prior!r}"
    if not (prior["a"] > 0 and prior["b"] > 0 and 0 <= prior.get("point_mass", 0) <= 1):
        return f"prior needs a, b > 0 and point_mass in [0, 1], got {prior!r}"
    return ""


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
            if s.expected == Expected.HOLDS and len(s.mutants) < min_mutants and not s.mutants_waived.strip():
                raise RegistryError(
                    f"registry: statement {claim.id}:{s.name} field 'mutants' lists {len(s.mutants)}, fewer than "
                    f"claims_min_mutants = {min_mutants} (add mutants, or say why none can be tried in mutants_waived)"
                )


def false_alarm_budget(registry: "Registry") -> dict[str, dict[str, Any]]:
    """Per tier: every statement's registered false-alarm probability, every family's alpha (in the tiers where a
    member is decisive; pytest_claims.statements.families), and their sum (a union bound on the chance that a run of the
    tier ends against the registry although every statement is true)."""
    out: dict[str, dict[str, Any]] = {}
    for tier in registry.tiers:
        rows: list[dict[str, Any]] = [
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
        rows += [
            {
                "claim": c.id,
                "key": c.key,
                "statement": f"family {f.name} ({', '.join(f.statements)})",
                "probability": f.alpha,
                "basis": f"family-wise, by {f.method}",
            }
            for c in registry.claims.values()
            for f in c.families.values()
            if any(tier in c.statements[m].decisive_tiers for m in f.statements)
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
    lacking = sorted(required_fields(Statement) - set(st))
    if lacking:
        raise RegistryError(f"registry: statement {where} lacks {lacking}")
    if st.get("expected") not in EXPECTED_STATEMENT:
        raise RegistryError(f"registry: {where} expected must be one of {EXPECTED_STATEMENT}")
    decisive = tuple(st.get("decisive_tiers", tiers))
    if not set(decisive) <= set(tiers):
        raise RegistryError(f"registry: {where} has unknown decisive tiers {decisive} (tiers: {tiers})")
    if st["expected"] == Expected.REFUTED and "refutes_claim" not in st:
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
        decision=_decision(st, where),
        changed_after_data=_changed_after_data(st, where),
    )


CHANGED_AFTER_DATA_KEYS = ("date", "commit", "why")


def _changed_after_data(record: dict[str, Any], where: str) -> dict[str, str]:
    """`changed_after_data` as {date, commit, why} (a date YYYY-MM-DD, a commit's hex id of 7 to 40 digits, a
    non-empty reason), or one RegistryError naming the statement and the field; {} if absent."""
    raw = record.get("changed_after_data")
    if raw is None:
        return {}
    problem = ""
    if sorted(raw) != sorted(CHANGED_AFTER_DATA_KEYS):
        problem = f"must be a table of exactly {', '.join(CHANGED_AFTER_DATA_KEYS)}, got keys {sorted(raw)}"
    elif not all(isinstance(raw[k], str) for k in CHANGED_AFTER_DATA_KEYS):
        problem = "date, commit and why must be strings"
    elif not re.fullmatch(r"\d{4}-\d{2}-\d{2}", raw["date"]) or not _is_date(raw["date"]):
        problem = f"date must be a date YYYY-MM-DD, got {raw['date']!r}"
    elif not re.fullmatch(r"[0-9a-f]{7,40}", raw["commit"]):
        problem = f"commit must be a commit id of 7 to 40 hex digits, got {raw['commit']!r}"
    elif not raw["why"].strip():
        problem = "why must say what changed after the data and why"
    if problem:
        raise RegistryError(f"registry: statement {where} field 'changed_after_data' {problem}")
    return {k: raw[k] for k in CHANGED_AFTER_DATA_KEYS}


def _is_date(text: str) -> bool:
    try:
        dt.date.fromisoformat(text)
    except ValueError:
        return False
    return True


def _claim(record: dict[str, Any], papers: dict[str, dict[str, str]], tiers: tuple[str, ...]) -> Claim:
    """One [[claim]] record with its statements, validated."""
    cid = record.get("id", "?")
    _unknown(record, CLAIM_FIELDS, f"claim {cid!r}")
    _check_types(record, CLAIM_TYPES, f"claim {cid!r}")
    missing = sorted(required_fields(Claim) - set(record))
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
    families, problem = families_of(record.get("family", []), statements)
    if problem:
        raise RegistryError(f"registry: claim {cid!r} {problem}")
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
        families=families,
    )


def load_registry(paths: Iterable[Path] | Path, tiers: tuple[str, ...]) -> Registry:
    """Parse and validate one or more registry files (`tiers`: claims_tiers); a malformed record raises
    RegistryError naming it."""
    papers, raw_claims = _read_files([Path(paths)] if isinstance(paths, (str, Path)) else paths)
    claims: dict[str, Claim] = {}
    for record in raw_claims:
        claim = _claim(record, papers, tiers)
        if claim.id in claims:
            raise RegistryError(f"registry: duplicate claim id {claim.id!r}")
        claims[claim.id] = claim
    return Registry(papers=papers, claims=claims, tiers=tiers)
