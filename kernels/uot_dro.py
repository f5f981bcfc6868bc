"""Paper L, Section 3.3 (claim L6): DRO with unbalanced optimal transport on MNIST with label noise.

Setup (CLAIMS.md, "DRO (L5, L6)"; the authors' released `uot-dro/` code for what the text leaves open):

* model: conv 32 (3x3) - ReLU - conv 64 (3x3) - ReLU - 2x2 max-pool - FC 128 - ReLU - FC 10 (one pool,
  after the second convolution: 28 -> 26 -> 24 -> 12, so FC 128 reads 64 x 12 x 12 = 9216 features);
  PyTorch's default initialisation, drawn from a generator keyed by (master seed, seed);
* adversarial loss lhat(theta; x, y) = sup_z l(theta; z, y) - lambda ||z - x||^2, l the cross-entropy,
  approximated by 5 Nesterov ascent steps from z = x (step 0.1 / lambda, momentum 0.4, the gradient
  taken at the look-ahead point); lambda = beta = 1, rho = 0.1;
* objectives per training image: ERM l(theta; x, y); baseline (21) exp(lhat / (lambda beta)); proposed
  (22) alpha + (lambda beta / rho) softplus((lhat - alpha) / (lambda beta) + ln rho), alpha trained
  with theta (alpha_0 = 0); the gradient in theta holds z at the inner maximiser (Danskin);
* training: batch size 1 drawn uniformly with replacement, plain SGD, float32;
* F(theta) = lambda beta ln((1/n) sum_i exp(lhat_i / (lambda beta))) on a fixed subset of the training
  split: the UOT-DRO objective both methods minimise, the released code's `eval_loss`.

Every run (method x stepsize x seed) advances in ONE batched program: the parameters of R runs are
stacked along a leading axis and the model is applied with `torch.func.functional_call` under
`torch.func.vmap`, so a step is one batched forward / backward for all R runs. A run whose loss,
gradient or parameters become non-finite is recorded as overflowed at that step and frozen at its
last finite parameters; the other runs never see it. CPU and CUDA.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from kernels.seeding import key_seed

LAMBDA = 1.0
BETA = 1.0
RHO = 0.1
INNER_STEPS = 5
INNER_MOMENTUM = 0.4
INNER_LR = 0.1  # divided by lambda
METHODS = ("baseline", "proposed", "erm")  # the order of the blocks of a batch
STREAM_BLOCK = 4096  # the sample stream is drawn in keyed blocks, so position = step (resumable)


# ---------------------------------------------------------------------------------------------
# Model


class SimpleCNN(nn.Module):
    """The single-run model (nn.Module), for the explicit single-run route and the reference tests."""

    def __init__(self) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(1, 32, 3)
        self.conv2 = nn.Conv2d(32, 64, 3)
        self.fc1 = nn.Linear(9216, 128)
        self.fc2 = nn.Linear(128, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = F.max_pool2d(F.relu(self.conv2(F.relu(self.conv1(x)))), 2)
        return self.fc2(F.relu(self.fc1(h.flatten(1))))


PARAMETER_SHAPES = {name: tuple(p.shape) for name, p in SimpleCNN().named_parameters()}
FC1 = "fc1.weight"  # the one large parameter (1.18M of 1.2M per run): updated in place, rank-1 per step


def init_parameters(master_seed: int, seed: int) -> dict[str, torch.Tensor]:
    """PyTorch's default initialisation (weights and biases U(+-1/sqrt(fan_in))) from a keyed CPU
    generator: the same for every method at one seed, as the released code's torch.manual_seed(seed)."""
    generator = torch.Generator().manual_seed(key_seed(f"{master_seed}|uot-dro|init|seed={seed}"))
    out = {}
    for name, shape in PARAMETER_SHAPES.items():
        layer = name.rsplit(".", 1)[0]
        fan_in = math.prod(PARAMETER_SHAPES[layer + ".weight"][1:])
        bound = 1.0 / math.sqrt(fan_in)
        out[name] = (torch.rand(shape, generator=generator, dtype=torch.float32) * 2 - 1) * bound
    return out


def sample_indices(master_seed: int, seed: int, start: int, count: int, n: int) -> np.ndarray:
    """Training-image indices of steps start+1 .. start+count of one seed's stream (uniform, with
    replacement, as the released code's random.randint), independent of how the stream is chunked."""
    out = np.empty(count, dtype=np.int64)
    filled = 0
    while filled < count:
        position = start + filled
        block, offset = divmod(position, STREAM_BLOCK)
        draws = np.random.default_rng(key_seed(f"{master_seed}|uot-dro|stream|seed={seed}|n={n}|block={block}")).integers(0, n, STREAM_BLOCK)
        take = min(count - filled, STREAM_BLOCK - offset)
        out[filled : filled + take] = draws[offset : offset + take]
        filled += take
    return out


def forward_parts(params: dict[str, torch.Tensor], x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """R runs at once: params stacked (R, ...), images x (R, B, 1, 28, 28), run r's images in row r.

    The convolutions are grouped convolutions (group r holds run r's filters; channels-last, where
    the CPU's pooling is fast), the dense layers batched matrix products. Returns (logits (R, B, 10),
    the pooled features a (R, B, 9216) and the FC-128 pre-activation (R, B, 128)).
    """
    runs, batch = x.shape[:2]
    h = x.transpose(0, 1).reshape(batch, runs, 28, 28).contiguous(memory_format=torch.channels_last)
    h = F.relu(F.conv2d(h, params["conv1.weight"].reshape(runs * 32, 1, 3, 3), params["conv1.bias"].reshape(-1), groups=runs))
    h = F.relu(F.conv2d(h, params["conv2.weight"].reshape(runs * 64, 32, 3, 3), params["conv2.bias"].reshape(-1), groups=runs))
    h = F.max_pool2d(h, 2)  # (B, R * 64, 12, 12)
    a = h.reshape(batch, runs, 9216).transpose(0, 1)  # flattened as nn.Module's flatten: (channel, row, column)
    pre = torch.baddbmm(params["fc1.bias"].unsqueeze(1), a, params[FC1].transpose(1, 2))
    logits = torch.baddbmm(params["fc2.bias"].unsqueeze(1), F.relu(pre), params["fc2.weight"].transpose(1, 2))
    return logits, a, pre


def forward(params: dict[str, torch.Tensor], x: torch.Tensor) -> torch.Tensor:
    """Logits (R, B, 10) of R runs on their images x (R, B, 1, 28, 28)."""
    return forward_parts(params, x)[0]


def cross_entropy(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """Per-image cross-entropy, written with a one-hot product (deterministic on CUDA)."""
    onehot = F.one_hot(labels, logits.shape[-1]).to(logits.dtype)
    return torch.logsumexp(logits, dim=-1) - (logits * onehot).sum(dim=-1)


# ---------------------------------------------------------------------------------------------
# Overflow threshold


def overflow_threshold(dtype: torch.dtype = torch.float32) -> float:
    """Smallest z (to the dtype's resolution) with exp(z) non-finite in dtype, by bisection on torch.exp."""
    def finite(z: float) -> bool:
        return bool(torch.isfinite(torch.exp(torch.tensor(z, dtype=dtype))))

    lo, hi = 0.0, 1.0
    while finite(hi):
        lo, hi = hi, hi * 2.0
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if mid in (lo, hi):
            break
        lo, hi = (mid, hi) if finite(mid) else (lo, mid)
    return hi


# ---------------------------------------------------------------------------------------------
# Inner maximisation and the objectives


def inner_objective(params: dict[str, torch.Tensor], z: torch.Tensor, x: torch.Tensor, y: torch.Tensor, lam: float = LAMBDA) -> torch.Tensor:
    """l(theta; z, y) - lambda ||z - x||^2 per run and image: (R, B)."""
    return cross_entropy(forward(params, z), y) - lam * (z - x).pow(2).sum(dim=(-3, -2, -1))


def inner_maximise(params: dict[str, torch.Tensor], x: torch.Tensor, y: torch.Tensor, lam: float = LAMBDA, steps: int = INNER_STEPS, trace: bool = False):
    """z* ~ argmax_z l(theta; z, y) - lambda ||z - x||^2 by Nesterov ascent from z = x (per run, image).

    params are held fixed (detached). With trace=True also returns the objective at z_0 = x, z_1, ..., z_5.
    """
    frozen = {name: p.detach() for name, p in params.items()}
    lr, momentum = INNER_LR / lam, INNER_MOMENTUM
    u, v = x.clone(), torch.zeros_like(x)
    values = []
    with torch.enable_grad():
        for _ in range(steps):
            if trace:
                values.append(inner_objective(frozen, u, x, y, lam).detach())
            z = (u + momentum * v).detach().requires_grad_(True)
            (g,) = torch.autograd.grad(inner_objective(frozen, z, x, y, lam).sum(), z)
            v = momentum * v + lr * g
            u = u + v
    u = u.detach()
    if trace:
        values.append(inner_objective(frozen, u, x, y, lam).detach())
        return u, torch.stack(values)
    return u


def baseline_loss(lhat: torch.Tensor) -> torch.Tensor:
    """(21): exp(lhat / (lambda beta)) per image."""
    return torch.exp(lhat / (LAMBDA * BETA))


def proposed_loss(lhat: torch.Tensor, alpha: torch.Tensor, rho: float = RHO) -> torch.Tensor:
    """(22): alpha + (lambda beta / rho) softplus((lhat - alpha) / (lambda beta) + ln rho) per image."""
    lb = LAMBDA * BETA
    return alpha + (lb / rho) * F.softplus((lhat - alpha) / lb + math.log(rho))


def adversarial_losses(params: dict[str, torch.Tensor], x: torch.Tensor, y: torch.Tensor, chunk: int = 200) -> torch.Tensor:
    """lhat (n,) of ONE run (params without the run axis) on n images x (n, 1, 28, 28), in image chunks.

    Evaluation loops over runs (each chunk of images is one large batch for that run's convolutions);
    only training needs the runs batched, since there each run sees a single image per step.
    """
    single = {k: v.unsqueeze(0) for k, v in params.items()}
    out = []
    for start in range(0, x.shape[0], chunk):
        xb, yb = x[start : start + chunk].unsqueeze(0), y[start : start + chunk].unsqueeze(0)
        u = inner_maximise(single, xb, yb)
        with torch.no_grad():
            out.append(inner_objective(single, u, xb, yb)[0])
    return torch.cat(out)


def objective_value(params: dict[str, torch.Tensor], x: torch.Tensor, y: torch.Tensor, chunk: int = 200) -> float:
    """F(theta) = lambda beta ln((1/n) sum_i exp(lhat_i / (lambda beta))) of one run (float64 reduction)."""
    lhat = adversarial_losses(params, x, y, chunk).double()
    lb = LAMBDA * BETA
    return float(lb * (torch.logsumexp(lhat / lb, dim=0) - math.log(lhat.shape[0])))


def accuracy(params: dict[str, torch.Tensor], x: torch.Tensor, y: torch.Tensor, chunk: int = 1000) -> float:
    """Fraction of the images whose argmax prediction is the label, for one run."""
    single = {k: v.unsqueeze(0) for k, v in params.items()}
    correct = 0
    with torch.no_grad():
        for start in range(0, x.shape[0], chunk):
            logits = forward(single, x[start : start + chunk].unsqueeze(0))[0]
            correct += int((logits.argmax(dim=-1) == y[start : start + chunk]).sum())
    return correct / x.shape[0]


# ---------------------------------------------------------------------------------------------
# The batched program


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


def run_objectives(lhat: torch.Tensor, alpha: torch.Tensor, blocks: tuple[int, int, int]) -> torch.Tensor:
    """The training loss of each run (R,) from its adversarial losses lhat (R, B): each block its method."""
    nb, npr, ne = blocks
    parts = [
        baseline_loss(lhat[:nb]).mean(dim=1),
        proposed_loss(lhat[nb : nb + npr], alpha[nb : nb + npr, None]).mean(dim=1),
        lhat[nb + npr :].mean(dim=1),  # ERM: z = x, so lhat is the plain cross-entropy
    ]
    return torch.cat(parts)


SAFE_MAGNITUDE = 1e36  # below float32's max (3.4e38) by a margin no rounding of one update can cross
BATCHED = ("params", "alpha", "lr", "fc1_bound", "max_exponent")  # state with one row per run in the batch


def _rows(mask: torch.Tensor, like: torch.Tensor) -> torch.Tensor:
    return mask.view(-1, *[1] * (like.dim() - 1))


def _max_abs(tensor: torch.Tensor) -> torch.Tensor:
    """max |entry| per run (NaN if any entry is NaN), in float64."""
    return torch.linalg.vector_norm(tensor.flatten(1), ord=math.inf, dim=1).double()


class Program:
    """R runs as one batched tensor program: stacked parameters, per-run stepsize, overflow and freeze.

    A step computes every run's gradient in one batched forward / backward. A run whose loss, gradient
    or parameters turn non-finite is recorded (its step, the exponent it reached) and frozen at its last
    finite parameters: it leaves the batch, so it costs nothing afterwards and cannot touch the others.

    The gradient of the FC-128 weight is rank one per run (batch size 1: the outer product of the
    pre-activation's gradient and the pooled features), so that weight is updated in place without
    materialising its gradient; whether its update is finite is decided by a float64 bound on max |W|,
    tightened by an exact pass whenever it cannot prove finiteness, and by the materialised update
    when that also fails.
    """

    def __init__(self, runs: Sequence[Run], master_seed: int, device: str = "cpu", keep_frozen: bool = False) -> None:
        self.runs = order_runs(runs)
        self.device = torch.device(device)
        inits = {s: init_parameters(master_seed, s) for s in sorted({r.seed for r in self.runs})}
        self.params = {name: torch.stack([inits[r.seed][name] for r in self.runs]).to(self.device) for name in PARAMETER_SHAPES}
        count = len(self.runs)
        self.rows = np.arange(count)  # run index of each batch row (block order is kept)
        self.alpha = torch.zeros(count, device=self.device)
        self.lr = torch.tensor([r.lr for r in self.runs], dtype=torch.float32, device=self.device)
        self.fc1_bound = _max_abs(self.params[FC1])
        self.max_exponent = torch.full((count,), -math.inf, device=self.device)  # of exp, or softplus's argument
        self.overflow_step = np.full(count, -1, dtype=np.int64)  # per run; -1: never
        self.overflow_exponent = np.full(count, np.nan)  # the exponent at the overflowing step
        self.final_max_exponent = np.full(count, np.nan)
        self.final_alpha = np.full(count, np.nan)
        self.keep_frozen = keep_frozen
        self.frozen: dict[int, dict[str, torch.Tensor]] = {}  # run index -> last finite parameters (keep_frozen)
        self.step_count = 0

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
            **{name: getattr(self, name).copy() for name in ("overflow_step", "overflow_exponent", "final_max_exponent", "final_alpha")},
            "frozen": {i: {k: cpu(v) for k, v in p.items()} for i, p in self.frozen.items()},
        }

    def load_state(self, state: dict[str, Any]) -> None:
        self.step_count = int(state["step"])
        self.rows = state["rows"].copy()
        self.params = {k: v.to(self.device) for k, v in state["params"].items()}
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

    # -- one SGD step of every run ---------------------------------------------------------------
    def step(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """One step of the runs in the batch: x (R, 1, 1, 28, 28) and y (R, 1), row r's image in row r."""
        nb, npr, _ = self.blocks
        dro = nb + npr
        u = x
        if dro:  # ERM runs (the last block) train on the clean image: z = x, no inner maximisation
            u = torch.cat([inner_maximise({k: p[:dro] for k, p in self.params.items()}, x[:dro], y[:dro]), x[dro:]])
        small = {k: p.detach().requires_grad_(True) for k, p in self.params.items() if k != FC1}
        alpha = self.alpha.detach().requires_grad_(True)
        logits, features, pre = forward_parts({**small, FC1: self.params[FC1]}, u)
        lhat = cross_entropy(logits, y) - LAMBDA * (u - x).pow(2).sum(dim=(-3, -2, -1))  # (R, 1)
        losses = run_objectives(lhat, alpha, (nb, npr, len(self.rows) - dro))
        grads = torch.autograd.grad(losses.sum(), [*small.values(), alpha, pre])
        self.step_count += 1
        self._update(losses.detach(), lhat.detach(), dict(zip(small, grads[:-2])), grads[-2], grads[-1], features.detach())
        return losses.detach()

    def _update(self, losses, lhat, grads, grad_alpha, grad_pre, features) -> None:
        nb, npr, _ = self.blocks
        lb = LAMBDA * BETA
        exponent = torch.cat([lhat[:nb, 0] / lb, (lhat[nb : nb + npr, 0] - self.alpha[nb : nb + npr]) / lb + math.log(RHO), torch.full_like(lhat[nb + npr :, 0], -math.inf)])
        exponent = torch.nan_to_num(exponent, nan=math.inf, posinf=math.inf, neginf=-math.inf)
        rate = self.lr
        candidate = {n: self.params[n] - _rows(rate, g) * g for n, g in grads.items()}
        candidate_alpha = self.alpha - rate * grad_alpha
        finite = torch.isfinite(losses) & torch.isfinite(candidate_alpha)
        for tensor in candidate.values():  # a non-finite gradient makes its candidate non-finite (rate > 0)
            finite &= torch.isfinite(_max_abs(tensor))
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
        zero = lambda t: torch.where(_rows(healthy, t), t, torch.zeros_like(t))  # noqa: E731
        previous = {k: v[~healthy].clone() for k, v in self.params.items()} if self.keep_frozen and not bool(healthy.all()) else None
        self.params[FC1].baddbmm_(zero(-_rows(rate, grad_pre) * grad_pre).transpose(1, 2), zero(features))
        for n, tensor in candidate.items():
            self.params[n] = torch.where(_rows(healthy, tensor), tensor, self.params[n])
        self.alpha = torch.where(healthy, candidate_alpha, self.alpha)
        self.fc1_bound = torch.where(healthy, bound, self.fc1_bound)
        if not bool(healthy.all()):
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
        for name in ("alpha", "lr", "fc1_bound", "max_exponent"):
            setattr(self, name, getattr(self, name).index_select(0, keep))
        self.rows = self.rows[healthy]

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


def evaluate(program: Program, data: Data) -> dict[str, np.ndarray]:
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


def train(
    runs: Sequence[Run],
    data: Data,
    steps: int,
    checkpoints: Sequence[int],
    master_seed: int,
    device: str = "cpu",
    checkpoint: Any = None,
    progress: Callable[[int, float], None] | None = None,
) -> dict[str, Any]:
    """Train every run for `steps` steps as one batched program, evaluating at `checkpoints` (and at
    0 and `steps`). `checkpoint` is the result store's Checkpoint (load / due / save) or None.

    The value is plain NumPy and Python (it pickles): the runs, their overflow steps, the curves at the
    checkpoints, the timings.
    """
    program = Program(runs, master_seed, device)
    marks = sorted({0, *[int(c) for c in checkpoints if 0 <= c <= steps], steps})
    curves: dict[str, list] = {"step": [], "F": [], "test_accuracy": [], "val_accuracy": [], "lhat": [], "clean_loss": []}
    n_train = data.x_train.shape[0]
    seconds = {"train": 0.0, "evaluate": 0.0}
    run_steps = 0  # run-steps computed (a frozen run computes no more)
    saved = checkpoint.load() if checkpoint is not None else None
    if saved is not None:
        program.load_state(saved["program"])
        curves, seconds, run_steps = saved["curves"], saved["seconds"], saved["run_steps"]
    unique_seeds = sorted({r.seed for r in program.runs})
    seed_row = np.array([unique_seeds.index(r.seed) for r in program.runs])
    while True:
        step = program.step_count
        if step in marks and (not curves["step"] or curves["step"][-1] < step):
            started = time.perf_counter()
            values = evaluate(program, data)
            seconds["evaluate"] += time.perf_counter() - started
            curves["step"].append(step)
            for key, value in values.items():
                curves[key].append(value)
        if step >= steps or len(program.rows) == 0:
            break
        take = min(STREAM_BLOCK - step % STREAM_BLOCK, min(m for m in marks if m > step) - step)
        streams = torch.as_tensor(np.stack([sample_indices(master_seed, s, step, take, n_train) for s in unique_seeds]), device=program.device)
        started = time.perf_counter()
        rows, row_index = None, None
        for t in range(take):
            if rows is None or len(rows) != len(program.rows):  # the batch shrinks only when a run overflows
                rows = program.rows
                row_index = torch.as_tensor(seed_row[rows], device=program.device)
            chosen = streams[row_index, t]
            run_steps += len(program.rows)
            program.step(data.x_train[chosen].unsqueeze(1), data.y_train[chosen].unsqueeze(1))
            if checkpoint is not None and checkpoint.due(program.step_count):
                so_far = {**seconds, "train": seconds["train"] + time.perf_counter() - started}
                checkpoint.save({"step": program.step_count, "program": program.state(), "curves": curves, "seconds": so_far, "run_steps": run_steps})
            if len(program.rows) == 0:
                break
        if program.device.type == "cuda":
            torch.cuda.synchronize()
        seconds["train"] += time.perf_counter() - started
        if progress is not None:
            progress(program.step_count, seconds["train"])
    program.finish()
    def stacked(key: str) -> np.ndarray:  # (runs, checkpoints, ...), NaN at checkpoints never reached
        shape = curves[key][0].shape
        rows = curves[key] + [np.full(shape, np.nan, dtype=curves[key][0].dtype)] * (len(marks) - len(curves[key]))
        return np.stack(rows, axis=1)

    return {
        "runs": [(r.method, r.lr, r.seed) for r in program.runs],
        "steps": steps,
        "overflow_step": program.overflow_step.copy(),  # -1: never
        "overflow_exponent": program.overflow_exponent.copy(),
        "max_exponent": program.final_max_exponent.copy(),
        "final_alpha": program.final_alpha.copy(),
        "curve_steps": np.array(marks),
        **{key: stacked(key) for key in ("F", "test_accuracy", "val_accuracy", "lhat", "clean_loss")},
        "seconds": dict(seconds),
        "run_steps": run_steps,
        "run_steps_per_second": run_steps / max(seconds["train"], 1e-9),
        "device": str(program.device),
        "threshold_float32": overflow_threshold(torch.float32),
    }


# ---------------------------------------------------------------------------------------------
# The explicit route: one nn.Module and torch.optim.SGD per run (reference tests, benchmark)


class SingleRun:
    """One run as the released code trains it: its own SimpleCNN, torch.optim.SGD, the inner
    maximisation written against the module, F.cross_entropy and F.softplus; it stops at the first
    non-finite loss, gradient or parameter. Independent of the batched program's code."""

    def __init__(self, run: Run, master_seed: int, device: str = "cpu") -> None:
        self.run = run
        self.model = SimpleCNN().to(device)
        with torch.no_grad():
            for name, value in init_parameters(master_seed, run.seed).items():
                self.model.get_parameter(name).copy_(value)
        self.alpha = nn.Parameter(torch.zeros(1, device=device))
        parameters = list(self.model.parameters()) + ([self.alpha] if run.method == "proposed" else [])
        self.optimizer = torch.optim.SGD(parameters, lr=run.lr)
        self.overflow_step = -1
        self.step_count = 0

    def _inner(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        self.model.requires_grad_(False)
        lr, momentum = 0.1 / LAMBDA, INNER_MOMENTUM
        u, v = x.clone(), torch.zeros_like(x)
        for _ in range(INNER_STEPS):
            z = (u + momentum * v).requires_grad_(True)
            value = F.cross_entropy(self.model(z), y, reduction="sum") - LAMBDA * ((z - x) ** 2).sum()
            (g,) = torch.autograd.grad(value, z)
            v = momentum * v + lr * g
            u = (u + v).detach()
        self.model.requires_grad_(True)
        return u

    def step(self, x: torch.Tensor, y: torch.Tensor) -> None:
        """One SGD step on one image x (1, 1, 28, 28), label y (1,); nothing once it has overflowed."""
        if self.overflow_step >= 0:
            return
        self.step_count += 1
        lb = LAMBDA * BETA
        if self.run.method == "erm":
            loss = F.cross_entropy(self.model(x), y)
        else:
            u = self._inner(x, y)
            lhat = F.cross_entropy(self.model(u), y, reduction="none") - LAMBDA * ((u - x) ** 2).sum(dim=(1, 2, 3))
            if self.run.method == "baseline":
                loss = torch.exp(lhat / lb).mean()
            else:
                loss = self.alpha[0] + (lb / RHO) * F.softplus((lhat - self.alpha[0]) / lb + math.log(RHO)).mean()
        self.optimizer.zero_grad()
        loss.backward()
        before = [p.detach().clone() for group in self.optimizer.param_groups for p in group["params"]]
        self.optimizer.step()
        params = [p for group in self.optimizer.param_groups for p in group["params"]]
        if not (torch.isfinite(loss) and all(bool(torch.isfinite(p).all()) for p in params)):
            self.overflow_step = self.step_count
            with torch.no_grad():  # frozen at the last finite parameters
                for p, old in zip(params, before):
                    p.copy_(old)

    def parameters(self) -> dict[str, torch.Tensor]:
        return {name: p.detach() for name, p in self.model.named_parameters()}


def deterministic_cuda() -> None:
    """Deterministic CUDA kernels and plain float32 (no TF32), so two nightly runs agree bit for bit.
    CUBLAS_WORKSPACE_CONFIG must be in the environment before cuBLAS starts (the nightly script sets it)."""
    import os

    os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    torch.use_deterministic_algorithms(True)
    torch.backends.cudnn.benchmark = False
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
