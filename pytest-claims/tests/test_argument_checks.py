"""The statistics helpers check their arguments where they enter: a level, a confidence, a threshold or a
p-value out of its range, a NaN, or interval ends out of order is one ValueError naming the argument, where
before it was computed with (alpha = 1.0 held a rate of 0.999 against 0.5 on a bound of 1.0; p = 1.5 gave a
binomial tail; lower > upper refuted)."""

import math

import pytest

from pytest_claims import decide_interval, decide_rate, decide_test
from pytest_claims.stats.binomial import binomial_cdf, binomial_sf, rate_lower_bound, rate_upper_bound
from pytest_claims.statements.decide import trials_to_decide
from pytest_claims.outcomes import StatementInconclusive

NAN = float("nan")

BAD_CALLS = [
    ("alpha", lambda: decide_rate(999, 1000, 0.5, at_least=True, alpha=1.0, what="rate")),
    ("alpha", lambda: decide_rate(999, 1000, 0.5, at_least=True, alpha=-0.1, what="rate")),
    ("alpha", lambda: decide_rate(999, 1000, 0.5, at_least=True, alpha=NAN, what="rate")),
    ("held_confidence", lambda: decide_rate(5, 10, 0.5, at_least=True, alpha=0.01, held_confidence=1.5, what="r")),
    ("threshold", lambda: decide_rate(5, 10, 1.5, at_least=True, alpha=0.01, what="rate")),
    ("threshold", lambda: decide_rate(5, 10, NAN, at_least=True, alpha=0.01, what="rate")),
    ("lower", lambda: decide_interval(0.6, 0.4, 0.5, at_least=True, alpha=0.01, what="interval")),
    ("lower", lambda: decide_interval(NAN, 0.4, 0.5, at_least=True, alpha=0.01, what="interval")),
    ("threshold", lambda: decide_interval(0.4, 0.6, NAN, at_least=True, alpha=0.01, what="interval")),
    ("alpha", lambda: decide_interval(0.4, 0.6, 0.5, at_least=True, alpha=1.0, what="interval")),
    ("p_for", lambda: decide_test(1.5, 0.5, alpha=0.01, what="effect")),
    ("p_against", lambda: decide_test(0.5, -0.5, alpha=0.01, what="effect")),
    ("alpha", lambda: decide_test(0.5, 0.5, alpha=2.0, what="effect")),
    ("held_alpha", lambda: decide_test(0.5, 0.5, alpha=0.01, held_alpha=0.5, what="effect")),
    ("alpha", lambda: decide_rate(905, 1000, 0.9, at_least=True, alpha=0.99, what="a confidence passed as a level")),
    ("held_confidence", lambda: decide_rate(5, 10, 0.5, at_least=True, alpha=0.01, held_confidence=0.3, what="r")),
    ("p", lambda: binomial_cdf(3, 10, 1.5)),
    ("p", lambda: binomial_sf(3, 10, -0.5)),
    ("p", lambda: binomial_sf(3, 10, NAN)),
    ("alpha", lambda: rate_lower_bound(3, 10, 1.5)),
    ("alpha", lambda: rate_upper_bound(3, 10, NAN)),
    ("rate", lambda: trials_to_decide(1.2, 0.5, 0.01, at_least=True)),
    ("alpha", lambda: trials_to_decide(0.6, 0.5, 1.0, at_least=True)),
]


@pytest.mark.parametrize("argument, call", BAD_CALLS, ids=[f"{i}-{a}" for i, (a, _) in enumerate(BAD_CALLS)])
def test_a_bad_argument_is_one_error_naming_it(argument, call):
    with pytest.raises(ValueError) as raised:
        call()
    assert str(raised.value).startswith(argument + " "), str(raised.value)
    assert "\n" not in str(raised.value)


def test_the_edges_that_have_a_meaning_still_work():
    """A NaN p-value decides nothing (a t-test without spread gives one); a false alarm of 0 (the registry allows
    it) refutes nothing; the
    bounds at levels 0 and 1 are the whole interval's ends; a tail at p = 0 or 1 is 0 or 1."""
    with pytest.raises(StatementInconclusive):
        decide_test(NAN, NAN, alpha=0.01, what="effect")
    with pytest.raises(StatementInconclusive):
        decide_test(0.5, 0.0, alpha=0.0, held_alpha=0.01, what="effect")  # p_against 0 < alpha 0 is false
    assert decide_test(0.001, 0.999, alpha=0.0, held_alpha=0.01, what="effect")["decision"] == "held"
    assert (rate_lower_bound(3, 10, 0.0), rate_upper_bound(3, 10, 0.0)) == (0.0, 1.0)
    assert (binomial_cdf(3, 10, 0.0), binomial_sf(3, 10, 1.0)) == (1.0, 1.0)
    assert trials_to_decide(0.6, 0.5, 0.0, at_least=True) is None
    with pytest.raises(StatementInconclusive):  # a false alarm of 0 and no confidence given: never decided
        decide_rate(10, 10, 0.5, at_least=True, alpha=0.0, what="rate")
    with pytest.raises(StatementInconclusive):  # shown at 0.99, never refuted: 1/10 against 0.5 is not shown
        decide_rate(1, 10, 0.5, at_least=True, alpha=0.0, held_confidence=0.99, what="rate")
    assert decide_rate(10, 10, 0.5, at_least=True, alpha=0.0, held_confidence=0.99, what="rate")["decision"] == "held"
    assert decide_interval(0.4, math.inf, 0.3, at_least=True, alpha=0.01, what="interval")["decision"] == "held"
