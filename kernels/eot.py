"""Paper L, Section 3.1 kernels: continuous entropic OT at eps = 0.01 by kernel SGD.

Setup (CLAIMS.md, eOT): mu = N(1, (1/sqrt(8 pi))^2); nu = 0.5 N(0, 0.02) + 0.5 N(2, 1/(2 pi))
(variances); c(x, y) = (x - y)^2; Gaussian kernel k(x, x') = exp(-(x - x')^2 / sigma^2).

* ``reference_value``: W_eps of the discretised problem (density-weighted grids, log-domain Sinkhorn
  with eps-scaling), the weak-duality lower bound D(f, g) evaluated at the final potentials.
* ``GaussSum``: S batched 1-D Gaussian sums U_s(x) = sum_j b_sj exp(-(x - x_sj)^2 / sigma^2), kept as
  truncated Taylor moments in boxes of width sigma: adding a source and evaluating at a point cost
  O(boxes x order), independent of the number of sources (the iteration count of SGD).
* ``kernel_sgd``: the baseline dual SGD and the proposed Safe-KL semi-dual SGD, batched over seeds.
* ``semi_dual_value``: S(v) = E_mu[-eps ln E_nu exp((v(y) - c(x, y))/eps)] + E_nu v <= W_eps.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.special import gammaln

EPS = 0.01
MU_MEAN, MU_SD = 1.0, 1.0 / math.sqrt(8.0 * math.pi)
NU_PARTS = ((0.5, 0.0, math.sqrt(0.02)), (0.5, 2.0, math.sqrt(1.0 / (2.0 * math.pi))))  # (weight, mean, sd)


def sample_mu(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    return MU_MEAN + MU_SD * rng.standard_normal(shape)


def sample_nu(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    second = rng.random(shape) < NU_PARTS[1][0]
    z = rng.standard_normal(shape)
    return np.where(second, NU_PARTS[1][1] + NU_PARTS[1][2] * z, NU_PARTS[0][1] + NU_PARTS[0][2] * z)


def density_mu(x: np.ndarray) -> np.ndarray:
    return np.exp(-0.5 * ((x - MU_MEAN) / MU_SD) ** 2) / (MU_SD * math.sqrt(2 * math.pi))


def density_nu(y: np.ndarray) -> np.ndarray:
    return sum(w * np.exp(-0.5 * ((y - m) / s) ** 2) / (s * math.sqrt(2 * math.pi)) for w, m, s in NU_PARTS)


def quadrature(n: int, width: float = 9.0) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Uniform grids over +-width sd with density weights normalised to 1: (x, a, y, b)."""
    x = np.linspace(MU_MEAN - width * MU_SD, MU_MEAN + width * MU_SD, n)
    y = np.linspace(NU_PARTS[0][1] - width * NU_PARTS[0][2], NU_PARTS[1][1] + width * NU_PARTS[1][2], n)
    a, b = density_mu(x), density_nu(y)
    return x, a / a.sum(), y, b / b.sum()


# ---------------------------------------------------------------------------------------------
# Overflow threshold of the baseline's exponential


def overflow_threshold(dtype: str, eps: float = EPS) -> float:
    """Smallest z with exp(z / eps) non-finite in dtype, by bisection on the real exp."""
    dt = np.dtype(dtype)
    lo, hi = 0.0, 1.0
    with np.errstate(over="ignore"):
        while np.isfinite(np.exp(dt.type(hi / eps))):
            hi *= 2.0
        for _ in range(200):
            mid = 0.5 * (lo + hi)
            if mid in (lo, hi):
                break
            if np.isfinite(np.exp(dt.type(mid / eps))):
                lo = mid
            else:
                hi = mid
    return hi


# ---------------------------------------------------------------------------------------------
# Reference W_eps


def _softmin(values: np.ndarray, axis: int) -> np.ndarray:
    top = np.max(values, axis=axis, keepdims=True)
    return np.squeeze(top, axis) + np.log(np.sum(np.exp(values - top), axis=axis))


def sinkhorn_dual(n: int, eps: float = EPS, tol: float = 1e-12, max_iter: int = 20_000) -> dict:
    """Log-domain Sinkhorn on an n-point discretisation; returns the dual lower bound and potentials."""
    x, a, y, b = quadrature(n)
    cost = (x[:, None] - y[None, :]) ** 2
    la, lb = np.log(a), np.log(b)
    f, g = np.zeros(n), np.zeros(n)
    iterations = 0
    for stage in (1.0, 0.3, 0.1, 0.03, eps):  # eps-scaling: each stage starts from the last potentials
        for _ in range(max_iter):
            f = -stage * _softmin((g[None, :] - cost) / stage + lb[None, :], axis=1)
            g_new = -stage * _softmin((f[:, None] - cost) / stage + la[:, None], axis=0)
            iterations += 1
            done = np.max(np.abs(g_new - g)) < tol
            g = g_new
            if done:
                break
    penalty = eps * math.exp(_softmin(((f[:, None] + g[None, :] - cost) / eps + la[:, None] + lb[None, :]).ravel(), axis=0))
    value = float(a @ f + b @ g - penalty + eps)
    return {"value": value, "x": x, "a": a, "y": y, "b": b, "f": f, "g": g, "iterations": iterations}


def reference_value(n: int = 600) -> dict:
    """W_eps on n points with the discretisation error estimated by halving the grid."""
    fine, coarse = sinkhorn_dual(n), sinkhorn_dual(n // 2)
    return {"value": fine["value"], "error_bound": abs(fine["value"] - coarse["value"]), "n": n, "iterations": fine["iterations"]}


def primal_value(plan: np.ndarray, n: int, eps: float = EPS) -> float:
    """<c, P> + eps KL(P | a x b) for a plan on the n-point discretisation (to cross-check with POT)."""
    x, a, y, b = quadrature(n)
    cost = (x[:, None] - y[None, :]) ** 2
    ref = a[:, None] * b[None, :]
    positive = plan > 0
    kl = float(np.sum(plan[positive] * np.log(plan[positive] / ref[positive])) - plan.sum() + ref.sum())
    return float(np.sum(plan * cost) + eps * kl)


# ---------------------------------------------------------------------------------------------
# Batched 1-D Gaussian sums with O(1) cost per source and per evaluation


class GaussSum:
    """U_s(x) = sum_j b_sj exp(-(x - x_sj)^2 / h^2) for S series at once (h = sigma).

    exp(-(x - x_j)^2/h^2) = e^(-u^2) e^(-t^2) e^(2ut) with u = (x - c)/h, t = (x_j - c)/h for a box
    centre c; e^(2ut) is expanded to `order` terms. Boxes have width h (|t| <= 1/2) and a point only
    reads boxes with |u| <= cutoff + 1/2. Error per unit of sum_j |b_sj|: the dropped boxes contribute
    at most e^(-cutoff^2); the truncation at most max over |u| <= cutoff + 1/2 of
    e^(-(|u| - 1/2)^2) (|u|)^order / order! e^|u| (``error_bound``).
    """

    def __init__(self, series: int, sigma2: float, lo: float, hi: float, *, order: int = 40, cutoff: float = 6.5, dtype=np.float64):
        self.h = math.sqrt(sigma2)
        self.lo = lo
        self.centres = np.arange(lo + 0.5 * self.h, hi + self.h, self.h)
        self.order, self.cutoff, self.dtype = order, cutoff, np.dtype(dtype)
        n = np.arange(order)
        self.coef = np.exp(n * math.log(2.0) - gammaln(n + 1)).astype(self.dtype)  # 2^n / n!
        self.moments = np.zeros((series, len(self.centres), order), dtype=self.dtype)
        self.rows = np.arange(series)
        self.abs_total = np.zeros(series)

    def error_bound(self) -> np.ndarray:
        """Absolute error bound of an evaluation, per series."""
        u = np.linspace(0, self.cutoff + 0.5, 2001)
        log_term = -np.maximum(u - 0.5, 0) ** 2 + self.order * np.log(np.maximum(u, 1e-300)) - gammaln(self.order + 1) + u
        truncation = float(np.exp(np.max(log_term)))
        return self.abs_total * (truncation + math.exp(-self.cutoff**2))

    def _box(self, x: np.ndarray) -> np.ndarray:
        return np.clip(np.floor((x - self.lo) / self.h).astype(np.int64), 0, len(self.centres) - 1)

    def add(self, x: np.ndarray, weight: np.ndarray) -> None:
        """Add one source per series: x (S,), weight (S,)."""
        box = self._box(x)
        t = ((x - self.centres[box]) / self.h).astype(self.dtype)
        powers = np.cumprod(np.concatenate([np.ones_like(t)[:, None], np.repeat(t[:, None], self.order - 1, axis=1)], axis=1), axis=1)
        self.moments[self.rows, box] += (weight * np.exp(-t * t)).astype(self.dtype)[:, None] * powers
        with np.errstate(invalid="ignore"):
            self.abs_total += np.abs(weight.astype(np.float64))

    def __call__(self, x: np.ndarray) -> np.ndarray:
        """Evaluate every series at its own points: x (S,) or (S, m) -> same shape."""
        squeeze = x.ndim == 1
        points = x[:, :, None] if not squeeze else x[:, None, None]
        u = ((points - self.centres[None, None, :]) / self.h).astype(self.dtype)  # (S, m, B)
        near = np.abs(u) <= self.cutoff + 0.5
        powers = np.cumprod(np.concatenate([np.ones_like(u)[..., None], np.repeat(u[..., None], self.order - 1, axis=-1)], axis=-1), axis=-1)
        poly = np.einsum("smbn,sbn->smb", powers * self.coef, self.moments)
        value = np.sum(np.where(near, np.exp(-u * u) * poly, 0), axis=-1)
        return value[:, 0] if squeeze else value


def direct_sum(sources: np.ndarray, weights: np.ndarray, points: np.ndarray, sigma2: float) -> np.ndarray:
    """The same sums by direct summation (reference): sources, weights (S, T); points (S, m)."""
    return np.einsum("st,smt->sm", weights, np.exp(-((points[:, :, None] - sources[:, None, :]) ** 2) / sigma2))


# ---------------------------------------------------------------------------------------------
# Kernel SGD, batched over seeds


@dataclass(frozen=True)
class SgdConfig:
    method: str  # "baseline" (dual, exp) or "proposed" (Safe-KL semi-dual, sigma_rho, shift alpha)
    sigma2: float
    C: float
    rho: float = 0.0
    alpha_init: str = "zero"  # or "cost": alpha_0 = -c(x_1, y_1), the logbook's "-c_0/eps" in the exponent's units

    @property
    def name(self) -> str:
        if self.method == "baseline":
            return f"baseline sigma2={self.sigma2:g} C={self.C:g}"
        return f"proposed sigma2={self.sigma2:g} rho={self.rho:g} C={self.C:g}" + (" alpha0=-c(x1,y1)" if self.alpha_init == "cost" else "")


def _weight(config: SgdConfig, z: np.ndarray, dtype) -> np.ndarray:
    """exp(z/eps) (baseline) or sigma_rho(z/eps) = e^s / (1 + rho e^s) (proposed), in dtype."""
    s = (z / EPS).astype(dtype)
    if config.method == "baseline":
        with np.errstate(over="ignore", invalid="ignore"):
            return np.exp(s)
    # e^s / (1 + rho e^s) = sigmoid(s + ln rho) / rho, never overflowing.
    shifted = s + dtype.type(math.log(config.rho))
    return (1.0 / (1.0 + np.exp(-np.clip(shifted, -80 if dtype == np.float32 else -700, None)))) / dtype.type(config.rho)


def kernel_sgd(config: SgdConfig, seeds: list[int], iterations: int, checkpoints: tuple[int, ...], *, dtype: str = "float64", record_steps: bool = False) -> dict:
    """Run SGD for every seed at once; return potentials' snapshots (as GaussSum evaluations) and
    overflow diagnostics: the largest exponent argument z/eps reached and the first non-finite iteration."""
    dt = np.dtype(dtype)
    series = len(seeds)
    xs = np.stack([sample_mu(np.random.default_rng([s, 1]), (iterations,)) for s in seeds]).astype(dt)
    ys = np.stack([sample_nu(np.random.default_rng([s, 2]), (iterations,)) for s in seeds]).astype(dt)
    u_sum = GaussSum(series, config.sigma2, -2.0, 6.5, dtype=dt)
    v_sum = GaussSum(series, config.sigma2, -2.0, 6.5, dtype=dt)
    alpha = np.zeros(series, dtype=dt)
    if config.method == "proposed" and config.alpha_init == "cost":
        alpha = (-((xs[:, 0] - ys[:, 0]) ** 2)).astype(dt)
    max_arg = np.full(series, -np.inf)
    first_nonfinite = np.full(series, -1, dtype=np.int64)
    snapshots = {}
    steps = np.zeros((series, iterations), dtype=dt) if record_steps else None
    for i in range(1, iterations + 1):
        x, y = xs[:, i - 1], ys[:, i - 1]
        with np.errstate(over="ignore", invalid="ignore"):
            z = u_sum(x) + v_sum(y) + alpha - (x - y) ** 2
            max_arg = np.fmax(max_arg, (z / EPS).astype(np.float64))
            step = (config.C / math.sqrt(i)) * (1.0 - _weight(config, z, dt))
            step = step.astype(dt)
        bad = ~np.isfinite(step) & (first_nonfinite < 0)
        first_nonfinite[bad] = i
        u_sum.add(x, step)
        v_sum.add(y, step)
        if record_steps:
            steps[:, i - 1] = step
        if config.method == "proposed":
            alpha = (alpha + step).astype(dt)
        if i in checkpoints:
            snapshots[i] = {"v_moments": v_sum.moments.copy(), "abs_total": v_sum.abs_total.copy()}
    return {
        "config": config,
        "snapshots": snapshots,
        "v_sum": v_sum,
        "max_exponent_argument": max_arg,
        "first_nonfinite_iteration": first_nonfinite,
        "samples": (xs, ys),
        "alpha": alpha,
        "u_sum": u_sum,
        "steps": steps,
    }


def semi_dual_value(v_sum: GaussSum, moments: np.ndarray, n: int = 400) -> np.ndarray:
    """S(v) per series for v given by GaussSum moments, by quadrature of mu and nu (log-domain)."""
    x, a, y, b = quadrature(n)
    saved = v_sum.moments
    v_sum.moments = moments
    try:
        with np.errstate(over="ignore", invalid="ignore"):
            v = v_sum(np.broadcast_to(y, (moments.shape[0], n)).copy()).astype(np.float64)  # (S, n)
    finally:
        v_sum.moments = saved
    inner = (v[:, None, :] - (x[None, :, None] - y[None, None, :]) ** 2) / EPS + np.log(b)[None, None, :]
    top = np.max(inner, axis=2, keepdims=True)
    with np.errstate(over="ignore", invalid="ignore"):
        soft = top[..., 0] + np.log(np.sum(np.exp(inner - top), axis=2))
        return -EPS * (soft @ a) + v @ b
