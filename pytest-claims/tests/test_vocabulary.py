"""The vocabulary of outcomes, verdicts and registered expectations: one enumeration each (pytest_claims.outcomes),
written exactly as its words in every file and message, and used by the other modules instead of the words."""

from __future__ import annotations

import ast
import json
from dataclasses import asdict
from pathlib import Path

import pytest

import pytest_claims
from pytest_claims.outcomes import VERDICTS, Expected, Outcome, Verdict
from pytest_claims.model.verdicts import MutantResult, StatementRun

PACKAGE = Path(pytest_claims.__file__).parent
MODULES = sorted(PACKAGE.rglob("*.py"))
# Words that mean nothing else in the plugin (unlike pytest's own "skipped", "failed", "error", a run record's
# "interrupted" key, or "refuted" as a label and a mutant's end): outside outcomes.py they are written as members of
# the enumerations, never as literals.
OWN_WORDS = {str(w) for w in (*Verdict, Expected.HOLDS, Outcome.HELD, Outcome.INCONCLUSIVE)} - {Verdict.INTERRUPTED}


@pytest.mark.smoke
@pytest.mark.parametrize("word", [*Outcome, *Verdict, *Expected], ids=str)
def test_a_word_is_written_as_its_value_everywhere(word):
    assert word == word.value and hash(word) == hash(word.value)
    assert (str(word), f"{word}", f"{word:>3}"[-len(word.value) :], repr(word)) == (
        word.value,
        word.value,
        word.value,
        repr(word.value),
    )
    assert json.dumps({word: [word]}) == json.dumps({word.value: [word.value]})


@pytest.mark.smoke
def test_verdicts_are_in_severity_order():
    assert VERDICTS[0] == Verdict.BROKEN and VERDICTS[-1] == Verdict.NOT_EXERCISED and len(VERDICTS) == 9


@pytest.mark.smoke
def test_what_travels_from_a_worker_holds_plain_strings():
    """execnet (pytest-xdist's channel) carries no subclass of str: a run's and a mutant's outcome become plain."""
    execnet = pytest.importorskip("execnet")
    from execnet.gateway_base import dumps_internal

    run = StatementRun("t::x[smoke]", "c", "s", "smoke", Outcome.HELD)
    mutant = MutantResult("m", True, Outcome.REFUTED)
    assert type(run.outcome) is str and type(mutant.outcome) is str
    dumps_internal(asdict(run)), dumps_internal(asdict(mutant))
    with pytest.raises(execnet.DataFormatError):
        dumps_internal(Outcome.HELD)  # why the conversion is needed


def literal_words(source: str) -> list[str]:
    """The string literals of `source` that are one of OWN_WORDS."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Constant) and node.value in OWN_WORDS:
            found.append(f"line {node.lineno}: {node.value!r}")
    return found


# Modules that still write the words, with why (strict: the test fails once one of them no longer does).
NOT_YET: dict[str, str] = {}


@pytest.mark.smoke
@pytest.mark.parametrize(
    "path",
    [
        pytest.param(p, marks=[pytest.mark.xfail(strict=True, reason=NOT_YET[p.name])] if p.name in NOT_YET else [])
        for p in MODULES
        if p.name != "outcomes.py"
    ],
    ids=lambda p: p.relative_to(PACKAGE).as_posix(),
)
def test_no_module_writes_a_verdict_as_a_literal(path):
    assert not literal_words(path.read_text(encoding="utf-8")), f"{path.name}: use pytest_claims.outcomes' members"


@pytest.mark.smoke
def test_the_literal_check_sees_them():
    assert len(literal_words('x = "not run"\nif v == "holds": pass\ny = "skipped"\nz = "the word broken"\n')) == 2
