"""Paper L, Section 3.2 (claim L5): KL-regularised DRO on California Housing, linear model, squared loss.

Conventions (CLAIMS.md, L5, and the authors' released `kl-dro/` code):

* Design: the eight features standardised on the full data (population variance, as scikit-learn's
  StandardScaler), plus an intercept column (last); theta_0 = ordinary least squares on that design.
* Loss l_i(theta) = (x_i . theta - y_i)^2, not halved (as released); lambda = 1. A configuration may
  scale it (RunConfig.loss_scale: 0.5 is the halved convention r^2 / 2, with its objective, weights and
  gradients all from the scaled loss), so both conventions run in one program.
* Objective L(theta) = lambda ln((1/n) sum_i exp(l_i / lambda)) on the full data, shifted by its
  maximum so it never overflows while theta is finite.
* Baseline estimator (18): gradient sum_B p_i grad l_i with p = softmax(l_B / lambda) held fixed.
* Proposed estimator (19): alpha + (lambda / rho) mean_B softplus((l_i - alpha) / lambda + ln rho) over
  (theta, alpha), alpha_0 = 0; its gradient is mean_B w_i grad l_i with the per-sample weight
  w_i = sigmoid((l_i - alpha) / lambda + ln rho) / rho = e^s / (1 + rho e^s) <= 1 / rho.
* SGD with Nesterov momentum 0.9, PyTorch's semantics (no dampening): buf <- 0.9 buf + g (the first
  buf is g), p <- p - eta (g + 0.9 buf).
* Minibatches: every epoch a fresh permutation of the n rows per stream, cut into consecutive batches;
  the last, partial batch of an epoch is kept (PyTorch's DataLoader default, drop_last=False, as the
  released code): 20640 rows give 2064 batches of 10; 206 of 100 and one of 40; 20 of 1000 and one
  of 640. Estimators average over the batch actually drawn.

Runs are batched as (streams S, runs per stream R, parameters d): every run of one stream (a seed)
sees the same minibatches, as in the released code where the seed alone fixes the loader; all S x R
runs of one batch size advance together, one Python loop over steps. Gradients are closed-form
(2 c_i r_i x_i with the estimator's coefficients c), so no autograd in the loop.
"""

from __future__ import annotations

import contextlib
import math
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from kernels.backend import namespace, to_backend, to_numpy, torch_cpu_single_thread
from kernels.seeding import keyed_rng

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


def _ns(*arrays: Any) -> Any:
    """NumPy itself for NumPy arrays (its array-API names, without the compat wrappers' per-call cost,
    which dominates the small-batch loop), else the array-api-compat namespace."""
    return np if all(isinstance(a, (np.ndarray, np.generic)) for a in arrays) else namespace(*arrays)


def objective(theta: Any, X: Any, y: Any, lam: float = LAMBDA, loss_scale: Any = None) -> Any:
    """L(theta) = lam ln mean_i exp(l_i / lam) for theta (..., d) -> (...), overflow-free (max shift),
    with l_i = (x_i theta - y_i)^2, times `loss_scale` where given (an array broadcasting against
    theta.shape[:-1]: one scale per run). A non-finite theta gives a non-finite value."""
    xp = _ns(theta, X)
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
    xp = _ns(losses)
    scaled = losses / lam
    e = xp.exp(scaled - xp.max(scaled, axis=-1, keepdims=True))
    p = e / xp.sum(e, axis=-1, keepdims=True)
    return p


def proposed_weights(losses: Any, alpha: Any, log_rho: Any, lam: float = LAMBDA) -> Any:
    """Estimator (19)'s per-sample weights w_i = sigmoid((l_i - alpha)/lam + ln rho) / rho <= 1/rho
    (alpha and log_rho broadcast against losses). The gradient in theta is mean_B w_i grad l_i."""
    xp = _ns(losses)
    shifted = (losses - alpha) / lam + log_rho
    with np.errstate(over="ignore"):  # sigmoid(s)/rho = 1/((1 + e^-s) rho); e^-s = inf gives the exact limit 0
        return 1.0 / ((1.0 + xp.exp(-shifted)) * xp.exp(log_rho))


def nesterov_update(param: Any, buf: Any, grad: Any, lr: Any, momentum: float = MOMENTUM) -> tuple[Any, Any]:
    """One step of torch.optim.SGD(momentum, nesterov=True, dampening=0). buf starts at zero, so the
    first step's buf is grad exactly, as PyTorch's clone."""
    buf = momentum * buf + grad
    step = grad + momentum * buf
    return param - lr * step, buf


# ---------------------------------------------------------------------------------------------
# Minibatch streams


class KeyedStreams:
    """One stream per key: epoch e's permutation comes from keyed_rng(f"{key}|epoch={e}")."""

    def __init__(self, keys: Sequence[str]) -> None:
        self.keys = list(keys)

    def __len__(self) -> int:
        return len(self.keys)

    def permutations(self, epoch: int, n: int) -> np.ndarray:
        return np.stack([keyed_rng(f"{k}|epoch={epoch}").permutation(n) for k in self.keys])


class ReleasedStreams:
    """The permutations the released code draws for torch seeds: torch.manual_seed(seed); nn.Linear(8, 1)
    (its initialisation consumes the generator); then per epoch the DataLoader iterator's base seed and
    RandomSampler's seed, and torch.randperm under that seed. Replayed on private generators."""

    def __init__(self, seeds: Sequence[int], features: int = 8, epochs: int = EPOCHS) -> None:
        import torch

        self.seeds = list(seeds)
        self.sampler_seeds = np.zeros((len(self.seeds), epochs), dtype=np.int64)
        bound = 1.0 / math.sqrt(features)  # kaiming_uniform(a=sqrt 5) and the bias share this bound
        for i, seed in enumerate(self.seeds):
            g = torch.Generator().manual_seed(int(seed))
            torch.empty(1, features).uniform_(-bound, bound, generator=g)  # weight
            torch.empty(1).uniform_(-bound, bound, generator=g)  # bias
            for e in range(epochs):
                torch.empty((), dtype=torch.int64).random_(generator=g)  # _BaseDataLoaderIter._base_seed
                self.sampler_seeds[i, e] = int(torch.empty((), dtype=torch.int64).random_(generator=g).item())

    def __len__(self) -> int:
        return len(self.seeds)

    def permutations(self, epoch: int, n: int) -> np.ndarray:
        import torch

        return np.stack(
            [
                torch.randperm(n, generator=torch.Generator().manual_seed(int(s))).numpy()
                for s in self.sampler_seeds[:, epoch]
            ]
        )


# ---------------------------------------------------------------------------------------------
# Batched SGD


@dataclass(frozen=True)
class RunConfig:
    eta: float
    rho: float | None  # None: the baseline estimator (18)
    loss_scale: float = 1.0  # l_i = loss_scale (x_i theta - y_i)^2; 1 as released, 0.5 the halved convention

    @property
    def name(self) -> str:
        name = f"baseline eta={self.eta:g}" if self.rho is None else f"proposed rho={self.rho:g} eta={self.eta:g}"
        return name if self.loss_scale == 1.0 else f"{name} loss={self.loss_scale:g}r^2"


def grid_configs(etas: Sequence[float] = ETAS, rhos: Sequence[float] = RHOS) -> list[RunConfig]:
    """The logbook's per-batch-size grid: baseline and every rho, at every eta (35 configurations)."""
    return [RunConfig(eta, None) for eta in etas] + [RunConfig(eta, rho) for rho in rhos for eta in etas]


def batch_slices(n: int, batch: int) -> list[slice]:
    """Consecutive batches of one epoch; the last, partial one is kept (drop_last=False)."""
    return [slice(start, min(start + batch, n)) for start in range(0, n, batch)]


def sgd_runs(
    problem: Problem,
    batch: int,
    configs: Sequence[RunConfig],
    streams: KeyedStreams | ReleasedStreams,
    epochs: int = EPOCHS,
    *,
    record_every: int = 5,
    dtype: str = "float64",
    backend: str = "numpy",
    device: str = "cpu",
    theta0: np.ndarray | None = None,
    checkpoint: Any = None,
    max_steps: int | None = None,
    trace: list | None = None,
) -> dict:
    """Run every configuration on every stream for `epochs` epochs, all at once.

    Returns numpy arrays indexed (stream, configuration[, record]): `objective` L at epochs 0,
    record_every, ..., epochs (in `dtype`, from the data in `dtype`), `objective64` (the same theta
    evaluated in float64), `finite` (theta and alpha finite at the end), `first_nonfinite_epoch` (-1 if
    never), `theta`, `alpha` (final), `peak_loss` (the largest
    batch loss any step saw: where a naive exp(l / lambda) would have overflowed), and `L0` (L(theta_0)
    in float64 for l = r^2; a configuration's own start, at its loss scale and in the run's precision, is
    its `objective[..., 0]`). A configuration non-finite on every stream is
    dropped from the program at the next epoch end (it can never become finite again).
    `checkpoint` (pytest_claims.store.Checkpoint) makes the run resumable at epoch ends.
    `max_steps` stops after that many steps in total (reference tests; then records only epoch 0 and
    the final state). `trace` (reference tests, with `max_steps`) receives the state after every step:
    (theta, alpha, theta's and alpha's momentum buffers) as float64 arrays in the caller's order.
    """
    configs = list(configs)
    order = sorted(range(len(configs)), key=lambda c: configs[c].rho is not None)  # baselines first
    unorder = np.argsort(order)  # back to the caller's configuration order
    S, C, n = len(streams), len(configs), problem.n
    start = problem.theta0 if theta0 is None else theta0
    X_np = problem.X.astype(dtype)
    X, y = to_backend(X_np, backend, device), to_backend(problem.y.astype(dtype), backend, device)
    X64, y64 = to_backend(problem.X, backend, device), to_backend(problem.y, backend, device)
    xp = _ns(X)
    lam = problem.lam
    program = _Program.of([configs[c] for c in order], batch, dtype, backend, device)
    records = list(range(0, epochs + 1, record_every)) if max_steps is None else [0]
    if records[-1] != epochs and max_steps is None:
        records.append(epochs)
    # of l = r^2
    L0 = float(to_numpy(objective(to_backend(problem.theta0[None, :], backend, device), X64, y64, lam))[0])

    state = checkpoint.load() if checkpoint is not None else None
    if state is None:
        state = _initial_state(start.astype(dtype), S, C, len(records))
    active = state["active"]
    full_theta, full_alpha = state["theta"], state["alpha"]
    theta, alpha = (
        to_backend(full_theta[:, active], backend, device),
        to_backend(full_alpha[:, active], backend, device),
    )
    buf_theta, buf_alpha = (
        to_backend(state["buf_theta"][:, active], backend, device),
        to_backend(state["buf_alpha"][:, active], backend, device),
    )
    peak = to_backend(state["peak_loss"][:, active].astype(dtype), backend, device)  # largest batch loss so far

    def record(epoch: int) -> None:
        if epoch in records:
            k = records.index(epoch)
            scale = None if loss_scale is None else loss_scale[..., 0]
            state["objective"][:, active, k] = to_numpy(objective(theta, X, y, lam, scale)).astype(np.float64)
            state["objective64"][:, active, k] = (
                state["objective"][:, active, k]
                if dtype == "float64"
                else to_numpy(
                    objective(
                        xp.astype(theta, xp.float64),
                        X64,
                        y64,
                        lam,
                        None if scale is None else xp.astype(scale, xp.float64),
                    )
                )
            )

    n_base, lr_theta, lr_alpha, log_rho, loss_scale = _step_sizes(program, active)
    first_epoch = state["step"]
    if first_epoch == 0:
        record(0)
    slices = batch_slices(n, batch)
    steps_done = first_epoch * len(slices)
    # running elementwise maximum of the batch losses (reduced over the batch at epoch ends: cheaper)
    peak_b = xp.zeros_like(theta[:, :, :1]) + xp.reshape(peak, (*peak.shape, 1))
    # the per-step arrays are tiny: extra threads only spin (and fight -n workers for the cores)
    single_thread = _blas_single_thread() if xp is np else torch_cpu_single_thread("torch", device)
    with single_thread, np.errstate(over="ignore", invalid="ignore", divide="ignore", under="ignore"):
        for epoch in range(first_epoch + 1, epochs + 1):
            perm = to_backend(streams.permutations(epoch - 1, n), backend, device)
            Xp = X[perm]  # (S, n, d): this epoch's rows in stream order
            XpT = xp.permute_dims(Xp, (0, 2, 1)) if backend == "torch" else np.ascontiguousarray(np.swapaxes(Xp, 1, 2))
            yp = y[perm][:, None, :]  # (S, 1, n)
            for part in slices:
                X_b, y_b = Xp[:, part, :], yp[:, :, part]
                r = xp.matmul(theta, XpT[:, :, part]) - y_b  # (S, R, B)
                rs = r if loss_scale is None else loss_scale * r  # l_i = r_i rs_i; d l_i / d theta = 2 rs_i x_i
                losses = r * rs
                if peak_b.shape[-1] not in (1, losses.shape[-1]):  # the partial batch
                    peak_b = xp.max(peak_b, axis=-1, keepdims=True)
                peak_b = xp.maximum(peak_b, losses)
                grad_theta, grad_alpha = _gradients(xp, losses, rs, X_b, alpha, n_base, log_rho, lam, part)
                theta, buf_theta = nesterov_update(theta, buf_theta, grad_theta, lr_theta)
                alpha, buf_alpha = nesterov_update(alpha, buf_alpha, grad_alpha, lr_alpha)
                if trace is not None:
                    trace.append(_traced(unorder, active, theta, alpha, buf_theta, buf_alpha))
                steps_done += 1
                if max_steps is not None and steps_done >= max_steps:
                    break
            peak_b = xp.max(peak_b, axis=-1, keepdims=True)
            peak = peak_b[..., 0]
            finite = to_numpy(xp.all(xp.isfinite(theta), axis=-1) & xp.isfinite(alpha))
            fresh = (~finite) & (state["first_nonfinite_epoch"][:, active] < 0)
            sub = state["first_nonfinite_epoch"][:, active]
            sub[fresh] = epoch
            state["first_nonfinite_epoch"][:, active] = sub
            if max_steps is not None and steps_done >= max_steps:
                break
            record(epoch)
            keep = finite.any(axis=0)
            if not keep.all():  # configurations dead on every stream leave the program
                full_theta[:, active] = to_numpy(theta)
                full_alpha[:, active] = to_numpy(alpha)
                state["peak_loss"][:, active] = to_numpy(peak)
                kept = to_backend(np.nonzero(keep)[0], backend, device)
                active, theta, alpha, peak, peak_b = (
                    active[keep],
                    theta[:, kept],
                    alpha[:, kept],
                    peak[:, kept],
                    peak_b[:, kept],
                )
                buf_theta, buf_alpha = buf_theta[:, kept], buf_alpha[:, kept]
                n_base, lr_theta, lr_alpha, log_rho, loss_scale = _step_sizes(program, active)
            if checkpoint is not None and checkpoint.due(epoch) and epoch < epochs:
                full_theta[:, active], full_alpha[:, active] = to_numpy(theta), to_numpy(alpha)
                bt, ba = state["buf_theta"], state["buf_alpha"]
                bt[:, active], ba[:, active] = to_numpy(buf_theta), to_numpy(buf_alpha)
                state["peak_loss"][:, active] = to_numpy(peak)
                state.update(step=epoch, active=active)
                checkpoint.save(state)
    full_theta[:, active], full_alpha[:, active] = to_numpy(theta), to_numpy(alpha)
    state["peak_loss"][:, active] = to_numpy(peak)
    final_finite = np.all(np.isfinite(full_theta), axis=-1) & np.isfinite(full_alpha)
    return {
        "configs": configs,
        "records": records,
        "L0": L0,
        "objective": state["objective"][:, unorder],
        "objective64": state["objective64"][:, unorder],
        "finite": final_finite[:, unorder],
        "first_nonfinite_epoch": state["first_nonfinite_epoch"][:, unorder],
        "peak_loss": state["peak_loss"][:, unorder],
        "theta": full_theta[:, unorder].astype(np.float64),
        "alpha": full_alpha[:, unorder].astype(np.float64),
        "steps": steps_done,
    }


@dataclass(frozen=True)
class _Program:
    """The per-configuration constants of a batched run, in block order (baselines first)."""

    n_base_all: int  # baseline configurations
    etas: np.ndarray
    log_rhos: np.ndarray  # 0 for a baseline (unused)
    loss_scales: np.ndarray
    scaled_loss: bool  # False: l = r^2 without a multiplication per step
    batch: int
    dtype: str
    backend: str
    device: str

    @classmethod
    def of(cls, ordered: Sequence[RunConfig], batch: int, dtype: str, backend: str, device: str) -> _Program:
        loss_scales = np.array([c.loss_scale for c in ordered], dtype=dtype)
        return cls(
            n_base_all=sum(c.rho is None for c in ordered),
            etas=np.array([c.eta for c in ordered], dtype=dtype),
            log_rhos=np.array([math.log(c.rho) if c.rho is not None else 0.0 for c in ordered], dtype=dtype),
            loss_scales=loss_scales,
            scaled_loss=bool(np.any(loss_scales != 1.0)),
            batch=batch,
            dtype=dtype,
            backend=backend,
            device=device,
        )


def _initial_state(theta0: np.ndarray, streams: int, configs: int, records: int) -> dict:
    """Every run at theta_0 with alpha = 0 and zero momentum; nothing recorded yet."""
    S, C, dtype = streams, configs, theta0.dtype
    return {
        "step": 0,
        "active": np.arange(C),
        "theta": np.broadcast_to(theta0, (S, C, len(theta0))).copy(),
        "alpha": np.zeros((S, C), dtype=dtype),
        "buf_theta": np.zeros((S, C, len(theta0)), dtype=dtype),
        "buf_alpha": np.zeros((S, C), dtype=dtype),
        "objective": np.full((S, C, records), np.nan),
        "objective64": np.full((S, C, records), np.nan),
        "first_nonfinite_epoch": np.full((S, C), -1, dtype=np.int64),
        "peak_loss": np.zeros((S, C)),
    }


def _step_sizes(program: _Program, active_now: np.ndarray) -> tuple:
    """(baselines among the active configurations, theta's and alpha's stepsizes, log rho of the
    proposed ones, the loss scales or None) as backend arrays shaped for a step."""
    n_base_all, etas, backend, device, dtype = (
        program.n_base_all,
        program.etas,
        program.backend,
        program.device,
        program.dtype,
    )
    n_base = int(np.sum(active_now < n_base_all))
    lr = to_backend(etas[active_now], backend, device)
    proposed = to_backend((active_now >= n_base_all).astype(dtype), backend, device)[None, :]  # 0: alpha stays 0
    scale = to_backend(program.loss_scales[active_now], backend, device)[None, :, None] if program.scaled_loss else None
    return (
        n_base,
        lr[None, :, None],
        lr[None, :] * proposed,
        to_backend(program.log_rhos[active_now][n_base:], backend, device)[None, :, None],
        scale,
    )


def _gradients(xp: Any, losses: Any, rs: Any, X_b: Any, alpha: Any, n_base: int, log_rho: Any, lam: float, part: slice):
    """(grad theta, grad alpha) of one step on l_i = r_i rs_i: the baseline's softmax weights p_i summed,
    the proposed method's Safe-KL weights w_i averaged over the batch."""
    coef_base = baseline_weights(losses[:, :n_base, :], lam)
    w = proposed_weights(losses[:, n_base:, :], alpha[:, n_base:, None], log_rho, lam)
    coef = xp.concat([coef_base, w / (part.stop - part.start)], axis=1)
    grad_theta = 2.0 * xp.matmul(coef * rs, X_b)
    grad_alpha = 1.0 - xp.sum(coef, axis=-1)  # the baseline's alpha has lr 0 (lr_alpha)
    return grad_theta, grad_alpha


def _traced(unorder: np.ndarray, active: np.ndarray, *arrays: Any) -> tuple[np.ndarray, ...]:
    """One step's state for `trace`, in the caller's configuration order (every configuration still active)."""
    if len(active) != len(unorder):
        raise ValueError("trace: a configuration left the program (non-finite on every stream)")
    return tuple(to_numpy(a)[:, unorder].astype(np.float64) for a in arrays)


def _blas_single_thread():
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # a scikit-learn dependency; without it, BLAS keeps its threads
        return contextlib.nullcontext()
    return threadpool_limits(1, user_api="blas")
