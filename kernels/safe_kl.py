"""Paper L kernels: the Safe-KL generator, its conjugate, LogSumExp F, its Safe-KL approximation F_rho
through the one-dimensional dual, the optimal shift and density, and CVaR two ways.

Instances are batched as padded arrays: phi (B, n), mu (B, n) with zero weight on padding (padding
phi repeats a real value of the row, so it is finite), rho (B,). float64 throughout. mu is a
probability in the paper's definitions; any finite positive measure of mass M > rho works (the
counting measure gives the LogSumExp form ln sum_i e^(phi_i) of Corollary 2.5).

F_rho(phi) = min_alpha { alpha - 1 + (1/rho) E_mu ln(1 + rho e^(phi - alpha)) }. With beta = alpha - ln rho
the stationarity condition E_mu w_rho(phi - alpha) = 1 reads E_mu sigmoid(phi - beta) = rho: a monotone
root in beta, bracketed by [min phi, max phi] - logit(rho), found by safeguarded Newton in log-space
(sigmoid and softplus never overflow, whatever the spread of phi).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from kernels.backend import namespace

# ---------------------------------------------------------------------------------------------
# Generator f_rho and its conjugate


def f_rho(t: Any, rho: Any) -> Any:
    """t ln t + ((1 - rho t)/rho) ln(1 - rho t) + 1 on [0, 1/rho] (0 ln 0 = 0), +inf beyond."""
    xp = namespace(t)
    t = xp.asarray(t)
    inside = (t >= 0) & (t <= 1.0 / rho)
    tt = xp.where(inside, t, xp.zeros_like(t))
    rest = 1.0 - rho * tt
    a = xp.where(tt > 0, tt * xp.log(xp.where(tt > 0, tt, xp.ones_like(tt))), xp.zeros_like(tt))
    b = xp.where(rest > 0, rest * xp.log(xp.where(rest > 0, rest, xp.ones_like(rest))), xp.zeros_like(rest)) / rho
    return xp.where(inside, a + b + 1.0, xp.full_like(tt, xp.inf))


def f_rho_second(t: Any, rho: Any) -> Any:
    """f_rho''(t) = 1/t + rho/(1 - rho t)."""
    return 1.0 / t + rho / (1.0 - rho * t)


def f_rho_conjugate(s: Any, rho: Any) -> Any:
    """f_rho*(s) = (1/rho) ln(1 + rho e^s) - 1 (Lemma 2.3: the rescaled SoftPlus)."""
    return np.logaddexp(0.0, s + np.log(rho)) / rho - 1.0


def f_rho_conjugate_prime(s: Any, rho: Any) -> Any:
    """(f_rho*)'(s) = w_rho(s) = e^s / (1 + rho e^s) = sigmoid(s + ln rho) / rho."""
    return _sigmoid(s + np.log(rho)) / rho


def f_rho_conjugate_second(s: Any, rho: Any) -> Any:
    """(f_rho*)''(s) = e^s / (1 + rho e^s)^2."""
    p = _sigmoid(s + np.log(rho))
    return p * (1.0 - p) / rho


def _sigmoid(x: Any) -> Any:
    return np.exp(-np.logaddexp(0.0, -x))


# ---------------------------------------------------------------------------------------------
# LogSumExp and its Safe-KL approximation


def logsumexp_weighted(phi: Any, mu: Any) -> Any:
    """F(phi) = ln E_mu e^phi per instance (B,), overflow-free (NumPy or torch)."""
    xp = namespace(phi, mu)
    top = xp.max(xp.where(mu > 0, phi, xp.full_like(phi, -xp.inf)), axis=-1, keepdims=True)
    return top[..., 0] + xp.log(xp.sum(mu * xp.exp(phi - top), axis=-1))


def _logit(p: Any) -> Any:
    xp = namespace(p)
    return xp.log(p) - xp.log1p(-p)


SOLVE_BETA_TOL = 2e-15  # solve_beta stops once a step, or the bracket, is within this times max(1, |beta|)
SOLVE_BETA_RESIDUAL_TOL = 1e-15  # |ln E_mu sigmoid(phi - beta) - ln rho| at which beta is a root to rounding


def _solve_beta_padded(phi: Any, mu: Any, rho: Any, lo: Any, hi: Any, iterations: int, tol: float) -> Any:
    """The same safeguarded Newton on the padded arrays, for any array-API backend (torch, CUDA)."""
    xp = namespace(phi, mu)
    beta = xp.asarray(hi, copy=True)
    log_rho = xp.log(rho)
    last = hi - lo  # the previous step's length: a Newton step must at least halve it (else bisection)
    for _ in range(iterations):
        e = xp.exp(xp.clip(beta[:, None] - phi, max=700.0))
        p = 1.0 / (1.0 + e)
        weighted = mu * p
        total = xp.sum(weighted, axis=-1)
        residual = xp.log(total) - log_rho
        newton = beta + residual * total / xp.sum(weighted * (1.0 - p), axis=-1)
        lo = xp.where(residual >= 0, beta, lo)
        hi = xp.where(residual <= 0, beta, hi)
        inside = xp.isfinite(newton) & (newton >= lo) & (newton <= hi) & (xp.abs(newton - beta) <= 0.5 * last)
        # A converged point is kept: its residual was evaluated, the step after it never is.
        step = xp.where(xp.abs(residual) <= SOLVE_BETA_RESIDUAL_TOL, beta, xp.where(inside, newton, 0.5 * (lo + hi)))
        last = xp.abs(step - beta)
        scale = xp.maximum(xp.abs(step), xp.ones_like(step))
        going = (xp.abs(step - beta) > tol * scale) & (hi - lo > tol * scale)
        beta = step
        if not bool(xp.any(going)):
            break
    return beta


def solve_beta(
    phi: np.ndarray, mu: np.ndarray, rho: np.ndarray, *, iterations: int = 100, tol: float = SOLVE_BETA_TOL
) -> np.ndarray:
    """Root beta of E_mu sigmoid(phi - beta) = rho for every instance (B,).

    Newton on the log-residual ln E_mu sigmoid(phi - beta) - ln rho (nearly linear in beta in the
    tail, so a few steps suffice from beta0 = F - ln rho), kept inside a bracket that every step
    tightens; a step leaving the bracket, or not at most half as long as the step before (Newton
    can oscillate between the bracket's ends on a wide, many-atom instance), is replaced by bisection
    (the safeguard of rtsafe, Numerical Recipes 9.4). The atoms are processed ragged
    (padding costs nothing) and a converged instance stops costing anything.
    """
    if not isinstance(phi, np.ndarray):  # torch (CPU or CUDA): padded arrays
        xp = namespace(phi, mu)
        mass = xp.sum(mu, axis=-1)
        lo = xp.min(xp.where(mu > 0, phi, xp.full_like(phi, xp.inf)), axis=-1) - _logit(rho / mass)
        hi = logsumexp_weighted(phi, mu) - xp.log(rho)
        return _solve_beta_padded(phi, mu, rho, lo, hi, iterations, tol)
    phi, mu = np.asarray(phi, dtype=np.float64), np.asarray(mu, dtype=np.float64)
    rho = np.asarray(rho, dtype=np.float64).reshape(-1)
    real = mu > 0
    mass = np.sum(mu, axis=-1)  # 1 for a probability; n for the counting measure (needs rho < mass)
    # sum mu sigmoid(phi - beta) >= mass sigmoid(min phi - beta) >= rho at lo; sigmoid(x) < e^x gives
    # sum mu sigmoid(phi - beta) < e^(F - beta) = rho at hi.
    lo = np.min(np.where(real, phi, np.inf), axis=-1) - _logit(rho / mass)
    hi = logsumexp_weighted(phi, mu) - np.log(rho)
    beta = hi.copy()
    last = hi - lo
    log_rho = np.log(rho)
    rows = np.arange(len(rho))
    atoms_phi, atoms_mu, atoms_row = phi[real], mu[real], np.nonzero(real)[0]
    for _ in range(iterations):
        counts = np.bincount(atoms_row, minlength=len(rho))[rows]
        starts = np.concatenate(([0], np.cumsum(counts)[:-1]))
        b = beta[rows]
        with np.errstate(over="ignore"):
            e = np.exp(np.minimum(np.repeat(b, counts) - atoms_phi, 700.0))
        p = 1.0 / (1.0 + e)  # sigmoid(phi - beta) without overflow
        weighted = atoms_mu * p
        total = np.add.reduceat(weighted, starts)
        curvature = np.add.reduceat(weighted * (1.0 - p), starts)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            residual = np.log(total) - log_rho[rows]
            newton = b + residual * total / curvature
        lo[rows] = np.where(residual >= 0, b, lo[rows])
        hi[rows] = np.where(residual <= 0, b, hi[rows])
        inside = (
            np.isfinite(newton) & (newton >= lo[rows]) & (newton <= hi[rows]) & (np.abs(newton - b) <= 0.5 * last[rows])
        )
        step = np.where(inside, newton, 0.5 * (lo[rows] + hi[rows]))
        # A converged point is kept: its residual was evaluated, the step after it never is (near the root
        # the halving rule can refuse Newton's rounding-sized step, and the bisection that replaces it jumps
        # to the middle of a stale bracket: pinned in kernels' golden safe_kl_stale_bisection.json).
        step = np.where(np.abs(residual) <= SOLVE_BETA_RESIDUAL_TOL, b, step)
        last[rows] = np.abs(step - b)
        beta[rows] = step
        scale = np.maximum(1.0, np.abs(step))
        going = (np.abs(step - b) > tol * scale) & (hi[rows] - lo[rows] > tol * scale)
        if not going.all():
            rows = rows[going]
            keep = np.repeat(going, counts)
            atoms_phi, atoms_mu, atoms_row = atoms_phi[keep], atoms_mu[keep], atoms_row[keep]
        if rows.size == 0:
            break
    return beta


def root_resolution(phi: np.ndarray, mu: np.ndarray, rho: np.ndarray, beta: np.ndarray) -> np.ndarray:
    """How far E_mu sigmoid(phi - beta) may lie from rho where solve_beta stopped (B,), from its two stopping
    rules: a step within SOLVE_BETA_TOL max(1, |beta|) (plus a few ulps of beta in beta - phi) times the slope
    d mass / d beta = E_mu sigma (1 - sigma), or the log-residual within SOLVE_BETA_RESIDUAL_TOL (each log
    rounded to an ulp of |ln rho|); plus the rounding of two sums over the atoms (the solver's and a check's)."""
    eps = float(np.finfo(np.float64).eps)
    rho = np.asarray(rho, dtype=np.float64).reshape(-1)
    sigma = _sigmoid(phi - beta[:, None])
    step_rule = np.sum(mu * sigma * (1 - sigma), axis=1) * (
        SOLVE_BETA_TOL * np.maximum(1.0, np.abs(beta)) + 4 * np.spacing(np.abs(beta))
    )
    residual_rule = (SOLVE_BETA_RESIDUAL_TOL + 2 * eps * (1 + np.abs(np.log(rho)))) * rho
    return np.maximum(step_rule, residual_rule) + 2 * (np.sum(mu > 0, axis=1) + 2) * eps * rho


def optimal_shift(phi: Any, mu: Any, rho: Any) -> Any:
    """alpha* = beta + ln rho (B,)."""
    xp = namespace(phi, mu)
    rho = _as_rho(phi, rho)
    return solve_beta(phi, mu, rho) + xp.log(rho)


def _as_rho(phi: Any, rho: Any) -> Any:
    if isinstance(phi, np.ndarray):
        return np.asarray(rho, dtype=np.float64).reshape(-1)
    return rho


def f_rho_value(phi: Any, mu: Any, rho: Any, *, beta: Any = None) -> Any:
    """F_rho(phi) = alpha* - 1 + (1/rho) E_mu softplus(phi - beta) (B,)."""
    xp = namespace(phi, mu)
    rho = _as_rho(phi, rho)
    beta = solve_beta(phi, mu, rho) if beta is None else beta
    softplus = xp.logaddexp(xp.zeros_like(phi), phi - beta[:, None])
    return beta + xp.log(rho) - 1.0 + xp.sum(mu * softplus, axis=-1) / rho


def optimal_density(phi: np.ndarray, mu: np.ndarray, rho: np.ndarray) -> np.ndarray:
    """dnu*/dmu = w_rho(phi - alpha*) = sigmoid(phi - beta) / rho, capped below 1/rho (B, n)."""
    rho = np.asarray(rho, dtype=np.float64).reshape(-1)
    return _sigmoid(phi - solve_beta(phi, mu, rho)[:, None]) / rho[:, None]


def primal_objective(phi: np.ndarray, mu: np.ndarray, rho: np.ndarray, density: np.ndarray) -> np.ndarray:
    """E_nu phi - D_rho(nu, mu) for nu = density * mu (B,)."""
    rho = np.asarray(rho, dtype=np.float64).reshape(-1)
    return np.sum(mu * (density * phi - f_rho(density, rho[:, None])), axis=-1)


# ---------------------------------------------------------------------------------------------
# CVaR (upper tail, level rho)


def _sorted_desc(phi: np.ndarray, mu: np.ndarray):
    order = np.argsort(-phi, axis=-1, kind="stable")
    return np.take_along_axis(phi, order, axis=-1), np.take_along_axis(mu, order, axis=-1)


def _exclusive_cumsum(x: np.ndarray) -> np.ndarray:
    """Sum of the entries strictly before each position (not cumsum - x, which cancels)."""
    return np.concatenate([np.zeros_like(x[..., :1]), np.cumsum(x[..., :-1], axis=-1)], axis=-1)


def cvar_variational(phi: np.ndarray, mu: np.ndarray, rho: np.ndarray) -> np.ndarray:
    """min_b { b + (1/rho) E_mu (phi - b)_+ }, minimised exactly over the kinks b = phi_j (B,)."""
    rho = np.asarray(rho, dtype=np.float64).reshape(-1, 1)
    values, weights = _sorted_desc(phi, mu)
    above_w = _exclusive_cumsum(weights)  # weight strictly before j in the order
    above_s = _exclusive_cumsum(weights * values)
    objective = values * (1.0 - above_w / rho) + above_s / rho  # b = values_j, by running sums
    objective = np.where(weights > 0, objective, np.inf)
    best = np.argmin(objective, axis=-1)
    # The running sums locate the minimising kink; the value is then taken directly at that kink
    # and its neighbours, b + (1/rho) E_mu (phi - b)_+, so no cancellation is amplified by 1/rho.
    last = values.shape[-1] - 1
    direct = []
    for offset in (-1, 0, 1):
        b = np.take_along_axis(values, np.clip(best + offset, 0, last)[:, None], axis=-1)
        direct.append(b[:, 0] + np.sum(mu * np.maximum(phi - b, 0.0), axis=-1) / rho[:, 0])
    return np.min(np.stack(direct), axis=0)


def cvar_tail_average(phi: Any, mu: Any, rho: Any) -> Any:
    """(1/rho) x (the integral of phi over the top rho of mu's mass, splitting the boundary atom) (B,).

    NumPy or torch (CPU or CUDA): a stable descending sort and an exclusive running sum of the weights.
    On torch the running sum is a product with a strictly triangular matrix (O(n^2) per instance, for
    the device sweep's few atoms): torch.cumsum has no deterministic CUDA kernel, and the gpu tier runs
    with deterministic algorithms only; the CPU takes the same path, so smoke tests it."""
    xp = namespace(phi, mu)
    rho = _as_rho(phi, rho)
    order = xp.argsort(-phi, axis=-1, stable=True)
    values, weights = xp.take_along_axis(phi, order, axis=-1), xp.take_along_axis(mu, order, axis=-1)
    if isinstance(phi, np.ndarray):
        before = xp.cumulative_sum(weights, axis=-1, include_initial=True)[..., :-1]  # weight strictly before
    else:
        index = xp.arange(weights.shape[-1], device=weights.device)
        before = weights @ xp.astype(index[:, None] < index[None, :], weights.dtype)  # weight strictly before
    taken = xp.minimum(xp.maximum(rho[:, None] - before, xp.zeros_like(before)), weights)
    return xp.sum(taken * values, axis=-1) / rho
