"""UOT-DRO (claim L6): the batched program (R runs' stacked parameters, per-run stepsize, overflow
and freeze), the keyed sample stream, and the training loop with its checkpoint evaluations."""

from __future__ import annotations

import math
import queue
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np
import torch

from kernels.seeding import key_seed
from kernels.uot_dro.model import (
    CLASSES,
    FC1,
    PARAMETER_SHAPES,
    cross_entropy,
    cross_entropy_gradient,
    forward,
    init_parameters,
    one_hot,
    one_image_backward,
    one_image_forward,
)
from kernels.uot_dro.objectives import (
    BETA,
    LAMBDA,
    RHO,
    accuracy,
    adversarial_losses,
    inner_maximise,
    overflow_threshold,
    run_objectives,
)

METHODS = ("baseline", "proposed", "erm")  # the order of the blocks of a batch
STREAM_BLOCK = 4096  # the sample stream is drawn in keyed blocks, so position = step (resumable)
RUN_GROUP = 4  # CPU: about this many runs' gradients are computed together (their FC-128 weights, 19 MB, stay
# in cache through the inner maximisation): at R = 24 all at once was 7 % slower, groups of 2 or 8 4-13 %
# slower; a group is not split off for one run (R = 5, the full tier's program: one group, 10 % faster)


def sample_indices(master_seed: int, seed: int, start: int, count: int, n: int) -> np.ndarray:
    """Training-image indices of steps start+1 .. start+count of one seed's stream (uniform, with
    replacement, as the released code's random.randint), independent of how the stream is chunked."""
    out = np.empty(count, dtype=np.int64)
    filled = 0
    while filled < count:
        position = start + filled
        block, offset = divmod(position, STREAM_BLOCK)
        draws = np.random.default_rng(
            key_seed(f"{master_seed}|uot-dro|stream|seed={seed}|n={n}|block={block}")
        ).integers(0, n, STREAM_BLOCK)
        take = min(count - filled, STREAM_BLOCK - offset)
        out[filled : filled + take] = draws[offset : offset + take]
        filled += take
    return out


@dataclass(frozen=True)
class Run:
    method: str  # baseline | proposed | erm
    lr: float
    seed: int  # the seed index (0-9 in the paper); init and sample stream are keyed by it

    @property
    def name(self) -> str:
        return f"{self.method} eta={self.lr:g} seed={self.seed}"


def order_runs(runs: Sequence[Run]) -> list[Run]:
    """The runs in block order (baseline, proposed, erm), stable within a block."""
    for run in runs:
        if run.method not in METHODS:
            raise ValueError(f"unknown method {run.method!r}; choose one of {', '.join(METHODS)}")
        if not (run.lr > 0 and math.isfinite(run.lr)):
            raise ValueError(f"stepsize must be a positive number, got {run.lr!r}")
    return sorted(runs, key=lambda r: METHODS.index(r.method))


SMALL_PARAMETERS = tuple(name for name in PARAMETER_SHAPES if name != FC1)  # updated out of place (not rank one)
SMALL_SIZES = {name: math.prod(PARAMETER_SHAPES[name]) for name in SMALL_PARAMETERS}  # entries a run
SAFE_MAGNITUDE = 1e36  # below float32's max (3.4e38) by a margin no rounding of one update can cross
BATCHED = ("params", "alpha", "lr", "fc1_bound", "max_exponent")  # state with one row per run in the batch


def _rows(mask: torch.Tensor, like: torch.Tensor) -> torch.Tensor:
    return mask.view(-1, *[1] * (like.dim() - 1))


def _joined(parts: list[tuple]) -> tuple:
    """Per-group results (tensors and dicts of tensors, rows along the first axis) joined along the rows."""

    def join(items):
        return (
            {k: torch.cat([item[k] for item in items]) for k in items[0]}
            if isinstance(items[0], dict)
            else torch.cat(items)
        )

    return tuple(join(items) for items in zip(*parts))


def _max_abs(tensor: torch.Tensor) -> torch.Tensor:
    """max |entry| per run (NaN if any entry is NaN: amax propagates it), in float64. abs().amax() measured
    4.6 us on the 20,234 small parameters of a run against 61 us for linalg.vector_norm(ord=inf)."""
    return tensor.flatten(1).abs().amax(1).double()


class Program:
    """R runs as one batched tensor program: stacked parameters, per-run stepsize, overflow and freeze.

    A step computes every run's gradient by batched forward / backward passes (groups of RUN_GROUP runs
    on the CPU), then updates every run in one batched update. A run whose loss, gradient
    or parameters turn non-finite is recorded (its step, the exponent it reached) and frozen at its last
    finite parameters: it leaves the batch, so it costs nothing afterwards and cannot touch the others.

    The gradient of the FC-128 weight is rank one per run (batch size 1: the outer product of the
    pre-activation's gradient and the pooled features), so that weight is updated in place without
    materialising its gradient; whether its update is finite is decided by a float64 bound on max |W|,
    tightened by an exact pass whenever it cannot prove finiteness, and by the materialised update
    when that also fails.
    """

    def __init__(
        self,
        runs: Sequence[Run],
        master_seed: int,
        device: str = "cpu",
        keep_frozen: bool = False,
        dtype: torch.dtype = torch.float32,
    ) -> None:
        # dtype: float32 as the paper trains; float64 only for reference tests of the update code.
        self.runs = order_runs(runs)
        self.device = torch.device(device)
        inits = {s: init_parameters(master_seed, s) for s in sorted({r.seed for r in self.runs})}
        self.params = {
            name: torch.stack([inits[r.seed][name] for r in self.runs]).to(self.device, dtype)
            for name in PARAMETER_SHAPES
        }
        self._bind_small_parameters()
        count = len(self.runs)
        self.rows = np.arange(count)  # run index of each batch row (block order is kept)
        self.alpha = torch.zeros(count, dtype=dtype, device=self.device)
        self.lr = torch.tensor([r.lr for r in self.runs], dtype=dtype, device=self.device)
        self.fc1_bound = _max_abs(self.params[FC1])
        self.max_exponent = torch.full((count,), -math.inf, device=self.device)  # of exp, or softplus's argument
        self.overflow_step = np.full(count, -1, dtype=np.int64)  # per run; -1: never
        self.overflow_exponent = np.full(count, np.nan)  # the exponent at the overflowing step
        self.final_max_exponent = np.full(count, np.nan)
        self.final_alpha = np.full(count, np.nan)
        self.keep_frozen = keep_frozen
        self.frozen: dict[int, dict[str, torch.Tensor]] = {}  # run index -> last finite parameters (keep_frozen)
        self.step_count = 0

    def _bind_small_parameters(self) -> None:
        """Make the small parameters views of one buffer (R, 20,234), so that the update, its finiteness
        check and its freeze are one operation each rather than one per parameter (the batch-1 step's update
        took 0.6 ms, four times its floor, in ~90 small operations)."""
        count = self.params[FC1].shape[0]
        self._small = torch.cat([self.params[n].reshape(count, SMALL_SIZES[n]) for n in SMALL_PARAMETERS], dim=1)
        start = 0
        for name in SMALL_PARAMETERS:
            self.params[name] = self._small[:, start : start + SMALL_SIZES[name]].view(count, *PARAMETER_SHAPES[name])
            start += SMALL_SIZES[name]

    @property
    def blocks(self) -> tuple[int, int, int]:
        methods = [self.runs[i].method for i in self.rows]
        return tuple(methods.count(m) for m in METHODS)

    @property
    def active(self) -> np.ndarray:
        return self.overflow_step < 0

    # -- state for the result store's checkpoints ------------------------------------------------
    def state(self) -> dict[str, Any]:
        cpu = lambda t: t.detach().cpu().clone()  # noqa: E731
        return {
            "step": self.step_count,
            "rows": self.rows.copy(),
            "params": {k: cpu(v) for k, v in self.params.items()},
            **{name: cpu(getattr(self, name)) for name in BATCHED if name != "params"},
            **{
                name: getattr(self, name).copy()
                for name in ("overflow_step", "overflow_exponent", "final_max_exponent", "final_alpha")
            },
            "frozen": {i: {k: cpu(v) for k, v in p.items()} for i, p in self.frozen.items()},
        }

    def load_state(self, state: dict[str, Any]) -> None:
        self.step_count = int(state["step"])
        self.rows = state["rows"].copy()
        self.params = {k: v.to(self.device) for k, v in state["params"].items()}
        self._bind_small_parameters()
        for name in BATCHED:
            if name != "params":
                setattr(self, name, state[name].to(self.device))
        for name in ("overflow_step", "overflow_exponent", "final_max_exponent", "final_alpha"):
            setattr(self, name, state[name].copy())
        self.frozen = {i: {k: v.to(self.device) for k, v in p.items()} for i, p in state["frozen"].items()}

    def parameters_of(self, run: int) -> dict[str, torch.Tensor]:
        """The current parameters of a run in the batch, or the last finite ones of a frozen run."""
        if run in self.frozen:
            return self.frozen[run]
        row = int(np.flatnonzero(self.rows == run)[0])
        return {k: v[row] for k, v in self.params.items()}

    def snapshot(self) -> Snapshot:
        """What evaluate reads of the program now, copied, so that training can go on while it is evaluated."""
        return Snapshot(
            self.step_count, list(self.runs), self.rows.copy(), {k: v.detach().clone() for k, v in self.params.items()}
        )

    # -- one SGD step of every run ---------------------------------------------------------------
    def step(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """One step of the runs in the batch: x (R, 1, 1, 28, 28) and y (R, 1), row r's image in row r.

        The gradients are computed for groups of about RUN_GROUP rows at a time on the CPU (all rows at
        once on a GPU), then every run is updated in one batched update.
        """
        count = len(self.rows)
        groups = max(1, round(count / RUN_GROUP)) if self.device.type == "cpu" else 1
        bounds = [round(i * count / groups) for i in range(groups + 1)]  # sizes within one of each other
        parts = [self._gradients(start, stop, x, y) for start, stop in zip(bounds, bounds[1:])]
        losses, lhat, grads, grad_alpha, grad_pre, features = parts[0] if len(parts) == 1 else _joined(parts)
        self.step_count += 1
        self._update(losses, lhat, grads, grad_alpha, grad_pre, features)
        return losses

    def _gradients(self, start: int, stop: int, x: torch.Tensor, y: torch.Tensor):
        """(losses, lhat, gradients of the small parameters, of alpha, of the FC-128 pre-activation, the
        pooled features) of batch rows start .. stop - 1 on their images x, labels y."""
        nb, npr, _ = self.blocks
        dro = nb + npr
        blocks = (
            max(0, min(stop, nb) - start),
            max(0, min(stop, dro) - max(start, nb)),
            max(0, stop - max(start, dro)),
        )
        params = {k: p[start:stop] for k, p in self.params.items()}
        x, y = x[start:stop], y[start:stop]
        split = blocks[0] + blocks[1]  # rows of DRO runs
        u = x
        if split:  # ERM runs (the last block) train on the clean image: z = x, no inner maximisation
            u = torch.cat([inner_maximise({k: p[:split] for k, p in params.items()}, x[:split], y[:split]), x[split:]])
        # autograd only from the losses to lhat and alpha; the network's backward is written out (batch 1)
        logits, hidden, features, saved = one_image_forward(params, u)
        onehot = one_hot(y, CLASSES, logits.dtype)
        lhat = cross_entropy(logits, y, onehot) - LAMBDA * (u - x).pow(2).sum(dim=(-3, -2, -1))  # (rows, 1)
        lhat_leaf = lhat.detach().requires_grad_(True)
        alpha = self.alpha[start:stop].detach().requires_grad_(True)
        losses = run_objectives(lhat_leaf, alpha, blocks)
        grad_lhat, grad_alpha = torch.autograd.grad(
            losses.sum(), [lhat_leaf, alpha], allow_unused=True, materialize_grads=True
        )
        g_logits = grad_lhat.unsqueeze(-1) * cross_entropy_gradient(logits, y, onehot)
        grads = one_image_backward(params, hidden, saved, g_logits, {*SMALL_PARAMETERS, "pre"})
        grad_pre = grads.pop("pre")
        grads = {name: grads[name] for name in SMALL_PARAMETERS}
        return losses.detach(), lhat, grads, grad_alpha, grad_pre, features

    def _update(self, losses, lhat, grads, grad_alpha, grad_pre, features) -> None:
        nb, npr, ne = self.blocks
        lb = LAMBDA * BETA
        parts = []  # the exponent of the baseline's exp, of the proposed's softplus, none for ERM; blocks
        if nb:  # without runs left out, as in run_objectives
            parts.append(lhat[:nb, 0] / lb)
        if npr:
            parts.append((lhat[nb : nb + npr, 0] - self.alpha[nb : nb + npr]) / lb + math.log(RHO))
        if ne:
            parts.append(torch.full_like(lhat[nb + npr :, 0], -math.inf))
        exponent = torch.nan_to_num(torch.cat(parts), nan=math.inf, posinf=math.inf, neginf=-math.inf)
        rate = self.lr
        small_gradient = torch.cat([grads[n].reshape(len(rate), SMALL_SIZES[n]) for n in SMALL_PARAMETERS], dim=1)
        candidate = torch.addcmul(self._small, _rows(rate, small_gradient), small_gradient, value=-1)
        candidate_alpha = self.alpha - rate * grad_alpha
        # a non-finite gradient makes its candidate non-finite (rate > 0)
        finite = torch.isfinite(losses) & torch.isfinite(candidate_alpha) & torch.isfinite(_max_abs(candidate))
        # FC-128 weight: candidate W - rate * grad_pre^T features, finite if the float64 bound says so
        step_size = rate.double() * _max_abs(grad_pre) * _max_abs(features)
        bound = self.fc1_bound + step_size
        unproven = ~(bound < SAFE_MAGNITUDE)
        if bool(unproven.any()):
            self.fc1_bound = torch.where(unproven, _max_abs(self.params[FC1]), self.fc1_bound)  # exact, then retry
            bound = self.fc1_bound + step_size
            unproven = ~(bound < SAFE_MAGNITUDE)
            if bool(unproven.any()):
                exact = self.params[FC1] - _rows(rate, grad_pre) * torch.bmm(grad_pre.transpose(1, 2), features)
                finite &= ~unproven | torch.isfinite(_max_abs(exact))
                bound = torch.where(unproven, _max_abs(exact), bound)
        healthy = finite  # per run: one run's overflow must not touch the others
        self.max_exponent = torch.maximum(self.max_exponent, exponent)
        if bool(healthy.all()):  # every run takes its step
            self.params[FC1].baddbmm_((-_rows(rate, grad_pre) * grad_pre).transpose(1, 2), features)
            self._small.copy_(candidate)
            self.alpha, self.fc1_bound = candidate_alpha, bound
            return
        zero = lambda t: torch.where(_rows(healthy, t), t, torch.zeros_like(t))  # noqa: E731
        previous = {k: v[~healthy].clone() for k, v in self.params.items()} if self.keep_frozen else None
        self.params[FC1].baddbmm_(zero(-_rows(rate, grad_pre) * grad_pre).transpose(1, 2), zero(features))
        self._small.copy_(torch.where(_rows(healthy, candidate), candidate, self._small))
        self.alpha = torch.where(healthy, candidate_alpha, self.alpha)
        self.fc1_bound = torch.where(healthy, bound, self.fc1_bound)
        self._freeze(healthy.cpu().numpy(), exponent.cpu().numpy(), previous)

    def _freeze(self, healthy: np.ndarray, exponent: np.ndarray, previous: dict[str, torch.Tensor] | None) -> None:
        """Record the runs that overflowed at this step and take them out of the batch."""
        gone = self.rows[~healthy]
        self.overflow_step[gone] = self.step_count
        self.overflow_exponent[gone] = exponent[~healthy]
        self.final_max_exponent[gone] = self.max_exponent[torch.as_tensor(~healthy, device=self.device)].cpu().numpy()
        self.final_alpha[gone] = self.alpha[torch.as_tensor(~healthy, device=self.device)].cpu().numpy()
        if previous is not None:
            for j, run in enumerate(gone):
                self.frozen[int(run)] = {k: v[j] for k, v in previous.items()}
        keep = torch.as_tensor(np.flatnonzero(healthy), device=self.device)
        self.params = {k: v.index_select(0, keep) for k, v in self.params.items()}
        self.rows = self.rows[healthy]
        self._bind_small_parameters()
        for name in ("alpha", "lr", "fc1_bound", "max_exponent"):
            setattr(self, name, getattr(self, name).index_select(0, keep))

    def finish(self) -> None:
        """Copy the per-row records of the runs still in the batch into the per-run arrays."""
        self.final_max_exponent[self.rows] = self.max_exponent.cpu().numpy()
        self.final_alpha[self.rows] = self.alpha.cpu().numpy()


@dataclass(frozen=True)
class Data:
    """Tensors on the device: the training split (noisy labels) and the evaluation sets."""

    x_train: torch.Tensor
    y_train: torch.Tensor
    x_objective: torch.Tensor  # fixed subset of the training split for F(theta)
    y_objective: torch.Tensor
    x_test: torch.Tensor  # clean labels
    y_test: torch.Tensor
    x_val: torch.Tensor  # noisy labels
    y_val: torch.Tensor


@dataclass(frozen=True)
class Snapshot:
    """A program's runs and parameters at one step (Program.snapshot): what a checkpoint evaluation reads."""

    step_count: int
    runs: list[Run]
    rows: np.ndarray
    params: dict[str, torch.Tensor]

    def state(self) -> dict[str, Any]:
        """Plain data for the result store's checkpoint (a pending evaluation survives an interrupt)."""
        return {
            "step": self.step_count,
            "rows": self.rows.copy(),
            "params": {k: v.detach().cpu().clone() for k, v in self.params.items()},
        }

    @classmethod
    def from_state(cls, state: dict[str, Any], runs: list[Run], device: torch.device) -> Snapshot:
        params = {k: v.to(device) for k, v in state["params"].items()}
        return cls(int(state["step"]), runs, state["rows"].copy(), params)


def evaluate(program: Program | Snapshot, data: Data) -> dict[str, np.ndarray]:
    """At a checkpoint, for every run still in the batch: the test and validation accuracy, and for
    DRO runs F(theta) with the per-image adversarial and clean losses behind it (NaN for the rest:
    the curves of a run end where it overflowed). Runs of one seed share their parameters at step 0."""
    count, images = len(program.runs), data.x_objective.shape[0]
    out = {k: np.full(count, np.nan) for k in ("F", "test_accuracy", "val_accuracy")}
    out["lhat"] = np.full((count, images), np.nan, dtype=np.float32)
    out["clean_loss"] = np.full((count, images), np.nan, dtype=np.float32)
    done: dict[tuple, int] = {}
    for row, run in enumerate(program.rows):
        method = program.runs[run].method
        key = (program.runs[run].seed, method == "erm")
        if program.step_count == 0 and key in done:  # identical parameters: copy
            for name in out:
                out[name][run] = out[name][done[key]]
            continue
        done[key] = run
        params = {k: v[row] for k, v in program.params.items()}
        if method != "erm" and images:
            lhat = adversarial_losses(params, data.x_objective, data.y_objective).double()
            lb = LAMBDA * BETA
            out["F"][run] = float(lb * (torch.logsumexp(lhat / lb, dim=0) - math.log(images)))
            out["lhat"][run] = lhat.float().cpu().numpy()
            with torch.no_grad():
                logits = forward({k: v.unsqueeze(0) for k, v in params.items()}, data.x_objective.unsqueeze(0))
                out["clean_loss"][run] = cross_entropy(logits, data.y_objective.unsqueeze(0))[0].cpu().numpy()
        if data.x_test.shape[0]:
            out["test_accuracy"][run] = accuracy(params, data.x_test, data.y_test)
        if data.x_val.shape[0]:
            out["val_accuracy"][run] = accuracy(params, data.x_val, data.y_val)
    return out


class Evaluations:
    """The checkpoint evaluations of one training: run in order, either at once in the calling thread or
    aside, in one background thread while training goes on (a CPU unit then uses a second core while it
    evaluates, and its wall is its training's rather than training + evaluations). Either way each is
    evaluate() on a snapshot of the program at its step, so the curves are the same to the bit; they are
    appended to `curves` in step order, and the snapshots not yet evaluated go into every saved checkpoint
    (an interrupt loses none). The thread is a daemon that stops after its current evaluation when
    close() is called, so an interrupted session does not wait for it."""

    def __init__(self, data: Data, curves: dict, seconds: dict, aside: bool) -> None:
        self.data, self.curves, self.seconds, self.aside = data, curves, seconds, aside
        self.pending: list[Snapshot] = []  # submitted, not yet in the curves (step order)
        self._done: queue.Queue = queue.Queue()  # (step, values or the exception, seconds) from the thread
        self._jobs: queue.Queue = queue.Queue()
        self._thread: threading.Thread | None = None

    @property
    def last_step(self) -> int:
        """The last step evaluated or submitted (-1: none)."""
        if self.pending:
            return self.pending[-1].step_count
        return self.curves["step"][-1] if self.curves["step"] else -1

    def submit(self, snapshot: Snapshot) -> None:
        self.pending.append(snapshot)
        if not self.aside:
            self._record(*self._evaluate(snapshot))
            return
        if self._thread is None:
            self._thread = threading.Thread(target=self._work, name="uot-dro evaluations", daemon=True)
            self._thread.start()
        self._jobs.put(snapshot)

    def _evaluate(self, snapshot: Snapshot) -> tuple:
        started = time.perf_counter()
        try:
            values: Any = evaluate(snapshot, self.data)
        except BaseException as error:  # handed to the training thread, which raises it
            values = error
        return snapshot.step_count, values, time.perf_counter() - started

    def _work(self) -> None:
        while (snapshot := self._jobs.get()) is not None:
            self._done.put(self._evaluate(snapshot))

    def _record(self, step: int, values: Any, seconds: float) -> None:
        if isinstance(values, BaseException):
            raise values
        if not self.pending or self.pending[0].step_count != step:  # one thread, one queue: cannot happen
            raise RuntimeError(f"the evaluation of step {step} finished out of order")
        self.pending.pop(0)
        self.seconds["evaluate"] += seconds
        for key, value in {"step": step, **values}.items():
            self.curves[key].append(value)

    def collect(self, wait: bool = False) -> None:
        """Append the finished evaluations to the curves; with wait=True, all of them."""
        while self.pending:
            try:
                done = self._done.get(block=wait)
            except queue.Empty:
                return
            self._record(*done)

    def pending_states(self) -> list[dict[str, Any]]:
        return [snapshot.state() for snapshot in self.pending]

    def close(self) -> None:
        if self._thread is not None:
            self._jobs.put(None)
            self._thread = None


def train(
    runs: Sequence[Run],
    data: Data,
    steps: int,
    checkpoints: Sequence[int],
    master_seed: int,
    device: str = "cpu",
    checkpoint: Any = None,
    progress: Callable[[int, float], None] | None = None,
    evaluate_aside: bool = False,
) -> dict[str, Any]:
    """Train every run for `steps` steps as one batched program, evaluating at `checkpoints` (and at
    0 and `steps`). `checkpoint` is the result store's Checkpoint (load / due / save) or None;
    evaluate_aside: the evaluations in a background thread while training goes on (Evaluations).

    The value is plain NumPy and Python (the store's data-only codec keeps it): the runs, their overflow
    steps, the curves at the checkpoints, the timings.
    """
    program = Program(runs, master_seed, device)
    marks = sorted({0, *[int(c) for c in checkpoints if 0 <= c <= steps], steps})
    progress_so_far = {
        "curves": {key: [] for key in CURVES},
        "seconds": {"train": 0.0, "evaluate": 0.0},
        "run_steps": 0,
    }
    saved = checkpoint.load() if checkpoint is not None else None
    if saved is not None:
        program.load_state(saved["program"])
        progress_so_far = {key: saved[key] for key in ("curves", "seconds", "run_steps")}
    evaluations = Evaluations(data, progress_so_far["curves"], progress_so_far["seconds"], evaluate_aside)
    try:
        for state in saved.get("pending", []) if saved is not None else []:
            evaluations.submit(Snapshot.from_state(state, program.runs, program.device))
        _train_and_evaluate(
            program, data, steps, marks, master_seed, checkpoint, progress, progress_so_far, evaluations
        )
        evaluations.collect(wait=True)
    finally:
        evaluations.close()
    program.finish()
    return _trained(program, marks, progress_so_far)


def _train_and_evaluate(
    program: Program,
    data: Data,
    steps: int,
    marks: list[int],
    master_seed: int,
    checkpoint: Any,
    progress: Callable[[int, float], None] | None,
    so_far: dict,
    evaluations: Evaluations,
) -> None:
    """train's loop: the steps in blocks of the sample stream, an evaluation submitted at each mark."""
    seconds = so_far["seconds"]
    unique_seeds = sorted({r.seed for r in program.runs})
    while True:
        step = program.step_count
        if step in marks and evaluations.last_step < step:
            evaluations.submit(program.snapshot())
        if step >= steps or len(program.rows) == 0:
            break
        take = min(STREAM_BLOCK - step % STREAM_BLOCK, min(m for m in marks if m > step) - step)
        streams = torch.as_tensor(
            np.stack([sample_indices(master_seed, s, step, take, data.x_train.shape[0]) for s in unique_seeds]),
            device=program.device,
        )
        started = time.perf_counter()
        _train_block(program, data, streams, unique_seeds, so_far, started, checkpoint, evaluations)
        if program.device.type == "cuda":
            torch.cuda.synchronize()
        seconds["train"] += time.perf_counter() - started
        evaluations.collect()
        if progress is not None:
            progress(program.step_count, seconds["train"])


CURVES = ("step", "F", "test_accuracy", "val_accuracy", "lhat", "clean_loss")  # what train records per checkpoint


def _train_block(
    program: Program,
    data: Data,
    streams: torch.Tensor,
    unique_seeds: list,
    so_far: dict,
    started: float,
    checkpoint: Any,
    evaluations: Evaluations,
) -> None:
    """The steps of one block of sample streams (every active run; a run that overflows leaves the
    batch), saving the checkpoint where it is due (with the evaluations not yet finished);
    `so_far["run_steps"]` counts the run-steps computed."""
    seed_row = np.array([unique_seeds.index(r.seed) for r in program.runs])
    rows, row_index = None, None
    for t in range(streams.shape[1]):
        if rows is None or len(rows) != len(program.rows):  # the batch shrinks only when a run overflows
            rows = program.rows
            row_index = torch.as_tensor(seed_row[rows], device=program.device)
        chosen = streams[row_index, t]
        so_far["run_steps"] += len(program.rows)
        program.step(data.x_train[chosen].unsqueeze(1), data.y_train[chosen].unsqueeze(1))
        if checkpoint is not None and checkpoint.due(program.step_count):
            evaluations.collect()
            seconds = {**so_far["seconds"], "train": so_far["seconds"]["train"] + time.perf_counter() - started}
            pending = evaluations.pending_states()
            checkpoint.save(
                {
                    "step": program.step_count,
                    "program": program.state(),
                    **so_far,
                    "seconds": seconds,
                    "pending": pending,
                }
            )
        if len(program.rows) == 0:
            break


def _trained(program: Program, marks: list[int], so_far: dict) -> dict[str, Any]:
    """train's value: the runs, their overflow records and the curves, (runs, checkpoints, ...) with NaN
    at checkpoints a run never reached."""
    curves, seconds, run_steps = so_far["curves"], so_far["seconds"], so_far["run_steps"]

    def stacked(key: str) -> np.ndarray:
        shape = curves[key][0].shape
        rows = curves[key] + [np.full(shape, np.nan, dtype=curves[key][0].dtype)] * (len(marks) - len(curves[key]))
        return np.stack(rows, axis=1)

    return {
        "runs": [(r.method, r.lr, r.seed) for r in program.runs],
        "steps": marks[-1],
        "overflow_step": program.overflow_step.copy(),  # -1: never
        "overflow_exponent": program.overflow_exponent.copy(),
        "max_exponent": program.final_max_exponent.copy(),
        "final_alpha": program.final_alpha.copy(),
        "curve_steps": np.array(marks),
        **{key: stacked(key) for key in CURVES[1:]},
        "seconds": dict(seconds),
        "run_steps": run_steps,
        "run_steps_per_second": run_steps / max(seconds["train"], 1e-9),
        "device": str(program.device),
        "threshold_float32": overflow_threshold(torch.float32),
    }
