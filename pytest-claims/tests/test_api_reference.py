"""The generated API reference (docs/reference/api.md, built by mkdocstrings from the docstrings) covers the whole
public API, and each public function's docstring names every parameter and says what it returns."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import pytest

import pytest_claims

API_PAGE = Path(__file__).resolve().parents[1] / "docs" / "reference" / "api.md"
pytestmark = pytest.mark.smoke


def documented(obj) -> list[str]:
    """What the docstring of a public name lacks: a parameter it never names, or (a function returning something)
    the word "return"."""
    doc = inspect.getdoc(obj) or ""
    if not doc:
        return ["a docstring"]
    try:
        signature = inspect.signature(obj)
    except ValueError:  # an exception class with the built-in constructor: nothing to name
        return []
    lacks = [f"parameter {p!r}" for p in signature.parameters if not re.search(rf"\b{re.escape(p)}\b", doc)]
    returns = signature.return_annotation
    if not inspect.isclass(obj) and returns not in (None, "None") and "return" not in doc.lower():
        lacks.append("what it returns")
    return lacks


@pytest.mark.parametrize("name", pytest_claims.__all__)
def test_every_public_name_is_in_the_generated_reference_with_its_parameters_and_return(name):
    assert f"\n::: pytest_claims.{name}\n" in API_PAGE.read_text(encoding="utf-8"), f"{name}: not in api.md"
    assert documented(getattr(pytest_claims, name)) == [], name


def test_the_check_sees_an_undocumented_parameter_and_return():
    def helper(rate, *, most=3) -> int:
        """Something."""

    assert documented(helper) == ["parameter 'rate'", "parameter 'most'", "what it returns"]
