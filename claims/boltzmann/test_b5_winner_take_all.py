"""B5: "The penalty lambda (sum z - 1)^2 over K binary units puts probability on one-hot states that
increases with lambda; at lambda = 4, K = 3: total one-hot mass 0.976161, each 0.325387." """
from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest

from pytest_claims import statement_holds
from claims.boltzmann.common import B5
from kernels import boltzmann as bm

LAMBDAS = np.linspace(0.0, 20.0, 401)


def _onehot_probs(k, lam):
    probs, states = bm.wta_enumerated(k, lam)
    return probs[states.sum(axis=1) == 1]


@pytest.mark.smoke  # scale-free (registry): exact, runs in every tier
@pytest.mark.claim(B5, statement="enumeration-equals-closed-form")
def test_enumeration_equals_closed_form(evidence):
    worst = max(abs(_onehot_probs(k, lam).sum() - bm.wta_onehot_mass_closed_form(k, lam)) for k in range(2, 7) for lam in LAMBDAS)
    mass, each = _onehot_probs(3, 4.0).sum(), _onehot_probs(3, 4.0)
    evidence.headline(onehot_mass_lambda4=float(mass), each_state_lambda4=float(each[0]), max_closed_form_error=float(worst))
    evidence.record(printed_mass=0.976161, printed_each=0.325387)
    statement_holds(worst <= 1e-12, f"enumeration and closed form differ by {worst:.3g}")
    statement_holds(round(float(mass), 6) == 0.976161 and np.all(np.round(each, 6) == 0.325387), f"lambda = 4: mass {mass!r}, each {each}")


@pytest.mark.smoke  # scale-free (registry): exact, runs in every tier
@pytest.mark.claim(B5, statement="equal-split")
def test_equal_split(evidence):
    worst = max(float(np.ptp(_onehot_probs(k, lam))) for k in range(2, 7) for lam in LAMBDAS)
    evidence.headline(max_spread=worst)
    statement_holds(worst <= 1e-12, f"one-hot states differ by {worst:.3g}")


@pytest.mark.smoke  # scale-free (registry): exact, runs in every tier
@pytest.mark.claim(B5, statement="monotone-in-lambda")
def test_mass_increases_with_lambda(evidence):
    smallest_step = min(float(np.min(np.diff([_onehot_probs(k, lam).sum() for lam in LAMBDAS]))) for k in range(2, 7))
    # Closed form: mass = K / (K + sum_{m != 1} C(K, m) e^(-lambda (m-1)^2)); every exponent coefficient
    # (m-1)^2 is positive, so every term decreases in lambda and the mass increases strictly.
    coefficients = [(m - 1) ** 2 for k in range(2, 7) for m in range(k + 1) if m != 1]
    evidence.headline(smallest_increment=smallest_step, smallest_exponent_coefficient=min(coefficients))
    statement_holds(min(coefficients) > 0 and smallest_step > 0, f"not increasing: smallest step {smallest_step:.3g}")


@pytest.mark.smoke  # scale-free (registry): exact, runs in every tier
@pytest.mark.claim(B5, statement="limit-one")
def test_mass_tends_to_one(evidence):
    gaps = {}
    with mpmath.workdps(50):
        for k in range(2, 7):
            for lam in (10, 100, 1000):
                rest = mpmath.fsum(math.comb(k, m) * mpmath.exp(-lam * (m - 1) ** 2) for m in range(k + 1) if m != 1)
                gap = rest / (k + rest)  # = 1 - K / (K + rest), without the cancellation
                bound = (2**k - k) * mpmath.exp(-lam) / k
                gaps[f"K={k} lambda={lam}"] = float(gap)
                statement_holds(0 < gap <= bound, f"K={k}, lambda={lam}: 1 - mass = {gap} exceeds {bound}")
    evidence.headline(gap_K3_lambda1000=gaps["K=3 lambda=1000"])
    evidence.record(gaps=gaps)
