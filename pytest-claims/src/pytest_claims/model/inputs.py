"""Inputs from elsewhere, checked as data before use: a verdicts.json given to the merge or to --previous-verdicts
(field by field against the schema, one line naming the file and the field), figure paths confined to their run's
directory, and a merge's output directory that must not hold its inputs.

A verdicts.json may come from another machine, an older plugin or a hand: nothing of it is read, copied or shown
before this module has checked the fields that will be used. Keys this schema does not use are ignored (they are
never read, so they cannot do harm; a later minor addition to the file does not stop a merge).
"""

from __future__ import annotations

import dataclasses
import math
import typing
from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import Any, Callable

from pytest_claims.outcomes import OUTCOMES, VERDICTS
from pytest_claims.model.verdicts_json import PayloadError
from pytest_claims.stats.binomial import finite_number
from pytest_claims.model.registry import EXPECTED_STATEMENT, Statement, field_types


class InputError(PayloadError):
    """A field of an input file that the merge or the report cannot safely use; the message names file and field."""


Check = Callable[[Any, str], None]  # raises _Bad(where, problem)


class _Bad(Exception):
    def __init__(self, where: str, problem: str) -> None:
        super().__init__(where, problem)
        self.where, self.problem = where, problem


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _kind(name: str, test: Callable[[Any], bool]) -> Check:
    def check(value: Any, where: str) -> None:
        if not test(value):
            raise _Bad(where, f"must be {name}, got {_shown(value)}")

    return check


STR = _kind("a string", lambda v: isinstance(v, str))
BOOL = _kind("true or false", lambda v: isinstance(v, bool))
INT = _kind("an integer", lambda v: isinstance(v, int) and not isinstance(v, bool))


# No NaN or infinity (json.dumps would write them, and a merged verdicts.json would not be JSON), no integer beyond a
# float's range (the page formats it as a float).
NUMBER = _kind("a finite number", finite_number)
ANY: Check = lambda value, where: None  # noqa: E731 (any JSON value: shown escaped, never interpreted)


def one_of(values: tuple[str, ...]) -> Check:
    def check(value: Any, where: str) -> None:
        if value not in values:
            raise _Bad(where, f"must be one of {', '.join(values)}, got {_shown(value)}")

    return check


def optional(inner: Check) -> Check:
    def check(value: Any, where: str) -> None:
        if value is not None:
            inner(value, where)

    return check


def list_of(inner: Check) -> Check:
    def check(value: Any, where: str) -> None:
        if not isinstance(value, list):
            raise _Bad(where, f"must be a list, got {_shown(value)}")
        for i, item in enumerate(value):
            inner(item, f"{where}[{i}]")

    return check


def dict_of(inner: Check) -> Check:
    def check(value: Any, where: str) -> None:
        if not isinstance(value, dict):
            raise _Bad(where, f"must be an object, got {_shown(value)}")
        for key, item in value.items():
            inner(item, f"{where}[{key!r}]")

    return check


def record(required: dict[str, Check], optional_fields: dict[str, Check] | None = None, closed: bool = False) -> Check:
    """An object with these fields (`closed`: and no others, where the reader passes every field on)."""
    optional_fields = optional_fields or {}

    def check(value: Any, where: str) -> None:
        if not isinstance(value, dict):
            raise _Bad(where, f"must be an object, got {_shown(value)}")
        missing = [k for k in required if k not in value]
        if missing:
            raise _Bad(where, f"lacks {', '.join(missing)}")
        if closed:
            unknown = sorted(set(value) - set(required) - set(optional_fields))
            if unknown:
                raise _Bad(f"{where}.{unknown[0]}", "is not a field of this schema")
        for key, inner in {**required, **optional_fields}.items():
            if key in value:
                inner(value[key], f"{where}.{key}" if where else key)

    return check


def figure_path(value: Any, where: str) -> None:
    """A figure's path: relative to its run's directory, inside it (no absolute path, no `..`, no drive)."""
    STR(value, where)
    posix, windows = PurePosixPath(value), PureWindowsPath(value)
    if not value or "\x00" in value:
        raise _Bad(where, f"{_shown(value)} is not a file name")
    if posix.is_absolute() or windows.is_absolute() or windows.drive or value.startswith(("/", "\\")):
        raise _Bad(where, f"{_shown(value)} is absolute (a figure path must be relative to its run's directory)")
    if ".." in posix.parts or ".." in windows.parts:
        raise _Bad(where, f"{_shown(value)} leaves its run's directory ('..')")


def evidence(value: Any, where: str) -> None:
    dict_of(ANY)(value, where)
    if "headline" in value:
        list_of(STR)(value["headline"], f"{where}.headline")


FIGURE = record({"title": STR, "path": figure_path})
MUTANT_RESULT = record({"mutant": STR, "killed": BOOL, "outcome": STR}, {"detail": STR})
STATEMENT_RUN = record(
    {
        "test": STR,
        "statement": STR,
        "tier": STR,
        "outcome": one_of(OUTCOMES),
        "reason": STR,
        "evidence": evidence,
        "figures": list_of(FIGURE),
        "mutants": list_of(MUTANT_RESULT),
    },
    {"text": STR, "expected": STR, "as_registered": optional(BOOL), "false_alarm": NUMBER},
)


def _check_of(hint: Any) -> Check:
    """The check of a registry field's value in verdicts.json, from its Python type (a tuple is written as a list)."""
    origin, args = typing.get_origin(hint) or hint, typing.get_args(hint)
    if origin is tuple:
        return list_of(_check_of(args[0]))
    if origin is dict:
        return dict_of(_check_of(args[1]))
    return {str: STR, bool: BOOL, float: NUMBER, int: INT, Any: ANY}[origin]


def _registered_statement() -> Check:
    """A statement's registry record as verdicts.json carries it (the registry's Statement less its name, which is the
    record's key), passed to Statement(**fields): every field known, of its type; those without a default required."""
    hints, no_default = field_types(Statement), dataclasses.MISSING
    fields = [f for f in dataclasses.fields(Statement) if f.name != "name"]
    checks = {f.name: _check_of(hints[f.name]) for f in fields} | {"expected": one_of(EXPECTED_STATEMENT)}
    required = {f.name for f in fields if f.default is no_default and f.default_factory is no_default}
    return record(
        {k: c for k, c in checks.items() if k in required}, {k: c for k, c in checks.items() if k not in required}, True
    )


REGISTERED_STATEMENT = _registered_statement()
POWER = record({"killed": INT, "of": INT, "survivors": list_of(STR)}, {"statements": dict_of(ANY)})
CLAIM = record(
    {
        **{k: STR for k in ("id", "key", "paper", "where", "statement", "provenance", "expected", "reason")},
        "verdict": one_of(VERDICTS),
        "tiers_run": list_of(STR),
        "key_numbers": list_of(record({"label": STR, "values": list_of(record({"run": STR, "tier": STR}))})),
        "figure": optional(FIGURE),
        "power": optional(POWER),
        "statements": list_of(STATEMENT_RUN),
        "statements_without_tests": list_of(STR),
        "registry": record(
            {"tests": STR, "key_numbers": list_of(STR), "figure": STR, "statements": dict_of(REGISTERED_STATEMENT)}
        ),
    },
    {"not_reached": list_of(STR), "interrupted_by": STR, "problems": list_of(STR)},
)
STORE_EVENT = record(
    {"name": STR, "status": STR, "seconds": NUMBER, "key": STR}, {"note": STR, "resumed_from_step": optional(INT)}
)
RUN_RECORD = record(
    {"tier": STR},
    {
        **{k: optional(STR) for k in ("run", "host", "device", "commit", "date", "store", "source", "interrupted")},
        "tests": list_of(STR),
    },
)
FALSE_ALARM_ROW = record({"claim": STR, "key": STR, "statement": STR, "probability": NUMBER, "basis": STR})
CHANGES = record(
    {
        "claims": list_of(record({"id": STR, "key": STR, "before": STR, "after": STR})),
        "statements": list_of(record({"test": STR, "claim": STR, "before": STR, "after": STR}, {"statement": ANY})),
    },
    {"previous": STR, "conditions": list_of(record({"name": STR}, {"before": ANY, "after": ANY}))},
)
FALSE_ALARM_TIERS = dict_of(record({"sum": NUMBER, "statements": list_of(FALSE_ALARM_ROW)}))


def false_alarm_table(value: Any, where: str) -> None:
    """A run's false-alarm table: its tiers' rows and, where it has tiers, the budget they are shown against (a run
    writes both, roles.session.false_alarm_table; the merge and the page read the budget of a table with tiers)."""
    record({}, {"budget": optional(NUMBER), "tiers": FALSE_ALARM_TIERS})(value, where)
    if value.get("tiers") and not isinstance(value.get("budget"), (int, float)):
        NUMBER(value.get("budget"), f"{where}.budget")


def _one_seed(value: Any) -> bool:
    return isinstance(value, (int, str)) and not isinstance(value, bool)


# A run's master seed, or a replication set's seeds. A previous run's is copied into this run's `changes.conditions`:
# a NaN or an infinity there would make this run's verdicts.json not JSON (json.dumps writes them as NaN, Infinity).
SEED = _kind("an integer or a list of them", lambda v: _one_seed(v) or isinstance(v, list) and all(map(_one_seed, v)))
RUN_FILE = record(
    {
        "suite": STR,
        "tier": STR,
        "mutants_run": BOOL,
        "environment": dict_of(ANY),
        "papers": dict_of(record({"title": STR}, {"source": STR})),
        "claims": list_of(CLAIM),
        "reference_tests": list_of(record({"test": STR, "outcome": one_of(OUTCOMES)})),
        "collection_errors": list_of(record({"module": STR, "message": STR})),
        "runs": list_of(RUN_RECORD),
    },
    {
        "false_alarm": false_alarm_table,
        "timings": record(
            {},
            {
                "tests": dict_of(NUMBER),
                "indivisible": dict_of(STR),
                "store": dict_of(list_of(STORE_EVENT)),
                "generated_at": STR,
                "session_seconds": NUMBER,
            },
        ),
        "changes": CHANGES,
        "report_id": STR,
        "seed": optional(SEED),  # the merge groups runs by it and writes it back (a NaN there: not JSON)
    },
)


# --previous-verdicts reads only what `verdicts.changes` compares (a file of an older schema is fine).
PREVIOUS_FILE = record(
    {
        "claims": list_of(
            record(
                {"id": STR, "key": STR, "verdict": STR}, {"statements": list_of(record({"test": STR, "outcome": STR}))}
            )
        )
    },
    {"runs": list_of(record({}, {"date": STR})), "seed": optional(SEED), "tier": optional(STR)},
)


COMPARED_FILE = record(
    {
        "claims": list_of(
            record(
                {"id": STR, "key": STR, "verdict": STR},
                {
                    "statements": list_of(record({"test": STR, "outcome": STR}, {"statement": optional(STR)})),
                    "key_numbers": list_of(record({"label": STR, "values": list_of(record({}, {"run": STR}))})),
                },
            )
        )
    },
    {"runs": list_of(record({}, {"date": STR})), "environment": optional(dict_of(ANY))},
)


def _checked(payload: dict[str, Any], schema: Check, path: Path | str, what: str) -> dict[str, Any]:
    try:
        schema(payload, "")
    except _Bad as bad:
        raise InputError(f"{what}{path}: field {bad.where or '(top level)'} {bad.problem}") from None
    return payload


def checked_run(payload: dict[str, Any], path: Path | str) -> dict[str, Any]:
    """A merge input (already read as a verdicts.json of this schema), every field the merge uses checked, and no NaN
    or infinity anywhere in it (fields the merge copies unread, evidence and environment included: the merged file
    would hold it, and would not be JSON; a run writes a non-finite value as text)."""
    _checked(payload, RUN_FILE, path, "")
    where = _non_finite(payload)
    if where is not None:
        raise InputError(f"{path}: field {where} is NaN or an infinity, which JSON has no number for")
    return payload


def _non_finite(value: Any) -> str | None:
    """The place of the first NaN or infinity in a JSON value (walked without recursion: JSON may nest as deep as the
    reader follows), or None."""
    stack: list[tuple[str, Any]] = [("", value)]
    while stack:
        where, item = stack.pop()
        if isinstance(item, float) and not math.isfinite(item):
            return where or "(top level)"
        if isinstance(item, dict):
            stack.extend((f"{where}.{k}" if where else str(k), v) for k, v in reversed(list(item.items())))
        elif isinstance(item, list):
            stack.extend((f"{where}[{i}]", v) for i, v in reversed(list(enumerate(item))))
    return None


def checked_previous(
    payload: dict[str, Any], path: Path | str, what: str = "--claims-previous-verdicts "
) -> dict[str, Any]:
    """A previous run's verdicts.json (--previous-verdicts): the fields the comparison reads checked."""
    return _checked(payload, PREVIOUS_FILE, path, what)


def checked_compared(payload: dict[str, Any], path: Path | str) -> dict[str, Any]:
    """A verdicts.json given to pytest-claims-compare: every field the comparison reads or prints checked."""
    return _checked(payload, COMPARED_FILE, path, "")


def file_within(directory: Path, relative: str) -> Path | None:
    """The regular file `relative` names inside `directory`, or None: never a file outside it (an absolute path,
    `..`, or a symbolic link that leads out)."""
    try:
        figure_path(relative, "")
    except _Bad:
        return None
    root = Path(directory).resolve()
    file = (root / relative).resolve()
    if not file.is_relative_to(root) or not file.is_file():
        return None
    return file


def refuse_output_holding_inputs(out: Path, inputs: list[Path]) -> None:
    """The merge writes verdicts.json, verdict.html and figures into `out`: a directory that holds one of its inputs
    would be overwritten by the merge of itself."""
    target = Path(out).resolve()
    for path in inputs:
        if Path(path).resolve().parent == target:
            raise InputError(f"-o {out}: holds the input {path}; write the merge into a directory of its own")
