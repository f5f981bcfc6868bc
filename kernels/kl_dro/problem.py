"""KL-DRO (claim L5): the problem (California Housing's standardised design and OLS start), the objective, the
estimators' per-sample coefficients (18) and (19), and PyTorch's Nesterov update. Conventions: kernels.kl_dro."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from kernels.backend import namespace

LAMBDA = 1.0
MOMENTUM = 0.9
EPOCHS = 50
ETAS = (1e-8, 1e-7, 1e-6, 1e-5, 1e-4)
BATCHES = (10, 100, 1000)
RHOS = (1e-4, 1e-3, 1e-2, 1e-1, 0.5, 0.9)


# ---------------------------------------------------------------------------------------------
# Problem


@dataclass(frozen=True)
class Problem:
    X: np.ndarray  # (n, d): standardised features, intercept column last
    y: np.ndarray  # (n,)
    theta0: np.ndarray  # (d,) ordinary least squares
    lam: float = LAMBDA

    @property
    def n(self) -> int:
        return self.X.shape[0]


def design(data: np.ndarray, target: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Standardised features (population std) with an intercept column last; target as float64."""
    data = np.asarray(data, dtype=np.float64)
    scaled = (data - data.mean(axis=0)) / data.std(axis=0)
    return np.column_stack([scaled, np.ones(len(scaled))]), np.asarray(target, dtype=np.float64)


def least_squares(X: np.ndarray, y: np.ndarray) -> np.ndarray:
    """argmin ||X theta - y||^2 by Householder QR (float64)."""
    q, r = np.linalg.qr(X)
    return np.linalg.solve(r, q.T @ y)


def problem_from(data: np.ndarray, target: np.ndarray, lam: float = LAMBDA) -> Problem:
    X, y = design(data, target)
    return Problem(X, y, least_squares(X, y), lam)


# ---------------------------------------------------------------------------------------------
# Objective and estimator coefficients


def fast_namespace(*arrays: Any) -> Any:
    """NumPy itself for NumPy arrays (its array-API names, without the compat wrappers' per-call cost,
    which dominates the small-batch loop), else the array-api-compat namespace."""
    return np if all(isinstance(a, (np.ndarray, np.generic)) for a in arrays) else namespace(*arrays)


def objective(theta: Any, X: Any, y: Any, lam: float = LAMBDA, loss_scale: Any = None) -> Any:
    """L(theta) = lam ln mean_i exp(l_i / lam) for theta (..., d) -> (...), overflow-free (max shift),
    with l_i = (x_i theta - y_i)^2, times `loss_scale` where given (an array broadcasting against
    theta.shape[:-1]: one scale per run). A non-finite theta gives a non-finite value."""
    xp = fast_namespace(theta, X)
    flat = xp.reshape(theta, (-1, theta.shape[-1]))
    scale = None if loss_scale is None else xp.reshape(xp.broadcast_to(loss_scale, theta.shape[:-1]), (-1, 1))
    # NumPy: a few runs at a time, so the (runs, n) temporaries stay in cache (6x faster); torch: at once
    rows = max(1, (1 << 17) // X.shape[0]) if xp is np else flat.shape[0]
    parts = [
        _objective_rows(flat[i : i + rows], X, y, lam, xp, None if scale is None else scale[i : i + rows])
        for i in range(0, max(flat.shape[0], 1), rows)
    ]
    return xp.reshape(xp.concat(parts), theta.shape[:-1])


def _objective_rows(flat: Any, X: Any, y: Any, lam: float, xp: Any, scale: Any = None) -> Any:
    # Batch-invariant: the residuals as a fixed-order sum of elementwise (exactly rounded) products, not a
    # matmul, whose blocking makes a row's float32 value depend on its place in the batch (44.0180626 vs
    # 44.0180779 for one theta), enough to flip the rule L_final <= L_0. The reductions below are per row.
    residual = -y
    for j in range(flat.shape[-1]):
        residual = residual + flat[:, j : j + 1] * X[:, j]
    squared = residual**2
    scaled = (squared if scale is None else scale * squared) / lam
    top = xp.max(scaled, axis=-1, keepdims=True)
    safe_top = xp.where(xp.isfinite(top), top, xp.zeros_like(top))  # keeps inf/nan out of the shift
    total = xp.sum(xp.exp(scaled - safe_top), axis=-1)
    return lam * (safe_top[:, 0] + xp.log(total / X.shape[0]))


def baseline_weights(losses: Any, lam: float = LAMBDA) -> Any:
    """Estimator (18)'s coefficients: p = softmax(l_B / lam) over the batch (last axis), held fixed."""
    xp = fast_namespace(losses)
    scaled = losses / lam
    e = xp.exp(scaled - xp.max(scaled, axis=-1, keepdims=True))
    p = e / xp.sum(e, axis=-1, keepdims=True)
    return p


def proposed_weights(losses: Any, alpha: Any, log_rho: Any, lam: float = LAMBDA) -> Any:
    """Estimator (19)'s per-sample weights w_i = sigmoid((l_i - alpha)/lam + ln rho) / rho <= 1/rho
    (alpha and log_rho broadcast against losses). The gradient in theta is mean_B w_i grad l_i."""
    xp = fast_namespace(losses)
    shifted = (losses - alpha) / lam + log_rho
    with np.errstate(over="ignore"):  # sigmoid(s)/rho = 1/((1 + e^-s) rho); e^-s = inf gives the exact limit 0
        return 1.0 / ((1.0 + xp.exp(-shifted)) * xp.exp(log_rho))


def nesterov_update(param: Any, buf: Any, grad: Any, lr: Any, momentum: float = MOMENTUM) -> tuple[Any, Any]:
    """One step of torch.optim.SGD(momentum, nesterov=True, dampening=0). buf starts at zero, so the
    first step's buf is grad exactly, as PyTorch's clone."""
    buf = momentum * buf + grad
    step = grad + momentum * buf
    return param - lr * step, buf
