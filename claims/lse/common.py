"""Registry ids, tier sizes and shared numbers of the L statement tests."""

from __future__ import annotations

import functools
import math

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
        "lse/f-and-f-rho",
        dict(seed=seed, count=SIZES[tier], key=key, weights=weights),
        compute,
        code=[sk, families, seeding],
    )


RATE_UNIT = np.geomspace(1e-6, 1e-3, 7)


def rate_in_rho(phi: np.ndarray, mu: np.ndarray) -> dict:
    """F - F_rho on rho = RATE_UNIT / max(1, largest Gibbs density e^(phi - F)) per instance (the
    asymptotic regime starts once rho is small against 1 / that density), and the fitted exponents."""
    count, points = len(phi), len(RATE_UNIT)
    f = sk.logsumexp_weighted(phi, mu)
    scale = np.maximum(1.0, np.exp(np.max(np.where(mu > 0, phi, -np.inf), axis=1) - f))
    rhos = RATE_UNIT[None, :] / scale[:, None]
    f_rho = sk.f_rho_value(np.repeat(phi, points, axis=0), np.repeat(mu, points, axis=0), rhos.ravel()).reshape(
        count, points
    )
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


# ---------------------------------------------------------------------------------------------
# Closed forms the statements compare against [derived; see the registry provenance]


def binary_entropy(rho):
    """H(rho) = -rho ln rho - (1 - rho) ln(1 - rho), in nats: the largest excess of L3's band over
    CVaR, in units of lambda/rho, at a given rho (attained at constant phi)."""
    rho = np.asarray(rho, dtype=np.float64)
    return -rho * np.log(rho) - (1.0 - rho) * np.log1p(-rho)


def h_counting(rho):
    """h(rho) = [1 + ((1 - rho)/rho) ln(1 - rho)] / rho: the largest gap/rho of L1b under the counting
    measure at a given rho (attained by one atom, approached with one dominant atom)."""
    rho = np.asarray(rho, dtype=np.float64)
    return (1.0 + (1.0 - rho) / rho * np.log1p(-rho)) / rho


# ---------------------------------------------------------------------------------------------
# The device sweep: L1's and L3's inequalities over many instances, batched and chunked on torch
# (the gpu tier's 1e7 on CUDA; the same code at a tiny size on the CPU in every smoke run)

DEVICE_SIZES = {
    "tiny": (1_000, 400),
    "nightly": (10_000_000, 250_000),
}  # (instances, chunk); tiny ends on a partial chunk
DEVICE_TIERS = [pytest.param("tiny", marks=pytest.mark.smoke), pytest.param("nightly", marks=pytest.mark.gpu)]


def sweep_device(options, tier: str) -> str:
    """The nightly runs on CUDA (the gpu tier is skipped without it); tiny runs where --backend torch
    --device points, else on the CPU."""
    if tier == "nightly":
        return "cuda"
    return options.device if options.backend == "torch" else "cpu"


def device_sweep(seed: int, tier: str, device: str) -> dict:
    """Counts and extremes over the sweep's instances (result store): L1's F_rho <= F and L3's band
    and its entropy bound, each instance checked to the solver's rounding; the device the tensors
    were on is part of the result."""
    import sys

    count, chunk = DEVICE_SIZES[tier]

    def compute(_):
        import torch

        threads = torch.get_num_threads()
        if device == "cpu":
            # The tiny CPU sweep is small: one thread, or OpenMP spin-waits when the cores are shared
            # (-n 2 on 2 cores) make it 100 times slower.
            torch.set_num_threads(1)
        try:
            return sweep(torch)
        finally:
            torch.set_num_threads(threads)

    def sweep(torch):
        acc = {
            "instances": 0,
            "nonfinite": 0,
            "f_rho_above_f": 0,
            "printed_direction_violations": 0,
            "min_relative_slack": math.inf,
            "band_below": 0,
            "band_above": 0,
            "above_entropy_bound": 0,
            "max_needed_constant": -math.inf,
            "max_needed_over_entropy": -math.inf,
        }
        used = None
        for start in range(0, count, chunk):
            phi, mu, rho, lam = families.device_instances(seed, tier, start, min(chunk, count - start), device)
            used = phi.device.type
            f, f_rho = sk.logsumexp_weighted(phi, mu), sk.f_rho_value(phi, mu, rho)
            middle = lam * sk.f_rho_value(phi / lam[:, None], mu, rho) - lam * (torch.log(rho) - 1.0)
            cvar = sk.cvar_tail_average(phi, mu, rho)
            width = lam / rho
            slack = (f - f_rho) / torch.clamp(torch.abs(f), min=1.0)
            rounding = ROUNDING * (torch.clamp(torch.abs(cvar), min=1.0) + torch.abs(middle))
            needed = (middle - cvar) / width
            entropy = -rho * torch.log(rho) - (1.0 - rho) * torch.log1p(-rho)
            finite = torch.isfinite(f) & torch.isfinite(f_rho) & torch.isfinite(middle) & torch.isfinite(cvar)
            part = {
                "instances": len(rho),
                "nonfinite": int((~finite).sum()),
                "f_rho_above_f": int((slack < -ROUNDING).sum()),
                "printed_direction_violations": int((f > f_rho).sum()),
                "band_below": int((middle - cvar < -rounding).sum()),
                "band_above": int((cvar + width - middle < -rounding).sum()),
                "above_entropy_bound": int((needed - entropy > rounding / width).sum()),
            }
            for name, value in part.items():
                acc[name] += value
            acc["min_relative_slack"] = min(acc["min_relative_slack"], float(slack.min()))
            acc["max_needed_constant"] = max(acc["max_needed_constant"], float(needed.max()))
            acc["max_needed_over_entropy"] = max(acc["max_needed_over_entropy"], float((needed / entropy).max()))
        acc.update(device=used, chunk=chunk, max_atoms=families.DEVICE_MAX_ATOMS)
        return acc

    return current_store().get_or_compute(
        "lse/device-sweep",
        dict(seed=seed, tier=tier, device=device, count=count, chunk=chunk),
        compute,
        code=[sk, families, seeding, sys.modules[__name__]],
    )
