"""L2: "The rescaled SoftPlus-based conjugate of the Safe KL function is proven to be rho-strongly convex,
with its own conjugate being (1/rho)-smooth (Lemma 2.7, Section 2.2)." Both constants hold and are loose by 4:
4 rho and 1/(4 rho) are tight (4.05 rho and 1/(4.05 rho) fail).

The constants come from an argument, not from the samples [derived]: f_rho''(t) = 1/t + rho/(1 - rho t)
is convex on (0, 1/rho) with its minimum 4 rho at t = 1/(2 rho); a chord inequality with modulus m holds
for every chord iff f_rho'' >= m everywhere, so m = 4 rho is the largest modulus and a short chord centred
at 1/(2 rho) fails any m > 4 rho (the deterministic chords below). Likewise (f_rho*)''(s) =
e^s/(1 + rho e^s)^2 is at most 1/(4 rho), at s = -ln rho, so 1/(4 rho) is the smallest Lipschitz constant
of (f_rho*)' and a short pair centred at -ln rho fails any smaller one. Every check below reads the
kernel's f_rho and f_rho* themselves (finite differences), not only their hand-written derivatives.
"""

from __future__ import annotations

import mpmath
import numpy as np
import pytest

from pytest_claims import statement_allclose, statement_ge, statement_le
from claims.ids import L2
from claims.lse.common import TIERS
from kernels import safe_kl as sk
from kernels.seeding import seeded_rng

RHOS = np.geomspace(1e-3, 0.99, 10)
CHORDS = {"smoke": 20_000, "full": 200_000}  # per rho and modulus (the logbook: 200000)


@pytest.mark.smoke  # scale-free (registry): a fixed grid, the same in every tier
@pytest.mark.claim(L2, statement="min-curvature")
def test_min_curvature_is_four_rho(evidence):
    minima, places = [], []
    at_minimum, formula, differences = [], [], []
    for rho in RHOS:
        t = np.linspace(0, 1 / rho, 2_000_001)[1:-1]
        curvature = sk.f_rho_second(t, rho)
        i = int(np.argmin(curvature))
        minima.append(curvature[i] / (4 * rho))
        places.append(t[i] * 2 * rho)
        # the generator itself: central second differences of f_rho (step 1e-4/rho; truncation and
        # rounding both below 1e-7 relative) at t = 1/(2 rho) and across [0.2, 0.8]/rho
        h = 1e-4 / rho
        at = np.concatenate([[0.5 / rho], np.linspace(0.2 / rho, 0.8 / rho, 61)])
        second = (sk.f_rho(at + h, rho) - 2 * sk.f_rho(at, rho) + sk.f_rho(at - h, rho)) / h**2
        at_minimum.append(second[0] / (4 * rho))
        differences.extend(second[1:])
        formula.extend(sk.f_rho_second(at[1:], rho))
    found = statement_allclose(minima, 1.0, rtol=0, atol=1e-9, what="min over the grid of f_rho'', in units of 4 rho")
    where = statement_allclose(places, 1.0, rtol=0, atol=1e-5, what="argmin of f_rho'', in units of 1/(2 rho)")
    evidence.headline(
        max_relative_error_of_min=found["max_abs_error"], max_relative_error_of_argmin=where["max_abs_error"]
    )
    statement_allclose(
        at_minimum,
        1.0,
        rtol=0,
        atol=1e-6,
        what="second difference of the kernel's f_rho at 1/(2 rho), in units of 4 rho",
    )
    statement_allclose(differences, formula, rtol=1e-6, what="second differences of the kernel's f_rho against f_rho''")


def _chord_violations(rho: float, modulus: float, rng, chords: int) -> int:
    t1, t2 = rng.uniform(0, 1 / rho, (2, chords))
    lam = rng.uniform(0, 1, chords)
    mid = lam * t1 + (1 - lam) * t2
    slack = (
        lam * sk.f_rho(t1, rho)
        + (1 - lam) * sk.f_rho(t2, rho)
        - sk.f_rho(mid, rho)
        - 0.5 * modulus * lam * (1 - lam) * (t1 - t2) ** 2
    )
    return int(np.sum(slack < -1e-12 * (1 + np.abs(sk.f_rho(mid, rho)))))


@pytest.mark.claim(L2, statement="strong-convexity-chords")
@pytest.mark.parametrize("tier", TIERS)
def test_strong_convexity_chord_inequality(options, evidence, tier):
    counts = {"rho": 0, "4 rho": 0, "4.05 rho": 0}
    centred = {"4 rho": 0, "4.05 rho": 0}
    failing_rhos = 0
    for rho in RHOS:
        rng = seeded_rng(options.seed, f"lse/chords|{tier}|{rho:.17g}")
        row = {
            name: _chord_violations(rho, factor * rho, rng, CHORDS[tier])
            for name, factor in (("rho", 1.0), ("4 rho", 4.0), ("4.05 rho", 4.05))
        }
        counts = {k: counts[k] + row[k] for k in counts}
        failing_rhos += row["4.05 rho"] > 0
        # The audit from the argument, not from luck: chords centred at the argmin 1/(2 rho), half-length 1e-2/rho.
        for name, factor in (("4 rho", 4.0), ("4.05 rho", 4.05)):
            centred[name] += _centred_chord_fails(rho, factor * rho)
    evidence.headline(
        violations_at_rho=counts["rho"], violations_at_4rho=counts["4 rho"], violations_at_4_05rho=counts["4.05 rho"]
    )
    evidence.record(
        chords_per_rho_and_modulus=CHORDS[tier],
        rhos=RHOS,
        rhos_where_4_05_fails_on_random_chords=failing_rhos,
        centred_chords_failing=centred,
    )
    statement_le(
        [counts["rho"], counts["4 rho"], centred["4 rho"]],
        0,
        what="chord violations at m = rho, 4 rho (random, centred)",
    )
    statement_ge(centred["4.05 rho"], len(RHOS), what="rho at which the centred chord fails m = 4.05 rho (all must)")


def _centred_chord_fails(rho: float, modulus: float) -> bool:
    """The chord inequality at t = 1/(2 rho) +- 1e-2/rho, lambda = 1/2: fails iff the modulus exceeds the
    curvature there (4 rho, up to 7e-5 relative from the chord's length)."""
    centre, half = 0.5 / rho, 1e-2 / rho
    ends = sk.f_rho(np.array([centre - half, centre + half]), rho)
    slack = 0.5 * (ends[0] + ends[1]) - float(sk.f_rho(np.array(centre), rho)) - 0.5 * modulus * 0.25 * (2 * half) ** 2
    return bool(slack < -1e-12 * (1 + abs(float(sk.f_rho(np.array(centre), rho)))))


@pytest.mark.smoke  # scale-free (registry): a fixed grid, the same in every tier
@pytest.mark.claim(L2, statement="conjugate-max-curvature")
def test_conjugate_max_curvature(evidence):
    maxima, places = [], []
    at_maximum, formula, differences = [], [], []
    for rho in RHOS:
        s = np.linspace(-np.log(rho) - 30, -np.log(rho) + 30, 2_000_001)
        curvature = sk.f_rho_conjugate_second(s, rho)
        i = int(np.argmax(curvature))
        maxima.append(curvature[i] * 4 * rho)
        places.append(s[i] + np.log(rho))
        # the conjugate itself: central second differences of f_rho* (step 1e-3), in units of 1/(4 rho)
        h = 1e-3
        at = np.concatenate([[-np.log(rho)], np.linspace(-np.log(rho) - 10, -np.log(rho) + 10, 81)])
        second = (
            sk.f_rho_conjugate(at + h, rho) - 2 * sk.f_rho_conjugate(at, rho) + sk.f_rho_conjugate(at - h, rho)
        ) / h**2
        at_maximum.append(second[0] * 4 * rho)
        differences.extend(second[1:] * 4 * rho)
        formula.extend(sk.f_rho_conjugate_second(at[1:], rho) * 4 * rho)
    found = statement_allclose(
        maxima, 1.0, rtol=0, atol=1e-9, what="max over the grid of (f_rho*)'', in units of 1/(4 rho)"
    )
    where = statement_allclose(places, 0.0, rtol=0, atol=1e-4, what="argmax of (f_rho*)'' minus (-ln rho)")
    evidence.headline(max_relative_error_of_max=found["max_abs_error"], max_error_of_argmax=where["max_abs_error"])
    statement_allclose(
        at_maximum,
        1.0,
        rtol=0,
        atol=1e-6,
        what="second difference of the kernel's f_rho* at -ln rho, in units of 1/(4 rho)",
    )
    statement_allclose(
        differences,
        formula,
        rtol=0,
        atol=1e-6,
        what="second differences of the kernel's f_rho* against (f_rho*)'', in units of 1/(4 rho)",
    )


@pytest.mark.claim(L2, statement="smoothness-lipschitz")
@pytest.mark.parametrize("tier", TIERS)
def test_conjugate_gradient_lipschitz(options, evidence, tier):
    counts = {"1/rho": 0, "1/(4 rho)": 0, "1/(4.05 rho)": 0}
    centred = {"1/(4 rho)": 0, "1/(4.05 rho)": 0}
    failing_rhos = 0
    derivative, difference = [], []
    for rho in RHOS:
        rng = seeded_rng(options.seed, f"lse/lipschitz|{tier}|{rho:.17g}")
        centre, pairs = -np.log(rho), CHORDS[tier]
        s1 = rng.uniform(centre - 20, centre + 20, pairs)
        s2 = s1 + rng.normal(0, 1, pairs) * np.geomspace(1e-4, 10, pairs)
        ratio = np.abs(sk.f_rho_conjugate_prime(s1, rho) - sk.f_rho_conjugate_prime(s2, rho)) / np.abs(s1 - s2)
        row = {
            name: int(np.sum(ratio > bound * (1 + 1e-9)))
            for name, bound in (("1/rho", 1 / rho), ("1/(4 rho)", 1 / (4 * rho)), ("1/(4.05 rho)", 1 / (4.05 * rho)))
        }
        counts = {k: counts[k] + row[k] for k in counts}
        failing_rhos += row["1/(4.05 rho)"] > 0
        # The audit from the argument: the pair -ln rho +- 5e-4, where the slope of (f*)' is 1/(4 rho).
        pair = sk.f_rho_conjugate_prime(np.array([centre - 5e-4, centre + 5e-4]), rho)
        slope = abs(pair[1] - pair[0]) / 1e-3
        centred["1/(4 rho)"] += bool(slope > 1 / (4 * rho) * (1 + 1e-9))
        centred["1/(4.05 rho)"] += bool(slope > 1 / (4.05 * rho) * (1 + 1e-9))
        # (f*)' is the derivative of the kernel's f*: central differences (step 1e-5), in units of 1/rho
        at = np.linspace(centre - 10, centre + 10, 81)
        difference.extend((sk.f_rho_conjugate(at + 1e-5, rho) - sk.f_rho_conjugate(at - 1e-5, rho)) / 2e-5 * rho)
        derivative.extend(sk.f_rho_conjugate_prime(at, rho) * rho)
    evidence.headline(
        violations_at_1_over_rho=counts["1/rho"],
        violations_at_1_over_4rho=counts["1/(4 rho)"],
        violations_at_1_over_4_05rho=counts["1/(4.05 rho)"],
    )
    evidence.record(
        pairs_per_rho=CHORDS[tier],
        rhos_where_1_over_4_05rho_fails_on_random_pairs=failing_rhos,
        centred_pairs_failing=centred,
    )
    statement_allclose(
        derivative,
        difference,
        rtol=0,
        atol=1e-8,
        what="(f_rho*)' against central differences of the kernel's f_rho*, in units of 1/rho",
    )
    statement_le(
        [counts["1/rho"], counts["1/(4 rho)"], centred["1/(4 rho)"]],
        0,
        what="Lipschitz violations at L = 1/rho, 1/(4 rho) (random, centred)",
    )
    statement_ge(
        centred["1/(4.05 rho)"], len(RHOS), what="rho at which the centred pair fails L = 1/(4.05 rho) (all must)"
    )


@pytest.mark.smoke  # scale-free (registry): a fixed grid, the same in every tier
@pytest.mark.claim(L2, statement="legendre-identity")
def test_legendre_identity(evidence):
    # At 40 digits: composing (f*)' with f'' in float64 loses digits where 1 - rho t cancels.
    ratios = []
    with mpmath.workdps(40):
        for rho in RHOS:
            r = mpmath.mpf(float(rho))
            for s in np.linspace(-np.log(rho) - 15, -np.log(rho) + 15, 201):
                s = mpmath.mpf(float(s))
                lhs = mpmath.exp(s) / (1 + r * mpmath.exp(s)) ** 2  # (f*)''(s)
                t = mpmath.exp(s) / (1 + r * mpmath.exp(s))  # (f*)'(s)
                rhs = 1 / (1 / t + r / (1 - r * t))  # 1 / f''(t)
                ratios.append(float(lhs / rhs - 1))  # the difference from 1, rounded to float after it is formed
    # The kernels: (f*)'' f''((f*)') - 1 in float64, within 8 ulp / (1 - rho t) + 8 ulp, t = (f*)'(s): both
    # factors lose digits where 1 - rho t cancels (p (1 - p) and rho / (1 - rho t)), nowhere else.
    products, allowed = [], []
    for rho in RHOS:
        s = np.linspace(-np.log(rho) - 15, -np.log(rho) + 15, 2001)
        t = sk.f_rho_conjugate_prime(s, rho)
        products.extend(sk.f_rho_conjugate_second(s, rho) * sk.f_rho_second(t, rho) - 1.0)
        allowed.extend(8 * np.finfo(float).eps * (1.0 + 1.0 / (1.0 - rho * t)))
    excess = np.abs(products) / np.array(allowed)
    found = statement_allclose(ratios, 0.0, rtol=0, atol=1e-10, what="(f*)'' f''((f*)') - 1 at 40 digits")
    evidence.headline(
        max_relative_error_40_digits=found["max_abs_error"],
        float64_kernels_max_error_over_allowance=float(excess.max()),
    )
    evidence.record(
        points=201 * len(RHOS),
        float64_points=len(products),
        float64_kernels_max_relative_error=float(np.max(np.abs(products))),
    )
    statement_le(excess, 1.0, what="the kernels' |(f*)'' f''((f*)') - 1| in units of its rounding allowance")
