"""B5: "The penalty lambda (sum z - 1)^2 over K binary units puts probability on one-hot states that
increases with lambda; at lambda = 4, K = 3: total one-hot mass 0.976161, each 0.325387." """

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest

from pytest_claims import statement_allclose, statement_ge, statement_holds, statement_le
from claims.ids import B5
from kernels import boltzmann as bm

LAMBDAS = np.linspace(0.0, 20.0, 401)


def _onehot_probs(k, lam):
    probs, states = bm.wta_enumerated(k, lam)
    return probs[states.sum(axis=1) == 1]


@pytest.mark.smoke  # scale-free (registry): exact, runs in every tier
@pytest.mark.claim(B5, statement="enumeration-equals-closed-form")
def test_enumeration_equals_closed_form(evidence):
    enumerated = np.array([[_onehot_probs(k, lam).sum() for lam in LAMBDAS] for k in range(2, 7)])
    closed = np.array([[bm.wta_onehot_mass_closed_form(k, lam) for lam in LAMBDAS] for k in range(2, 7)])
    worst = float(np.max(np.abs(enumerated - closed)))
    mass, each = _onehot_probs(3, 4.0).sum(), _onehot_probs(3, 4.0)
    evidence.headline(onehot_mass_lambda4=float(mass), each_state_lambda4=float(each[0]), max_closed_form_error=worst)
    evidence.record(printed_mass=0.976161, printed_each=0.325387)
    statement_allclose(
        enumerated, closed, rtol=0, atol=1e-12, what="enumerated one-hot mass vs closed form (K = 2..6 by lambda)"
    )
    statement_holds(
        round(float(mass), 6) == 0.976161 and np.all(np.round(each, 6) == 0.325387),
        f"lambda = 4: mass {mass!r}, each {each}",
    )


@pytest.mark.smoke  # scale-free (registry): exact, runs in every tier
@pytest.mark.claim(B5, statement="equal-split")
def test_equal_split(evidence):
    worst = max(float(np.ptp(_onehot_probs(k, lam))) for k in range(2, 7) for lam in LAMBDAS)
    evidence.headline(max_spread=worst)
    for k in range(2, 7):
        probs = np.array([_onehot_probs(k, lam) for lam in LAMBDAS])  # (lambdas, K)
        statement_allclose(
            probs,
            np.broadcast_to(probs.mean(axis=1, keepdims=True), probs.shape),
            rtol=0,
            atol=1e-12,
            what=f"one-hot states vs their mean, K={k}",
        )


def _exponent_coefficients(k: int) -> np.ndarray:
    """c_s with p_s / p_onehot = e^(-c_s lambda), read off the kernel's enumerated probabilities at
    lambda = 1 for every state s that is not one-hot; checked to hold at lambda = 2, 5 and 10 too."""
    probs, states = bm.wta_enumerated(k, 1.0)
    onehot = states.sum(axis=1) == 1
    coefficients = np.log(probs[onehot][0]) - np.log(probs[~onehot])
    for lam in (2.0, 5.0, 10.0):
        p, _ = bm.wta_enumerated(k, lam)
        assert np.allclose(np.log(p[onehot][0]) - np.log(p[~onehot]), coefficients * lam, rtol=1e-9, atol=1e-9), (
            f"K={k}: log-odds against a one-hot state are not linear in lambda"
        )
    return coefficients


@pytest.mark.smoke  # scale-free (registry): exact, runs in every tier
@pytest.mark.claim(B5, statement="monotone-in-lambda")
def test_mass_increases_with_lambda(evidence):
    steps = np.concatenate([np.diff([_onehot_probs(k, lam).sum() for lam in LAMBDAS]) for k in range(2, 7)])
    # The argument: every non-one-hot state s has p_s / p_onehot = e^(-c_s lambda) (the kernel's
    # probabilities, checked linear in lambda); the one-hot mass is K / (K + sum_s e^(-c_s lambda)),
    # which increases strictly in lambda exactly when every c_s > 0. The closed form gives
    # c_s = (m - 1)^2 for a state with m ones: 1 for the empty state, 1, 4, 9, ... above.
    coefficients = {k: _exponent_coefficients(k) for k in range(2, 7)}
    every = np.concatenate(list(coefficients.values()))
    evidence.headline(smallest_increment=float(steps.min()), smallest_exponent_coefficient=float(every.min()))
    evidence.record(exponent_coefficients_K3=sorted(np.round(coefficients[3], 12).tolist()))
    statement_ge(every, 0.0, strict=True, what="exponent coefficients c_s of the non-one-hot states, K = 2..6")
    statement_ge(steps, 0.0, strict=True, what="one-hot mass increments along the lambda grid, K = 2..6")


@pytest.mark.smoke  # scale-free (registry): exact, runs in every tier
@pytest.mark.claim(B5, statement="limit-one")
def test_mass_tends_to_one(evidence):
    """1 - mass is the kernel's mass off the one-hot states (summed directly, no cancellation); it
    equals the 50-digit closed form and lies under (2^K - K) e^-lambda / K, so it tends to 0. Up to
    lambda = 700 float64 holds e^-lambda; at lambda = 1000 the 50-digit value is checked against the
    bound and the kernel's mass must have underflowed to exactly 0 off the one-hot states."""
    gaps, kernel_gaps, references, bounds, underflowed = {}, [], [], [], []
    with mpmath.workdps(50):
        for k in range(2, 7):
            for lam in (10, 100, 700, 1000):
                rest = mpmath.fsum(math.comb(k, m) * mpmath.exp(-lam * (m - 1) ** 2) for m in range(k + 1) if m != 1)
                gap = rest / (k + rest)  # = 1 - K / (K + rest), without the cancellation
                bound = (2**k - k) * mpmath.exp(-lam) / k
                probs, states = bm.wta_enumerated(k, float(lam))
                kernel_gap = float(probs[states.sum(axis=1) != 1].sum())
                gaps[f"K={k} lambda={lam}"] = {
                    "kernel": kernel_gap,
                    "50 digits": mpmath.nstr(gap, 10),
                    "bound": mpmath.nstr(bound, 10),
                }
                statement_holds(0 < gap <= bound, f"K={k}, lambda={lam}: 1 - mass = {gap} exceeds {bound}")
                bounds.append((kernel_gap, float(bound)))
                if lam <= 700:
                    kernel_gaps.append(kernel_gap)
                    references.append(float(gap))
                else:
                    underflowed.append(kernel_gap)
    evidence.headline(
        gap_K3_lambda700=gaps["K=3 lambda=700"]["kernel"],
        gap_K3_lambda1000_50_digits=gaps["K=3 lambda=1000"]["50 digits"],
    )
    evidence.record(gaps=gaps)
    kernel, bound = np.array(bounds).T  # in the order of `gaps`
    statement_le(kernel, bound, what="the kernel's 1 - mass against (2^K - K) e^-lambda / K, in the order of gaps")
    statement_allclose(  # exactly 0: e^-lambda underflows at lambda = 1000
        underflowed, 0.0, rtol=0, atol=0, what="the kernel's mass off the one-hot states at lambda = 1000"
    )
    statement_allclose(
        kernel_gaps, references, rtol=1e-10, what="kernel 1 - mass vs the 50-digit closed form (lambda <= 700)"
    )
