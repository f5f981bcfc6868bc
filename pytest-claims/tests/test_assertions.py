"""The message-owning comparison helpers, outside a session (no evidence, no reproduce line)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from pytest_claims import ClaimRefuted, statement_ge, statement_in_interval, statement_le, statement_none


@pytest.mark.smoke
def test_le_passes_at_the_bound_and_names_the_worst_element_past_it():
    assert statement_le([1.0, 2.0], 2.0, what="x")["least_margin"] == 0.0
    with pytest.raises(ClaimRefuted, match=r"x: 2 of 3 not <= 2.0; worst at 2: 5.0 \(off by 3\); reproduce"):
        statement_le(np.array([1.0, 3.0, 5.0]), 2.0, what="x")


@pytest.mark.smoke
def test_ge_and_interval_take_bounds_per_element():
    statement_ge([3.0, 4.0], [3.0, 3.5], what="y")
    with pytest.raises(ClaimRefuted, match=r"y: 1 of 2 outside their own bounds; worst at 1: 3.5, not >= 4.0"):
        statement_ge([3.0, 3.5], [2.0, 4.0], what="y")
    found = statement_in_interval(0.99, 0.98, 1.02, what="exponent")
    assert found["checked"] == 1 and found["violations"] == 0
    with pytest.raises(ClaimRefuted, match=r"exponent: 1 of 1 not in \[0.98, 1.02\]; worst: 1.03"):
        statement_in_interval(1.03, 0.98, 1.02, what="exponent")


@pytest.mark.smoke
def test_strict_comparisons_refuse_equality():
    statement_le([1.0, 2.0], 2.0, what="x")
    with pytest.raises(ClaimRefuted, match=r"x: 1 of 2 not < 2.0; worst at 1: 2.0 \(off by 0\)"):
        statement_le([1.0, 2.0], 2.0, what="x", strict=True)
    statement_ge([0.5, 1.0], 0.0, what="y", strict=True)
    with pytest.raises(ClaimRefuted, match=r"y: 1 of 2 not > 0.0"):
        statement_ge([0.5, 0.0], 0.0, what="y", strict=True)
    with pytest.raises(ClaimRefuted, match=r"z: 1 of 1 not in \(0.0, 1.0\)"):
        statement_in_interval(1.0, 0.0, 1.0, what="z", strict=True)
    assert statement_in_interval(1.0, 0.0, 1.0, what="z")["violations"] == 0


@pytest.mark.smoke
def test_not_a_number_is_a_violation():
    with pytest.raises(ClaimRefuted, match="1 of 2"):
        statement_le([1.0, math.nan], 2.0, what="z")


@pytest.mark.smoke
def test_none_names_the_first_violating_case():
    statement_none([False, False], what="w")
    with pytest.raises(ClaimRefuted, match=r"w: 2 of 3 cases violate it; the first at 1: \(1, 4\)"):
        statement_none([False, True, True], what="w", cases=[(0, 1), (1, 4), (2, 9)])


def test_evidence_values_become_exact_builtin_types():
    """A str subclass (torch.__version__ is one) becomes a str: execnet cannot send a subclass from an xdist
    worker, and a worker's report that fails to serialize ends the whole run in an INTERNALERROR."""
    from pytest_claims.model.evidence import plain

    class Version(str):
        pass

    found = plain({"torch": Version("2.13.0"), "nested": [Version("a"), (1, 2.5, True, None)]})
    assert found == {"torch": "2.13.0", "nested": ["a", [1, 2.5, True, None]]}
    assert type(found["torch"]) is str and type(found["nested"][0]) is str


def test_bounds_per_element_are_named_as_each_elements_own():
    """A list of bounds is not quoted as if the worst element's bound applied to all (the newcomer read "24 of 24
    not <= 0.000943" of 24 different bounds)."""
    with pytest.raises(
        ClaimRefuted, match=r"e: 2 of 3 outside their own bounds; worst at 2: 5.0, not <= 1.0 \(off by 4\)"
    ):
        statement_le([0.5, 3.0, 5.0], [1.0, 2.0, 1.0], what="e")
    with pytest.raises(ClaimRefuted, match=r"f: 1 of 2 not <= 1.0; worst at 1"):  # equal bounds read as one
        statement_le([0.5, 3.0], [1.0, 1.0], what="f")
