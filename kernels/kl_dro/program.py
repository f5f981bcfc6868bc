"""KL-DRO (claim L5): the batched SGD program, every configuration on every stream at once (Program), and
sgd_runs, which runs it for a number of epochs, resumable at epoch ends. Conventions: kernels.kl_dro."""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from kernels.backend import to_backend, to_numpy, torch_cpu_single_thread
from kernels.kl_dro.problem import (
    EPOCHS,
    ETAS,
    RHOS,
    Problem,
    baseline_weights,
    fast_namespace,
    nesterov_update,
    objective,
    proposed_weights,
)
from kernels.kl_dro.streams import KeyedStreams, ReleasedStreams


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
    checkpoint: Any = None,
    on_step: Callable[[Program], bool] | None = None,
) -> dict:
    """Run every configuration on every stream for `epochs` epochs, all at once (one Program).

    Returns numpy arrays indexed (stream, configuration[, record]): `objective` L at epochs 0,
    record_every, ..., epochs (in `dtype`, from the data in `dtype`), `objective64` (the same theta
    evaluated in float64), `finite` (theta and alpha finite at the end), `first_nonfinite_epoch` (-1 if
    never), `theta`, `alpha` (final), `peak_loss` (the largest
    batch loss any step saw: where a naive exp(l / lambda) would have overflowed), and `L0` (L(theta_0)
    in float64 for l = r^2; a configuration's own start, at its loss scale and in the run's precision, is
    its `objective[..., 0]`). A configuration non-finite on every stream is
    dropped from the program at the next epoch end (it can never become finite again).
    `checkpoint` (pytest_claims.store.result_store.Checkpoint) makes the run resumable at epoch ends. `on_step`
    (reference tests) is called with the program after every step (`Program.current` reads its state);
    a true return stops the run there, with the records after epoch 0 left NaN.
    """
    records = list(range(0, epochs + 1, record_every))
    if records[-1] != epochs:
        records.append(epochs)
    saved = checkpoint.load() if checkpoint is not None else None
    program = Program(
        problem, batch, configs, streams, records, dtype=dtype, backend=backend, device=device, saved=saved
    )
    if program.epoch == 0:
        program.record()
    # the per-step arrays are tiny: extra threads only spin (and fight -n workers for the cores)
    single_thread = _blas_single_thread() if program.xp is np else torch_cpu_single_thread("torch", device)
    with single_thread, np.errstate(over="ignore", invalid="ignore", divide="ignore", under="ignore"):
        while program.epoch < epochs:
            if not program.run_epoch(on_step):
                break
            if checkpoint is not None and checkpoint.due(program.epoch) and program.epoch < epochs:
                checkpoint.save(program.state())
    return program.result()


class Program:
    """Every configuration on every stream as one batched SGD: arrays (streams S, active runs R, d) of the
    configurations still active, baselines first.

    The state each run carries from step to step (theta, alpha, their momentum buffers, the running
    elementwise peak of its batch losses) lives on backend arrays of the active configurations;
    `saved` holds every configuration's as NumPy arrays, with the records and the epochs done (what a
    checkpoint keeps: `state`). `step` is one minibatch step of every active run; `run_epoch` an epoch
    of them and its end, where a configuration non-finite on every stream leaves the program.
    """

    def __init__(
        self,
        problem: Problem,
        batch: int,
        configs: Sequence[RunConfig],
        streams: KeyedStreams | ReleasedStreams,
        records: list[int],
        *,
        dtype: str = "float64",
        backend: str = "numpy",
        device: str = "cpu",
        saved: dict | None = None,
    ) -> None:
        self.configs = list(configs)
        order = sorted(range(len(self.configs)), key=lambda c: self.configs[c].rho is not None)  # baselines first
        self.unorder = np.argsort(order)  # back to the caller's configuration order
        self.streams, self.records, self.n, self.lam = streams, records, problem.n, problem.lam
        self.dtype, self.backend, self.device = dtype, backend, device
        self.X = to_backend(problem.X.astype(dtype), backend, device)
        self.y = to_backend(problem.y.astype(dtype), backend, device)
        self.X64, self.y64 = to_backend(problem.X, backend, device), to_backend(problem.y, backend, device)
        self.xp = fast_namespace(self.X)
        self.constants = _Constants.of([self.configs[c] for c in order], batch, dtype, backend, device)
        theta0 = to_backend(problem.theta0[None, :], backend, device)
        self.L0 = float(to_numpy(objective(theta0, self.X64, self.y64, self.lam))[0])  # of l = r^2
        if saved is None:
            saved = _initial_state(problem.theta0.astype(dtype), len(streams), len(self.configs), len(records))
        self.saved = saved
        self.slices = batch_slices(problem.n, batch)
        self.epoch = saved["step"]  # epochs done
        self.steps_done = self.epoch * len(self.slices)
        self._activate(saved["active"])

    def _activate(self, active: np.ndarray) -> None:
        """Load the state of the configurations `active` from `saved` onto the backend."""
        xp, backend, device = self.xp, self.backend, self.device
        self.active = active
        self.theta = to_backend(self.saved["theta"][:, active], backend, device)
        self.alpha = to_backend(self.saved["alpha"][:, active], backend, device)
        self.buf_theta = to_backend(self.saved["buf_theta"][:, active], backend, device)
        self.buf_alpha = to_backend(self.saved["buf_alpha"][:, active], backend, device)
        peak = to_backend(self.saved["peak_loss"][:, active].astype(self.dtype), backend, device)
        # running elementwise maximum of the batch losses (reduced over the batch at epoch ends: cheaper)
        self.peak = xp.zeros_like(self.theta[:, :, :1]) + xp.reshape(peak, (*peak.shape, 1))
        self.sizes = _step_sizes(self.constants, active)

    def _store_active(self) -> None:
        """Write the active configurations' state back into `saved`."""
        saved, active = self.saved, self.active
        for name in ("theta", "alpha", "buf_theta", "buf_alpha"):
            saved[name][:, active] = to_numpy(getattr(self, name))
        saved["peak_loss"][:, active] = to_numpy(self.peak[..., 0])

    def _epoch_rows(self, epoch: int) -> tuple[Any, Any, Any]:
        """Epoch `epoch`'s rows in stream order: X (S, n, d), X transposed (S, d, n), y (S, 1, n)."""
        xp = self.xp
        perm = to_backend(self.streams.permutations(epoch, self.n), self.backend, self.device)
        Xp = self.X[perm]
        XpT = xp.permute_dims(Xp, (0, 2, 1)) if self.backend == "torch" else np.ascontiguousarray(np.swapaxes(Xp, 1, 2))
        return Xp, XpT, self.y[perm][:, None, :]

    def step(self, rows: tuple[Any, Any, Any], part: slice) -> None:
        """One step of every active run on the minibatch `part` of the epoch's rows (_epoch_rows)."""
        xp, (Xp, XpT, yp) = self.xp, rows
        n_base, lr_theta, lr_alpha, log_rho, loss_scale = self.sizes
        X_b, y_b = Xp[:, part, :], yp[:, :, part]
        r = xp.matmul(self.theta, XpT[:, :, part]) - y_b  # (S, R, B)
        rs = r if loss_scale is None else loss_scale * r  # l_i = r_i rs_i; d l_i / d theta = 2 rs_i x_i
        losses = r * rs
        if self.peak.shape[-1] not in (1, losses.shape[-1]):  # the partial batch
            self.peak = xp.max(self.peak, axis=-1, keepdims=True)
        self.peak = xp.maximum(self.peak, losses)
        grad_theta, grad_alpha = _gradients(xp, losses, rs, X_b, self.alpha, n_base, log_rho, self.lam, part)
        self.theta, self.buf_theta = nesterov_update(self.theta, self.buf_theta, grad_theta, lr_theta)
        self.alpha, self.buf_alpha = nesterov_update(self.alpha, self.buf_alpha, grad_alpha, lr_alpha)
        self.steps_done += 1

    def run_epoch(self, on_step: Callable[[Program], bool] | None = None) -> bool:
        """The next epoch's steps, then its end: the runs turned non-finite marked, the records taken, the
        configurations non-finite on every stream dropped. False where `on_step` stopped it (then the runs
        are marked, and nothing else)."""
        xp, epoch = self.xp, self.epoch + 1
        rows, stopped = self._epoch_rows(epoch - 1), False
        for part in self.slices:
            self.step(rows, part)
            if on_step is not None and on_step(self):
                stopped = True
                break
        self.peak = xp.max(self.peak, axis=-1, keepdims=True)
        finite = to_numpy(xp.all(xp.isfinite(self.theta), axis=-1) & xp.isfinite(self.alpha))
        first = self.saved["first_nonfinite_epoch"][:, self.active]
        first[~finite & (first < 0)] = epoch
        self.saved["first_nonfinite_epoch"][:, self.active] = first
        if stopped:
            return False
        self.epoch = epoch
        self.record()
        keep = finite.any(axis=0)
        if not keep.all():  # configurations dead on every stream leave the program
            self._store_active()
            self._activate(self.active[keep])
        return True

    def record(self) -> None:
        """L of the active runs at this epoch end, where it is a record: in the run's precision and, from the
        same theta, in float64."""
        if self.epoch not in self.records:
            return
        xp, active, k, saved = self.xp, self.active, self.records.index(self.epoch), self.saved
        loss_scale = self.sizes[-1]
        scale = None if loss_scale is None else loss_scale[..., 0]
        saved["objective"][:, active, k] = to_numpy(objective(self.theta, self.X, self.y, self.lam, scale)).astype(
            np.float64
        )
        saved["objective64"][:, active, k] = (
            saved["objective"][:, active, k]
            if self.dtype == "float64"
            else to_numpy(
                objective(
                    xp.astype(self.theta, xp.float64),
                    self.X64,
                    self.y64,
                    self.lam,
                    None if scale is None else xp.astype(scale, xp.float64),
                )
            )
        )

    def state(self) -> dict:
        """What a checkpoint keeps (sgd_runs resumes from it): every configuration's state, the records so
        far, the epochs done and the configurations active."""
        self._store_active()
        self.saved.update(step=self.epoch, active=self.active)
        return self.saved

    def current(self) -> tuple[np.ndarray, ...]:
        """(theta, alpha, theta's and alpha's momentum buffers) now, as float64 arrays (stream, configuration[,
        d]) in the caller's configuration order (reference tests; every configuration must still be active)."""
        if len(self.active) != len(self.unorder):
            raise ValueError("a configuration left the program (non-finite on every stream)")
        arrays = (self.theta, self.alpha, self.buf_theta, self.buf_alpha)
        return tuple(to_numpy(a)[:, self.unorder].astype(np.float64) for a in arrays)

    def result(self) -> dict:
        """sgd_runs' value (see there), in the caller's configuration order."""
        self._store_active()
        saved, unorder = self.saved, self.unorder
        final_finite = np.all(np.isfinite(saved["theta"]), axis=-1) & np.isfinite(saved["alpha"])
        return {
            "configs": self.configs,
            "records": self.records,
            "L0": self.L0,
            "objective": saved["objective"][:, unorder],
            "objective64": saved["objective64"][:, unorder],
            "finite": final_finite[:, unorder],
            "first_nonfinite_epoch": saved["first_nonfinite_epoch"][:, unorder],
            "peak_loss": saved["peak_loss"][:, unorder],
            "theta": saved["theta"][:, unorder].astype(np.float64),
            "alpha": saved["alpha"][:, unorder].astype(np.float64),
            "steps": self.steps_done,
        }


@dataclass(frozen=True)
class _Constants:
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
    def of(cls, ordered: Sequence[RunConfig], batch: int, dtype: str, backend: str, device: str) -> _Constants:
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


def _step_sizes(constants: _Constants, active_now: np.ndarray) -> tuple:
    """(baselines among the active configurations, theta's and alpha's stepsizes, log rho of the
    proposed ones, the loss scales or None) as backend arrays shaped for a step."""
    n_base_all, etas, backend, device, dtype = (
        constants.n_base_all,
        constants.etas,
        constants.backend,
        constants.device,
        constants.dtype,
    )
    n_base = int(np.sum(active_now < n_base_all))
    lr = to_backend(etas[active_now], backend, device)
    proposed = to_backend((active_now >= n_base_all).astype(dtype), backend, device)[None, :]  # 0: alpha stays 0
    scale = (
        to_backend(constants.loss_scales[active_now], backend, device)[None, :, None] if constants.scaled_loss else None
    )
    return (
        n_base,
        lr[None, :, None],
        lr[None, :] * proposed,
        to_backend(constants.log_rhos[active_now][n_base:], backend, device)[None, :, None],
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


def _blas_single_thread():
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # a scikit-learn dependency; without it, BLAS keeps its threads
        return contextlib.nullcontext()
    return threadpool_limits(1, user_api="blas")
