"""Registry ids, tier sizes and shared numbers of the L statement tests."""
from __future__ import annotations

import functools

import numpy as np
import pytest

from fixtures import safe_kl as families
from fixtures.safe_kl import Instances, random_instances
from kernels import safe_kl as sk
from kernels import seeding
from pytest_claims import current_store

L1 = "lse/prop-2.4-sandwich"
L1b = "lse/cor-2.5-logsumexp-form"
L2 = "lse/lemma-2.7-moduli"
L3 = "lse/prop-2.6-cvar"

# Instances per analytic statement: smoke, full (the logbook's scale), and the second full run of the
# main inequalities.
SIZES = {"smoke": 300, "full": 4000, "full-100k": 100_000}
TIERS = [pytest.param("smoke", marks=pytest.mark.smoke), pytest.param("full", marks=pytest.mark.full)]
MAIN_TIERS = TIERS + [pytest.param("full-100k", marks=pytest.mark.full)]
ROUNDING = 1e-12  # relative accuracy of the F_rho solver (its reference test: 1e-12 against mpmath)


@functools.lru_cache(maxsize=8)
def instances(seed: int, tier: str, key: str = "main", weights: str = "probability") -> Instances:
    batch = random_instances(seed, key, SIZES[tier], uniform_weights=weights != "probability")
    if weights == "counting":
        batch = Instances(batch.phi, (batch.mu > 0).astype(float), batch.rho, batch.family)
    return batch


def values(seed: int, tier: str, key: str = "main", weights: str = "probability") -> tuple[np.ndarray, np.ndarray]:
    """(F, F_rho) of a tier's instances, through the result store."""

    def compute(_):
        batch = instances(seed, tier, key, weights)
        return sk.logsumexp_weighted(batch.phi, batch.mu), sk.f_rho_value(batch.phi, batch.mu, batch.rho)

    return current_store().get_or_compute(
        "lse/f-and-f-rho", dict(seed=seed, count=SIZES[tier], key=key, weights=weights), compute, code=[sk, families, seeding]
    )


RATE_UNIT = np.geomspace(1e-6, 1e-3, 7)


def rate_in_rho(phi: np.ndarray, mu: np.ndarray) -> dict:
    """F - F_rho on rho = RATE_UNIT / max(1, largest Gibbs density e^(phi - F)) per instance (the
    asymptotic regime starts once rho is small against 1 / that density), and the fitted exponents."""
    count, points = len(phi), len(RATE_UNIT)
    f = sk.logsumexp_weighted(phi, mu)
    scale = np.maximum(1.0, np.exp(np.max(np.where(mu > 0, phi, -np.inf), axis=1) - f))
    rhos = RATE_UNIT[None, :] / scale[:, None]
    f_rho = sk.f_rho_value(np.repeat(phi, points, axis=0), np.repeat(mu, points, axis=0), rhos.ravel()).reshape(count, points)
    gaps = f[:, None] - f_rho
    slope, se = slope_fit(np.log(rhos), np.log(gaps))
    return {"gaps": gaps, "scale": scale, "slope": slope, "se": se}


def slope_fit(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Least-squares slope of y on x along the last axis, and its standard error, per row."""
    xc = x - x.mean(axis=-1, keepdims=True)
    yc = y - y.mean(axis=-1, keepdims=True)
    slope = np.sum(xc * yc, axis=-1) / np.sum(xc * xc, axis=-1)
    resid = yc - slope[..., None] * xc
    dof = x.shape[-1] - 2
    se = np.sqrt(np.sum(resid**2, axis=-1) / dof / np.sum(xc * xc, axis=-1))
    return slope, se
