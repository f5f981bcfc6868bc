"""The throwaway project most of the plugin's end-to-end tests run: its files as builders with parameters (a
variant is a parameter, never a replaced source line), and the helpers that read its verdicts. The `project`
fixture that writes it lives in conftest.py."""

from __future__ import annotations

import json

import pytest

INI = """
[pytest]
markers =
    smoke: seconds
    full: the papers' scale
claims_registry = registry.toml
claims_tiers = smoke full
claims_report_dir = out
claims_mutants = toy_mutants
"""

REGISTRY_TEMPLATE = """
[paper.toy]
title = "A toy paper"
source = "nowhere"

[[claim]]
id = "toy/triangle"
key = "T1"
paper = "toy"
where = "Eq. 1"
text = "1 + 2 + ... + n = n (n + 1) / 2"
provenance = ""
expected = "verified"
tests = "test_triangle.py"
key_numbers = ["formula: checked"]
figure = "formula"

[[claim.statement]]
name = "formula"
text = "triangle(n) equals the sum for n < 50"
expected = "holds"
mutants = {mutants}

[[claim.statement]]
name = "squares"
text = "triangle(n) = n^2 (false)"
expected = "refuted"
refutes_claim = false
mutants = {refuted_mutants}

[[claim]]
id = "toy/constant"
key = "T2"
paper = "toy"
where = "Eq. 2"
text = "{answer_text}"
provenance = ""
expected = "verified"
tests = "test_constant.py"

[[claim.statement]]
name = "answer"
text = "answer() == 42"
expected = "holds"
scale_free = true

[[claim]]
id = "toy/untested"
key = "T3"
paper = "toy"
where = "Eq. 3"
text = "no test names this"
provenance = ""
expected = "verified"
"""


def registry(
    mutants: str = '["off-by-one", "wrong-sign"]',
    refuted_mutants: str = '["squares"]',
    answer_text: str = "the answer is 42",
) -> str:
    """The registry: T1 (a formula, with mutants, and a refuted statement), T2 (a constant), T3 (untested)."""
    return REGISTRY_TEMPLATE.format(mutants=mutants, refuted_mutants=refuted_mutants, answer_text=answer_text)


def kernel(triangle: str = "n * (n + 1) // 2", answer: str = "42") -> str:
    """The kernel under test: `triangle` the expression for 1 + ... + n, `answer` the constant."""
    return f"def triangle(n):\n    return {triangle}\n\n\ndef answer():\n    return {answer}\n"


KERNEL = kernel()


MUTANTS = """
from pytest_claims.roles.mutants import Mutant

MUTANTS = [
    Mutant("off-by-one", "toy_kernel:triangle", "n + 1", "n + 2", "a constant off by one"),
    Mutant("wrong-sign", "toy_kernel:triangle", "n * (n + 1)", "n * (n - 1)", "a wrong sign"),
    Mutant("harmless", "toy_kernel:triangle", "// 2", "// 2 + 0", "changes nothing: must survive"),
    Mutant("squares", "toy_kernel:triangle", "n * (n + 1) // 2", "n * n", "makes the refuted statement true"),
]
"""

TRIANGLE_TEMPLATE = """
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
import pytest

import toy_kernel
from pytest_claims import current_store, statement_holds


def compute(checkpoint):
    return [toy_kernel.triangle(n) for n in range(50)]


@pytest.mark.smoke
@pytest.mark.claim("toy/triangle", statement="formula")
def test_formula(evidence):
    values = current_store().get_or_compute("toy/triangles", {{"n": 50}}, compute, code=[toy_kernel])
    wrong = [n for n in range(50) if values[n] != sum(range(n + 1))]
    evidence.headline(checked=50, wrong=len(wrong))
    fig, ax = plt.subplots()
    ax.plot(values)
    evidence.figure("triangles", fig)
    statement_holds(not wrong, f"triangle differs from the sum at {{wrong[:5]}}")


@pytest.mark.smoke
@pytest.mark.claim("toy/triangle", statement="squares")
def test_squares(evidence):
    {squares_body}
"""

SQUARES_BODY = 'statement_holds(toy_kernel.triangle(3) == 9, f"triangle(3) = {toy_kernel.triangle(3)}, not 9")'


def triangle_tests(squares_body: str = SQUARES_BODY) -> str:
    """T1's tests: the formula (store, evidence, a figure) and the refuted statement, whose body is `squares_body`."""
    return TRIANGLE_TEMPLATE.format(squares_body=squares_body)


TRIANGLE_TESTS = triangle_tests()


CONSTANT_TEMPLATE = """
import pytest

import toy_kernel
from pytest_claims import statement_holds


@pytest.mark.smoke
@pytest.mark.claim("toy/constant", statement="answer")
def test_answer(evidence):
    {headline}
    statement_holds(toy_kernel.answer() == 42, "not 42")


@pytest.mark.smoke
def test_reference():
{reference_prelude}    assert toy_kernel.answer() + 0 == 42
"""


def constant_tests(headline: str = "evidence.headline(answer=toy_kernel.answer())", reference_prelude: str = "") -> str:
    """T2's statement test (recording `headline`) and a plain reference test (`reference_prelude` runs first)."""
    return CONSTANT_TEMPLATE.format(headline=headline, reference_prelude=reference_prelude)


CONSTANT_TESTS = constant_tests()


def verdicts(pytester: pytest.Pytester, name: str = "out") -> dict:
    return json.loads((pytester.path / name / "verdicts.json").read_text())


def claim(payload: dict, key: str) -> dict:
    return next(c for c in payload["claims"] if c["key"] == key)
