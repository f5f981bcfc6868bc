"""B2: "With shared sigma, E equals the linear visible-hidden coupling form with mu_k = a + diag(sigma) W_:k
and c_k = ln pi_k - a^T diag(sigma)^-1 W_:k - 1/2 ||W_:k||^2, up to a k-independent constant."
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from pytest_claims import statement_le
from claims.ids import B2
from kernels import boltzmann as bm


@st.composite
def couplings(draw):
    d, k, n = draw(st.integers(1, 5)), draw(st.integers(2, 5)), draw(st.integers(1, 8))
    value = st.floats(-5, 5, allow_nan=False, allow_infinity=False)
    a = draw(arrays(np.float64, d, elements=value))
    w = draw(arrays(np.float64, (d, k), elements=value))
    v = draw(arrays(np.float64, (n, d), elements=st.floats(-10, 10, allow_nan=False, allow_infinity=False)))
    sigma = draw(arrays(np.float64, d, elements=st.floats(0.1, 3.0)))
    raw = draw(arrays(np.float64, k, elements=st.floats(0.05, 1.0)))
    return v, a, sigma, w, raw / raw.sum()


def _energy_scale(v, a, sigma, w, pi):
    means, _ = bm.coupling_from_means(a, sigma, w, pi)
    return 1.0 + np.max(np.abs(bm.component_energies(v, means, np.broadcast_to(sigma**2, means.shape), pi)))


def _spread_over_k(v, a, sigma, w, pi, complete_square=True):
    """max over points of the range over k of E_mixture - E_lin, relative to the energies' scale."""
    means, bias = bm.coupling_from_means(a, sigma, w, pi, complete_square=complete_square)
    variances = np.broadcast_to(sigma**2, means.shape)
    diff = bm.component_energies(v, means, variances, pi) - bm.coupling_energies(v, a, sigma, w, bias)
    scale = 1.0 + np.max(np.abs(bm.component_energies(v, means, variances, pi)))
    return float(np.max(np.ptp(diff, axis=1)) / scale)


@pytest.mark.claim(B2, statement="energy-difference-constant-in-k")
@pytest.mark.parametrize(
    "examples", [pytest.param(300, marks=pytest.mark.smoke), pytest.param(3000, marks=pytest.mark.full)]
)
def test_energy_difference_is_constant_in_k(evidence, examples):
    seen = {"examples": 0, "worst_relative_spread": 0.0, "mutant_detectable": 0, "mutant_detected": 0}

    @settings(max_examples=examples)
    @given(couplings())
    def check(instance):
        spread = _spread_over_k(*instance)
        seen["examples"] += 1
        seen["worst_relative_spread"] = max(seen["worst_relative_spread"], spread)
        statement_le(spread, 1e-9, what="relative spread of E - E_lin over k (hypothesis prints the instance)")
        w = instance[3]
        # Without the completed square, E - E_lin varies over k by 1/2 range_k ||W_:k||^2.
        if 0.5 * np.ptp(np.sum(w**2, axis=0)) / _energy_scale(*instance) > 1e-6:
            seen["mutant_detectable"] += 1
            seen["mutant_detected"] += _spread_over_k(*instance, complete_square=False) > 1e-6

    check()
    evidence.headline(worst_relative_spread=seen["worst_relative_spread"], examples=seen["examples"])
    evidence.record(**seen)
    assert seen["mutant_detectable"] >= 50, "too few examples where the completed-square term matters"
    assert seen["mutant_detected"] == seen["mutant_detectable"], "dropping the completed-square term went unnoticed"
