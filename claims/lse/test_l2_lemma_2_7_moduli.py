"""L2: "The rescaled SoftPlus-based conjugate of the Safe KL function is proven to be rho-strongly convex,
with its own conjugate being (1/rho)-smooth (Lemma 2.7)." Both constants hold and are loose by 4:
4 rho and 1/(4 rho) are tight (4.05 rho and 1/(4.05 rho) fail)."""
from __future__ import annotations

import mpmath
import numpy as np
import pytest

from pytest_claims import statement_holds
from claims.lse.common import L2, TIERS
from kernels import safe_kl as sk
from kernels.seeding import keyed_rng

RHOS = np.geomspace(1e-3, 0.99, 10)
CHORDS = {"smoke": 20_000, "full": 200_000}  # per rho and modulus (the logbook: 200000)


@pytest.mark.smoke  # scale-free (registry): a fixed grid, the same in every tier
@pytest.mark.claim(L2, statement="min-curvature")
def test_min_curvature_is_four_rho(evidence):
    worst_value = worst_place = 0.0
    for rho in RHOS:
        t = np.linspace(0, 1 / rho, 2_000_001)[1:-1]
        curvature = sk.f_rho_second(t, rho)
        i = int(np.argmin(curvature))
        worst_value = max(worst_value, abs(curvature[i] / (4 * rho) - 1))
        worst_place = max(worst_place, abs(t[i] * 2 * rho - 1))
    evidence.headline(max_relative_error_of_min=worst_value, max_relative_error_of_argmin=worst_place)
    statement_holds(worst_value <= 1e-9 and worst_place <= 1e-5, f"min f'' / (4 rho) - 1 = {worst_value:.3g}, argmin off by {worst_place:.3g}")


def _chord_violations(rho: float, modulus: float, rng, chords: int) -> int:
    t1, t2 = rng.uniform(0, 1 / rho, (2, chords))
    lam = rng.uniform(0, 1, chords)
    mid = lam * t1 + (1 - lam) * t2
    slack = lam * sk.f_rho(t1, rho) + (1 - lam) * sk.f_rho(t2, rho) - sk.f_rho(mid, rho) - 0.5 * modulus * lam * (1 - lam) * (t1 - t2) ** 2
    return int(np.sum(slack < -1e-12 * (1 + np.abs(sk.f_rho(mid, rho)))))


@pytest.mark.claim(L2, statement="strong-convexity-chords")
@pytest.mark.parametrize("tier", TIERS)
def test_strong_convexity_chord_inequality(options, evidence, tier):
    counts = {"rho": 0, "4 rho": 0, "4.05 rho": 0}
    failing_rhos = 0
    for rho in RHOS:
        rng = keyed_rng(f"{options.seed}|lse/chords|{tier}|{rho:.17g}")
        row = {name: _chord_violations(rho, factor * rho, rng, CHORDS[tier]) for name, factor in (("rho", 1.0), ("4 rho", 4.0), ("4.05 rho", 4.05))}
        counts = {k: counts[k] + row[k] for k in counts}
        failing_rhos += row["4.05 rho"] > 0
    evidence.headline(violations_at_rho=counts["rho"], violations_at_4rho=counts["4 rho"], violations_at_4_05rho=counts["4.05 rho"])
    evidence.record(chords_per_rho_and_modulus=CHORDS[tier], rhos=RHOS, rhos_where_4_05_fails=failing_rhos)
    assert failing_rhos == len(RHOS), "the tightness audit must fail at 4.05 rho for every rho"
    statement_holds(counts["rho"] == 0 and counts["4 rho"] == 0, f"chord violations {counts}")


@pytest.mark.smoke  # scale-free (registry): a fixed grid, the same in every tier
@pytest.mark.claim(L2, statement="conjugate-max-curvature")
def test_conjugate_max_curvature(evidence):
    worst_value = worst_place = 0.0
    for rho in RHOS:
        s = np.linspace(-np.log(rho) - 30, -np.log(rho) + 30, 2_000_001)
        curvature = sk.f_rho_conjugate_second(s, rho)
        i = int(np.argmax(curvature))
        worst_value = max(worst_value, abs(curvature[i] * 4 * rho - 1))
        worst_place = max(worst_place, abs(s[i] + np.log(rho)))
    evidence.headline(max_relative_error_of_max=worst_value, max_error_of_argmax=worst_place)
    statement_holds(worst_value <= 1e-9 and worst_place <= 1e-4, f"max (f*)'' x 4 rho - 1 = {worst_value:.3g}, argmax off by {worst_place:.3g}")


@pytest.mark.claim(L2, statement="smoothness-lipschitz")
@pytest.mark.parametrize("tier", TIERS)
def test_conjugate_gradient_lipschitz(options, evidence, tier):
    counts = {"1/rho": 0, "1/(4 rho)": 0, "1/(4.05 rho)": 0}
    failing_rhos = 0
    for rho in RHOS:
        rng = keyed_rng(f"{options.seed}|lse/lipschitz|{tier}|{rho:.17g}")
        centre, pairs = -np.log(rho), CHORDS[tier]
        s1 = rng.uniform(centre - 20, centre + 20, pairs)
        s2 = s1 + rng.normal(0, 1, pairs) * np.geomspace(1e-4, 10, pairs)
        ratio = np.abs(sk.f_rho_conjugate_prime(s1, rho) - sk.f_rho_conjugate_prime(s2, rho)) / np.abs(s1 - s2)
        row = {name: int(np.sum(ratio > bound * (1 + 1e-9))) for name, bound in (("1/rho", 1 / rho), ("1/(4 rho)", 1 / (4 * rho)), ("1/(4.05 rho)", 1 / (4.05 * rho)))}
        counts = {k: counts[k] + row[k] for k in counts}
        failing_rhos += row["1/(4.05 rho)"] > 0
    evidence.headline(violations_at_1_over_rho=counts["1/rho"], violations_at_1_over_4rho=counts["1/(4 rho)"], violations_at_1_over_4_05rho=counts["1/(4.05 rho)"])
    evidence.record(pairs_per_rho=CHORDS[tier], rhos_where_1_over_4_05rho_fails=failing_rhos)
    assert failing_rhos == len(RHOS), "the tightness audit must fail at 1/(4.05 rho) for every rho"
    statement_holds(counts["1/rho"] == 0 and counts["1/(4 rho)"] == 0, f"Lipschitz violations {counts}")


@pytest.mark.smoke  # scale-free (registry): a fixed grid, the same in every tier
@pytest.mark.claim(L2, statement="legendre-identity")
def test_legendre_identity(evidence):
    # At 40 digits: composing (f*)' with f'' in float64 loses digits where 1 - rho t cancels.
    worst = 0.0
    with mpmath.workdps(40):
        for rho in RHOS:
            r = mpmath.mpf(float(rho))
            for s in np.linspace(-np.log(rho) - 15, -np.log(rho) + 15, 201):
                s = mpmath.mpf(float(s))
                lhs = mpmath.exp(s) / (1 + r * mpmath.exp(s)) ** 2  # (f*)''(s)
                t = mpmath.exp(s) / (1 + r * mpmath.exp(s))  # (f*)'(s)
                rhs = 1 / (1 / t + r / (1 - r * t))  # 1 / f''(t)
                worst = max(worst, float(abs(lhs / rhs - 1)))
    float_worst = 0.0
    for rho in RHOS:
        s = np.linspace(-np.log(rho) - 15, -np.log(rho) + 15, 2001)
        float_worst = max(float_worst, float(np.max(np.abs(sk.f_rho_conjugate_second(s, rho) * sk.f_rho_second(sk.f_rho_conjugate_prime(s, rho), rho) - 1))))
    evidence.headline(max_relative_error_40_digits=worst)
    evidence.record(points=201 * len(RHOS), float64_kernels_max_relative_error=float_worst)
    statement_holds(worst <= 1e-10, f"(f*)'' differs from 1/f''((f*)') by {worst:.3g} relative")
