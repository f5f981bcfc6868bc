"""Tiers and shared numbers of the L statement tests, and the closed forms they compare against (their claim ids:
claims.ids)."""

from __future__ import annotations

import numpy as np

from claims.tiers import tiers
from suite_plugin.options import gpu_device, gpu_size
from kernels import safe_kl as sk


# The analytic statements run at smoke and full (workloads.safe_kl.SIZES), the main inequalities a
# second time at full with 100k instances.
TIERS = tiers("smoke", "full")
MAIN_TIERS = tiers("smoke", "full", full="full-100k")


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
    "rehearsal": (3_000, 1_100),  # the nightly's first instances, on the CPU (--gpu-rehearsal)
}  # (instances, chunk); tiny and the rehearsal end on a partial chunk
DEVICE_TIERS = tiers(smoke="tiny", gpu="nightly")


def sweep_plan(options, tier: str) -> tuple[str, int, int]:
    """(device, instances, chunk) of a device sweep. The nightly runs on CUDA (the gpu tier is skipped
    without it), or in a rehearsal its slice on the CPU; tiny runs where --backend torch --device points,
    else on the CPU."""
    if tier == "nightly":
        return gpu_device(options), *gpu_size(options, DEVICE_SIZES["nightly"], DEVICE_SIZES["rehearsal"])
    return (options.device if options.backend == "torch" else "cpu"), *DEVICE_SIZES[tier]
