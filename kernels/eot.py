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

from kernels.backend import namespace, to_backend, to_numpy

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
    penalty = eps * math.exp(
        _softmin(((f[:, None] + g[None, :] - cost) / eps + la[:, None] + lb[None, :]).ravel(), axis=0)
    )
    value = float(a @ f + b @ g - penalty + eps)
    return {"value": value, "x": x, "a": a, "y": y, "b": b, "f": f, "g": g, "iterations": iterations, "n": len(x)}


def reference_value(n: int = 600) -> dict:
    """W_eps on n points, with the discretisation error estimated by halving the grid.

    Returns the value, the estimate |W_n - W_(n/2)| ("error_bound"), the previous difference
    |W_(n/2) - W_(n/4)| (while each halving at least halves the difference, the estimate bounds the
    error left: sum_k r^k d <= d for r <= 1/2), the grid actually used (points and ends) and the
    Sinkhorn iterations. Nothing here is taken on trust: the statements check the grid, the estimate
    against a stated bound, the contraction and the grid's coverage of mu and nu.
    """
    fine, half, quarter = sinkhorn_dual(n), sinkhorn_dual(n // 2), sinkhorn_dual(n // 4)
    return {
        "value": fine["value"],
        "error_bound": abs(fine["value"] - half["value"]),
        "previous_difference": abs(half["value"] - quarter["value"]),
        "values": {str(r["n"]): r["value"] for r in (fine, half, quarter)},
        "n": fine["n"],
        "x_range": (float(fine["x"][0]), float(fine["x"][-1])),
        "y_range": (float(fine["y"][0]), float(fine["y"][-1])),
        "iterations": fine["iterations"],
    }


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
    """U_s(x) = sum_j b_sj exp(-(x - x_sj)^2 / h^2) for S series at once (h = sigma), NumPy or torch.

    exp(-(x - x_j)^2/h^2) = e^(-u^2) e^(-t^2) e^(2ut) with u = (x - c)/h, t = (x_j - c)/h for a box
    centre c; e^(2ut) is expanded to `order` terms. Boxes have width h (|t| <= 1/2) and a point only
    reads boxes with |u| <= cutoff + 1/2. Error per unit of sum_j |b_sj|: the dropped boxes contribute
    at most e^(-cutoff^2); the truncation at most max over |u| <= cutoff + 1/2 of
    e^(-(|u| - 1/2)^2) (|u|)^order / order! e^|u| (``error_bound``).
    """

    def __init__(
        self,
        series: int,
        sigma2: float,
        lo: float,
        hi: float,
        *,
        order: int = 40,
        cutoff: float = 6.5,
        dtype: str = "float64",
        backend: str = "numpy",
        device: str = "cpu",
    ):
        self.h = math.sqrt(sigma2)
        self.lo = lo
        self.order, self.cutoff = order, cutoff
        centres = np.arange(lo + 0.5 * self.h, hi + self.h, self.h)
        n = np.arange(order)
        coef = np.exp(n * math.log(2.0) - gammaln(n + 1))  # 2^n / n!
        self.centres = to_backend(centres.astype(dtype), backend, device)
        self.coef = to_backend(coef.astype(dtype), backend, device)
        self.moments = to_backend(np.zeros((series, len(centres), order), dtype=dtype), backend, device)
        self.rows = to_backend(np.arange(series), backend, device)
        self.xp = namespace(self.moments)
        self.abs_total = self.xp.zeros_like(self.moments[:, 0, 0])  # sum_j |b_sj|, kept on the device

    def error_bound(self) -> np.ndarray:
        """Absolute error bound of an evaluation, per series."""
        u = np.linspace(0, self.cutoff + 0.5, 2001)
        log_term = (
            -(np.maximum(u - 0.5, 0) ** 2) + self.order * np.log(np.maximum(u, 1e-300)) - gammaln(self.order + 1) + u
        )
        truncation = float(np.exp(np.max(log_term)))
        return to_numpy(self.abs_total).astype(np.float64) * (truncation + math.exp(-(self.cutoff**2)))

    def _powers(self, base):
        """[1, b, b^2, ..., b^(order-1)] along a new last axis."""
        xp = self.xp
        stacked = xp.concat(
            [xp.ones_like(base)[..., None], xp.broadcast_to(base[..., None], (*base.shape, self.order - 1))], axis=-1
        )
        return xp.cumulative_prod(stacked, axis=-1)

    def add(self, x, weight) -> None:
        """Add one source per series: x (S,), weight (S,)."""
        xp = self.xp
        box = xp.clip(xp.astype(xp.floor((x - self.lo) / self.h), xp.int64), 0, self.centres.shape[0] - 1)
        t = (x - xp.take(self.centres, box)) / self.h
        self.moments[self.rows, box] += (weight * xp.exp(-t * t))[:, None] * self._powers(t)
        self.abs_total = self.abs_total + xp.abs(weight)

    def __call__(self, x):
        """Evaluate every series at its own points: x (S,) or (S, m) -> same shape."""
        xp = self.xp
        squeeze = x.ndim == 1
        points = x[:, None, None] if squeeze else x[:, :, None]
        u = (points - self.centres[None, None, :]) / self.h  # (S, m, B)
        near = xp.abs(u) <= self.cutoff + 0.5
        poly = xp.sum(self._powers(u) * self.coef * self.moments[:, None, :, :], axis=-1)
        value = xp.sum(xp.where(near, xp.exp(-u * u) * poly, xp.zeros_like(u)), axis=-1)
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
        return f"proposed sigma2={self.sigma2:g} rho={self.rho:g} C={self.C:g}" + (
            " alpha0=-c(x1,y1)" if self.alpha_init == "cost" else ""
        )


def _weight(config: SgdConfig, z, floor: float):
    """exp(z/eps) (baseline) or sigma_rho(z/eps) = e^s / (1 + rho e^s) (proposed), in z's dtype."""
    xp = namespace(z)
    s = z / EPS
    if config.method == "baseline":
        return xp.exp(s)
    # e^s / (1 + rho e^s) = sigmoid(s + ln rho) / rho, never overflowing.
    return (1.0 / (1.0 + xp.exp(-xp.clip(s + math.log(config.rho), floor, None)))) / config.rho


def kernel_sgd(
    config: SgdConfig,
    seeds: list[int],
    iterations: int,
    checkpoints: tuple[int, ...],
    *,
    dtype: str = "float64",
    backend: str = "numpy",
    device: str = "cpu",
    record_steps: bool = False,
) -> dict:
    """Run SGD for every seed at once; keep the v-moments at the checkpoints and the overflow
    diagnostics: the largest exponent argument z/eps reached and the first non-finite iteration.
    Samples come from NumPy generators keyed by seed, whatever the backend."""
    series = len(seeds)
    xs_np = np.stack([sample_mu(np.random.default_rng([s, 1]), (iterations,)) for s in seeds]).astype(dtype)
    ys_np = np.stack([sample_nu(np.random.default_rng([s, 2]), (iterations,)) for s in seeds]).astype(dtype)
    xs, ys = to_backend(xs_np, backend, device), to_backend(ys_np, backend, device)
    xp = namespace(xs)
    u_sum = GaussSum(series, config.sigma2, -2.0, 6.5, dtype=dtype, backend=backend, device=device)
    v_sum = GaussSum(series, config.sigma2, -2.0, 6.5, dtype=dtype, backend=backend, device=device)
    alpha = xp.zeros_like(xs[:, 0])
    if config.method == "proposed" and config.alpha_init == "cost":
        alpha = -((xs[:, 0] - ys[:, 0]) ** 2)
    floor = -80.0 if dtype == "float32" else -700.0
    max_arg = xp.full_like(alpha, -xp.inf)
    first_nonfinite = np.full(series, -1, dtype=np.int64)
    nonfinite_seen = xp.zeros(series, dtype=xp.int64, device=getattr(xs, "device", None))
    snapshots = {}
    steps = xp.zeros_like(xs) if record_steps else None
    with np.errstate(over="ignore", invalid="ignore"):
        for i in range(1, iterations + 1):
            x, y = xs[:, i - 1], ys[:, i - 1]
            z = u_sum(x) + v_sum(y) + alpha - (x - y) ** 2
            max_arg = xp.maximum(max_arg, xp.where(xp.isnan(z), max_arg, z / EPS))
            step = (config.C / math.sqrt(i)) * (1.0 - _weight(config, z, floor))
            # first non-finite iteration per seed, without a device sync per iteration
            nonfinite_seen = xp.where((nonfinite_seen == 0) & ~xp.isfinite(step), i, nonfinite_seen)
            u_sum.add(x, step)
            v_sum.add(y, step)
            if record_steps:
                steps[:, i - 1] = step
            if config.method == "proposed":
                alpha = alpha + step
            if i in checkpoints:
                snapshots[i] = {"v_moments": to_numpy(v_sum.moments).copy()}
    seen = to_numpy(nonfinite_seen)
    first_nonfinite[seen > 0] = seen[seen > 0]
    return {
        "config": config,
        "snapshots": snapshots,
        "v_sum": v_sum,
        "u_sum": u_sum,
        "max_exponent_argument": to_numpy(max_arg).astype(np.float64),
        "first_nonfinite_iteration": first_nonfinite,
        "samples": (xs_np, ys_np),
        "alpha": to_numpy(alpha),
        "steps": to_numpy(steps) if record_steps else None,
    }


def semi_dual_value(v_sum: GaussSum, moments: np.ndarray, n: int = 400) -> np.ndarray:
    """S(v) per series for v given by GaussSum moments, by quadrature of mu and nu (log-domain, float64)."""
    x, a, y, b = quadrature(n)
    series = moments.shape[0]
    v_eval = GaussSum(
        series,
        v_sum.h**2,
        v_sum.lo,
        v_sum.lo + v_sum.h * (moments.shape[1] - 1),
        order=v_sum.order,
        cutoff=v_sum.cutoff,
    )
    v_eval.moments = np.asarray(moments, dtype=np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        v = v_eval(np.broadcast_to(y, (series, n)).copy())  # (S, n)
        inner = (v[:, None, :] - (x[None, :, None] - y[None, None, :]) ** 2) / EPS + np.log(b)[None, None, :]
        top = np.max(inner, axis=2, keepdims=True)
        soft = top[..., 0] + np.log(np.sum(np.exp(inner - top), axis=2))
        return -EPS * (soft @ a) + v @ b
