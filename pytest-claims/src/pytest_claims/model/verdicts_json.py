"""verdicts.json: its one builder (used by the run and the merge alike), its text and its readers.

A payload is built from the same inputs wherever it is made: the registry, each claim's `ClaimInputs` (statement
runs, problems, what was selected and exercised), the reference tests, the collection errors and the runs it
describes. Reading one back gives the same inputs again (`claims_from`), so a merge of one run reproduces that
run's verdicts, every cause of `broken` included, and a merge of merged files does too.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pytest_claims.store import bounded
from pytest_claims.outcomes import Verdict
from pytest_claims.model.registry import Claim, Registry, Statement
from pytest_claims.model.registry_families import families_of
from pytest_claims.model.verdicts import (
    READABLE_SCHEMA_VERSIONS,
    SCHEMA_VERSION,
    ClaimInputs,
    StatementRun,
    summarise,
)

# A full tier's file is a few MB; a larger one is not a run's and is refused unread. Reading JSON costs up to about 25
# times the file's size in memory (measured: a 180 MB file needed over 4 GB; 32 MiB of empty tables, 835 MiB), so the
# limit keeps a read under about 450 MB.
MAX_VERDICTS_BYTES = 16 * 2**20


class PayloadError(ValueError):
    """A file that is not a readable verdicts.json of this schema."""


def build(
    registry: Registry,
    inputs: dict[str, ClaimInputs],
    *,
    suite: str,
    tier: str,
    seed: Any,
    mutants_run: bool,
    environment: dict[str, Any],
    false_alarm: dict[str, Any],
    reference: dict[str, str],
    collection_errors: list[dict[str, str]],
    runs: list[dict[str, Any]],
    timings: dict[str, Any],
) -> dict[str, Any]:
    """The verdicts.json payload (claim verdicts by `verdicts.summarise`, the rules of a single run)."""
    payload: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "suite": suite,
        "tier": tier,
        "seed": seed,
        "mutants_run": mutants_run,
        "environment": environment,
        "papers": registry.papers,
        "claims": summarise(registry, inputs),
        "false_alarm": false_alarm,
        "reference_tests": [{"test": t, "outcome": o} for t, o in sorted(reference.items())],
        "collection_errors": collection_errors,
        "runs": runs,
        "timings": timings,
    }
    return payload


def text(payload: dict[str, Any]) -> str:
    """The file's text (report_files writes it atomically beside the HTML; runs saves a numbered copy)."""
    return json.dumps(payload, indent=1) + "\n"


def read(path: Path) -> dict[str, Any]:
    """A verdicts.json of this schema, its top-level fields checked (PayloadError names the file otherwise)."""
    payload = _json_of(path, str(path))
    if not isinstance(payload, dict):
        raise PayloadError(f"{path}: not a verdicts.json (a JSON {type(payload).__name__}, not an object)")
    if payload.get("schema_version") not in READABLE_SCHEMA_VERSIONS:
        raise PayloadError(
            f"{path}: schema_version {payload.get('schema_version')!r}, this merge reads "
            f"{' and '.join(map(str, READABLE_SCHEMA_VERSIONS))}"
        )
    missing = [
        k
        for k, kind in (("claims", list), ("runs", list), ("papers", dict), ("tier", str))
        if not isinstance(payload.get(k), kind)
    ]
    if missing:
        raise PayloadError(f"{path}: not a verdicts.json (lacks {', '.join(missing)})")
    return payload


def _json_of(path: str | Path, label: str) -> Any:
    """The JSON of a regular file of at most MAX_VERDICTS_BYTES (pytest_claims.store.bounded: a FIFO, a device or a
    larger file is refused unread, JSON nested too deep in one line); PayloadError names `label`."""
    try:
        return bounded.read_json(path, MAX_VERDICTS_BYTES, ceiling="the limit for a verdicts.json")
    except bounded.InputRefused as error:
        raise PayloadError(f"{label}: {error}") from None
    except (OSError, ValueError) as error:
        raise PayloadError(f"{label}: not a readable verdicts.json ({error})") from None


def read_any(path: str | Path, label: str = "") -> dict[str, Any]:
    """A verdicts.json of any schema, of which only the claims (and what describes the run) are compared: a previous
    run's or a saved one. PayloadError names the file (or `label`) otherwise."""
    label = label or str(path)
    payload = _json_of(path, label)
    if not isinstance(payload, dict) or not isinstance(payload.get("claims"), list):
        raise PayloadError(f"{label}: not a verdicts.json (no list of claims)")
    return payload


def read_previous(path: str) -> dict[str, Any]:
    """A previous run's verdicts.json for `--previous-verdicts` (any schema: only its claims are compared)."""
    return read_any(path, f"--claims-previous-verdicts {path}")


def claim_from(record: dict[str, Any]) -> Claim:
    """The registry record of a claim, as verdicts.json carries it."""
    reg = record["registry"]
    statements = {
        name: Statement(name=name, **{k: tuple(v) if isinstance(v, list) else v for k, v in fields.items()})  # type: ignore[arg-type]
        for name, fields in reg["statements"].items()
    }
    return Claim(
        id=record["id"],
        key=record["key"],
        paper=record["paper"],
        where=record["where"],
        text=record["statement"],
        provenance=record["provenance"],
        expected=record["expected"],
        tests=reg["tests"],
        key_numbers=tuple(reg["key_numbers"]),
        figure=reg["figure"],
        statements=statements,
        families=families_of(reg.get("families", []), statements)[0],
    )


def problems_of(record: dict[str, Any]) -> list[str]:
    """The causes of `broken` that are not statement outcomes (crashed processes, collection errors, conflicts
    between runs, registry drift). A file written before claims carried `problems` keeps its collection errors."""
    if "problems" in record:
        return list(record["problems"])
    if record["verdict"] == Verdict.BROKEN and record["reason"].startswith("collection error"):
        return [record["reason"]]
    return []


def claims_from(payload: dict[str, Any]) -> list[tuple[Claim, ClaimInputs]]:
    """Each claim of a payload with the inputs its verdict was computed from (the inverse of `build`'s claims)."""
    out = []
    for record in payload["claims"]:
        claim = claim_from(record)
        inputs = ClaimInputs(
            runs=[StatementRun.from_dict(dict(s, claim=record["id"])) for s in record["statements"]],
            exercised=set(claim.statements) - set(record["statements_without_tests"]),
            selected=record["verdict"] != Verdict.NOT_SELECTED,
            has_tests=record["verdict"] != Verdict.NOT_EXERCISED,
            problems=problems_of(record),
            not_reached=set(record.get("not_reached") or []),
            interrupted_by=record.get("interrupted_by", "") if record.get("not_reached") else "",
        )
        out.append((claim, inputs))
    return out
