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
stacked along a leading axis and a step is batched forward / backward passes over all R runs, each on
its own image: the convolutions as batched matrix products with a hand-written backward that computes
only the gradients asked for (`_OneImagePerRun`; evaluation, with many images per run, uses grouped
convolutions under autograd). On the CPU the runs are taken in groups of RUN_GROUP, so that a group's
FC-128 weights (4.7 MB a run, read 13 times per DRO step) are still in cache when read again. A run
whose loss, gradient or parameters become non-finite is recorded as overflowed at that step and frozen
at its last finite parameters; the other runs never see it. CPU and CUDA.
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
RUN_GROUP = 4  # CPU: about this many runs' gradients are computed together (their FC-128 weights, 19 MB, stay
# in cache through the inner maximisation): at R = 24 all at once was 7 % slower, groups of 2 or 8 4-13 %
# slower; a group is not split off for one run (R = 5, the full tier's program: one group, 10 % faster)


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
        draws = np.random.default_rng(
            key_seed(f"{master_seed}|uot-dro|stream|seed={seed}|n={n}|block={block}")
        ).integers(0, n, STREAM_BLOCK)
        take = min(count - filled, STREAM_BLOCK - offset)
        out[filled : filled + take] = draws[offset : offset + take]
        filled += take
    return out


def forward_parts(params: dict[str, torch.Tensor], x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """R runs at once: params stacked (R, ...), images x (R, B, 1, 28, 28), run r's images in row r.

    Returns (logits (R, B, 10), the pooled features a (R, B, 9216) and the FC-128 pre-activation
    (R, B, 128)).
    """
    a, pre = forward_features(params, x)
    logits = torch.baddbmm(params["fc2.bias"].unsqueeze(1), F.relu(pre), params["fc2.weight"].transpose(1, 2))
    return logits, a, pre


def forward_features(params: dict[str, torch.Tensor], x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(a, pre) of R runs on their images x (R, B, 1, 28, 28). One image per run (B = 1: a training
    step) goes through the one-image-per-run program below (batched matrix products, its own backward);
    many (B > 1: evaluation, one run on a chunk of images) through features_grouped, where a run's
    filters see the B images at once."""
    if x.shape[1] == 1:
        weights = (
            params[name] for name in ("conv1.weight", "conv1.bias", "conv2.weight", "conv2.bias", FC1, "fc1.bias")
        )
        pre, a = _OneImagePerRun.apply(x, *weights, params.get(CONV2_TAPS))
        return a, pre
    return features_grouped(params, x)


def features_grouped(params: dict[str, torch.Tensor], x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(a, pre) by grouped convolutions (group r holds run r's filters; channels-last, where the CPU's
    pooling is fast) and a batched matrix product, differentiated by autograd: any B."""
    runs, batch = x.shape[:2]
    h = x.transpose(0, 1).reshape(batch, runs, 28, 28).contiguous(memory_format=torch.channels_last)
    h = F.relu(
        F.conv2d(h, params["conv1.weight"].reshape(runs * 32, 1, 3, 3), params["conv1.bias"].reshape(-1), groups=runs)
    )
    h = F.relu(
        F.conv2d(h, params["conv2.weight"].reshape(runs * 64, 32, 3, 3), params["conv2.bias"].reshape(-1), groups=runs)
    )
    h = F.max_pool2d(h, 2)  # (B, R * 64, 12, 12)
    a = h.reshape(batch, runs, 9216).transpose(0, 1)  # flattened as nn.Module's flatten: (channel, row, column)
    return a, torch.baddbmm(params["fc1.bias"].unsqueeze(1), a, params[FC1].transpose(1, 2))


# The one-image-per-run program. Each run's activations are channels-last matrices (positions x
# channels), so a 3x3 convolution is a sum of nine batched matrix products, one per tap, each taking
# the input rows shifted by that tap's offset (the "wide row" form: an image row keeps its full
# input width, the columns past the valid output are computed and never read). No im2col copy; the
# pooling and its gradient run over contiguous channel vectors.
#
#   x (R, 28, 28) -> conv1 + ReLU: h1 (R, 26 * 26, 32), rows 26 wide
#                 -> conv2: c2 (R, 622, 64), rows 26 wide (622 = 23 * 26 + 24: the last valid position + 1)
#                 -> 2x2 max-pool + ReLU (ReLU and max commute): m (R, 12, 12, 64) -> a (R, 1, 9216) in
#                    nn.Module's flatten order (channel, row, column) -> FC-128: pre (R, 1, 128)
#
# The backward sends the pool's gradient to the first maximum of each window in scan order, as
# max_pool2d does, into a zero-bordered 28 x 28 plane, from which conv2's input gradient is the full
# correlation with the flipped filters (again nine shifted products, rows 28 wide); it computes only
# the gradients asked for (the inner maximisation asks for the input's alone).

CONV2_TAPS = "conv2.taps"  # optional params entry: conv2_taps(conv2.weight), prepared once for many calls
# Zero-bordered gradient planes, reused (only the interior is written): a fresh zeroed plane per backward
# measured 9-13 % slower at R = 24 (new pages on every call)
_PLANES: dict[tuple, torch.Tensor] = {}


def conv2_taps(weight: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """conv2's filters (R, 64, 32, 3, 3) as per-tap matrices: (9, R, 32, 64) for the forward product and
    (9, R, 64, 32) for the input gradient, tap t = 3 kh + kw."""
    runs = weight.shape[0]
    return (
        weight.permute(3, 4, 0, 2, 1).contiguous().view(9, runs, 32, 64),
        weight.permute(3, 4, 0, 1, 2).contiguous().view(9, runs, 64, 32),
    )


def _shifted(t: torch.Tensor, rows: int, width: int) -> list[torch.Tensor]:
    """The nine views t[:, off : off + rows] (off = kh * width + kw, tap order) of t (R, P, C) contiguous."""
    runs, _, channels = t.shape
    v = t.as_strided(
        (3, 3, runs, rows, channels), (width * channels, channels, t.stride(0), channels, 1), t.storage_offset()
    )
    return [tap for row in v.unbind(0) for tap in row.unbind(0)]


def _windows(t: torch.Tensor, width: int, offset: int = 0) -> torch.Tensor:
    """The 2x2 pooling windows (R, 12, 2, 12, 2, 64) of a 24 x 24 x 64 map stored with rows `width` wide."""
    runs = t.shape[0]
    row = width * 64
    return t.as_strided(
        (runs, 12, 2, 12, 2, 64), (t.stride(0), 2 * row, row, 128, 64, 1), t.storage_offset() + offset * 64
    )


def _gradient_plane(runs: int, like: torch.Tensor) -> torch.Tensor:
    key = (runs, like.dtype, like.device)
    plane = _PLANES.get(key)
    if plane is None:
        if len(_PLANES) >= 16:
            _PLANES.clear()
        plane = _PLANES[key] = torch.zeros(runs, 28 * 28, 64, dtype=like.dtype, device=like.device)
    return plane


class _OneImagePerRun(torch.autograd.Function):
    """(pre, a) of R runs on one image each: x (R, 1, 1, 28, 28), parameters stacked (R, ...)."""

    @staticmethod
    def forward(ctx, x, w1, b1, w2, b2, wf, bf, taps):  # noqa: D102
        runs = x.shape[0]
        cols = x.reshape(runs, 28, 28).unfold(1, 26, 1).unfold(2, 26, 1).reshape(runs, 9, 676)
        h1 = torch.baddbmm(b1.unsqueeze(1), cols.transpose(1, 2), w1.view(runs, 32, 9).transpose(1, 2)).relu_()
        forward_taps, backward_taps = taps if taps is not None else conv2_taps(w2)
        products = zip(_shifted(h1, 622, 26), forward_taps.unbind(0))
        h, w = next(products)
        c2 = torch.baddbmm(b2.unsqueeze(1), h, w)
        for h, w in products:
            c2.baddbmm_(h, w)
        win = _windows(c2, 26)
        m = torch.maximum(
            torch.maximum(win[:, :, 0, :, 0], win[:, :, 0, :, 1]), torch.maximum(win[:, :, 1, :, 0], win[:, :, 1, :, 1])
        )
        a = m.view(runs, 144, 64).transpose(1, 2).relu().reshape(runs, 1, 9216)
        pre = torch.baddbmm(bf.unsqueeze(1), a, wf.transpose(1, 2))
        ctx.save_for_backward(cols, h1, c2, m, a, w1, wf, backward_taps)
        ctx.mark_non_differentiable(a)
        return pre, a

    @staticmethod
    def backward(ctx, g_pre, _):  # noqa: D102
        cols, h1, c2, m, a, w1, wf, backward_taps = ctx.saved_tensors
        need_x, need_w1, need_b1, need_w2, need_b2, need_wf, need_bf, _ = ctx.needs_input_grad
        runs = h1.shape[0]
        g_x = g_w1 = g_b1 = g_w2 = g_b2 = g_wf = g_bf = None
        if need_bf:
            g_bf = g_pre.sum(1)
        if need_wf:
            g_wf = torch.bmm(g_pre.transpose(1, 2), a)
        if not (need_x or need_w1 or need_b1 or need_w2 or need_b2):
            return g_x, g_w1, g_b1, g_w2, g_b2, g_wf, g_bf, None
        g_a = torch.ops.aten.threshold_backward(torch.bmm(g_pre, wf), a, 0)  # through the ReLU after the pool
        if need_b2:
            g_b2 = g_a.view(runs, 64, 144).sum(2)
        # the pool: each window's gradient goes to its first maximum in scan order (max_pool2d's choice);
        # rest * sign(m - value) keeps rest where the value is below the maximum and zeroes it where it is one
        plane = _gradient_plane(runs, c2)
        slots, win = _windows(plane, 28, offset=2 * 28 + 2), _windows(c2, 26)
        rest = g_a.view(runs, 64, 144).transpose(1, 2).contiguous().view(runs, 12, 12, 64)
        for di, dj in ((0, 0), (0, 1), (1, 0)):
            later = rest * torch.sign(m - win[:, :, di, :, dj])
            torch.sub(rest, later, out=slots[:, :, di, :, dj])
            rest = later
        slots[:, :, 1, :, 1] = rest
        if need_w2:  # sum over the valid positions of (input at the tap's offset) x (gradient), per tap
            g_c2 = torch.zeros_like(c2)
            g_c2.as_strided((runs, 24, 24, 64), (c2.stride(0), 26 * 64, 64, 1)).copy_(
                plane.view(runs, 28, 28, 64)[:, 2:26, 2:26]
            )
            g_w2 = torch.stack([torch.bmm(g_c2.transpose(1, 2), h) for h in _shifted(h1, 622, 26)], dim=-1).view(
                runs, 64, 32, 3, 3
            )
        if need_x or need_w1 or need_b1:
            # tap (kh, kw) reads offset (2 - kh, 2 - kw)
            products = zip(reversed(_shifted(plane, 726, 28)), backward_taps.unbind(0))
            g, w = next(products)
            g_h1 = torch.bmm(g, w)  # (R, 726, 32), rows 28 wide
            for g, w in products:
                g_h1.baddbmm_(g, w)
            g_h1 = g_h1.as_strided((runs, 26, 26, 32), (g_h1.stride(0), 28 * 32, 32, 1))
            g_h1 = torch.ops.aten.threshold_backward(g_h1, h1.view(runs, 26, 26, 32), 0).view(runs, 676, 32)
            if need_b1:
                g_b1 = g_h1.sum(1)
            if need_w1:
                g_w1 = torch.bmm(g_h1.transpose(1, 2), cols.transpose(1, 2)).view(runs, 32, 1, 3, 3)
            if need_x:
                g_cols = torch.bmm(w1.view(runs, 32, 9).transpose(1, 2), g_h1.transpose(1, 2))  # (R, 9, 676)
                g_x = F.fold(g_cols, (28, 28), 3).view(runs, 1, 1, 28, 28)
        return g_x, g_w1, g_b1, g_w2, g_b2, g_wf, g_bf, None


def forward(params: dict[str, torch.Tensor], x: torch.Tensor) -> torch.Tensor:
    """Logits (R, B, 10) of R runs on their images x (R, B, 1, 28, 28)."""
    return forward_parts(params, x)[0]


def cross_entropy(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """Per-image cross-entropy, written with a one-hot product (deterministic on CUDA; the one-hot by a
    comparison, which needs no check of the labels' range and so no host synchronisation)."""
    onehot = (labels.unsqueeze(-1) == torch.arange(logits.shape[-1], device=labels.device)).to(logits.dtype)
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


def inner_objective(
    params: dict[str, torch.Tensor], z: torch.Tensor, x: torch.Tensor, y: torch.Tensor, lam: float = LAMBDA
) -> torch.Tensor:
    """l(theta; z, y) - lambda ||z - x||^2 per run and image: (R, B)."""
    return cross_entropy(forward(params, z), y) - lam * (z - x).pow(2).sum(dim=(-3, -2, -1))


def inner_maximise(
    params: dict[str, torch.Tensor],
    x: torch.Tensor,
    y: torch.Tensor,
    lam: float = LAMBDA,
    steps: int = INNER_STEPS,
    trace: bool = False,
):
    """z* ~ argmax_z l(theta; z, y) - lambda ||z - x||^2 by Nesterov ascent from z = x (per run, image).

    params are held fixed (detached; conv2's per-tap filters prepared once for the steps). With trace=True
    also returns the objective at z_0 = x, z_1, ..., z_5.
    """
    frozen = {name: p.detach() for name, p in params.items()}
    frozen[CONV2_TAPS] = conv2_taps(frozen["conv2.weight"])
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


def adversarial_losses(
    params: dict[str, torch.Tensor], x: torch.Tensor, y: torch.Tensor, chunk: int = 200
) -> torch.Tensor:
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
    """max |entry| per run (NaN if any entry is NaN), in float64."""
    return torch.linalg.vector_norm(tensor.flatten(1), ord=math.inf, dim=1).double()


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
        small = {k: p.detach().requires_grad_(True) for k, p in params.items() if k != FC1}
        alpha = self.alpha[start:stop].detach().requires_grad_(True)
        logits, features, pre = forward_parts({**small, FC1: params[FC1]}, u)
        lhat = cross_entropy(logits, y) - LAMBDA * (u - x).pow(2).sum(dim=(-3, -2, -1))  # (rows, 1)
        losses = run_objectives(lhat, alpha, blocks)
        grads = torch.autograd.grad(losses.sum(), [*small.values(), alpha, pre])
        return losses.detach(), lhat.detach(), dict(zip(small, grads[:-2])), grads[-2], grads[-1], features.detach()

    def _update(self, losses, lhat, grads, grad_alpha, grad_pre, features) -> None:
        nb, npr, _ = self.blocks
        lb = LAMBDA * BETA
        exponent = torch.cat(
            [
                lhat[:nb, 0] / lb,
                (lhat[nb : nb + npr, 0] - self.alpha[nb : nb + npr]) / lb + math.log(RHO),
                torch.full_like(lhat[nb + npr :, 0], -math.inf),
            ]
        )
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
        previous = (
            {k: v[~healthy].clone() for k, v in self.params.items()}
            if self.keep_frozen and not bool(healthy.all())
            else None
        )
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
    curves, seconds = progress_so_far["curves"], progress_so_far["seconds"]
    unique_seeds = sorted({r.seed for r in program.runs})
    while True:
        step = program.step_count
        if step in marks and (not curves["step"] or curves["step"][-1] < step):
            started = time.perf_counter()
            values = evaluate(program, data)
            seconds["evaluate"] += time.perf_counter() - started
            for key, value in {"step": step, **values}.items():
                curves[key].append(value)
        if step >= steps or len(program.rows) == 0:
            break
        take = min(STREAM_BLOCK - step % STREAM_BLOCK, min(m for m in marks if m > step) - step)
        streams = torch.as_tensor(
            np.stack([sample_indices(master_seed, s, step, take, data.x_train.shape[0]) for s in unique_seeds]),
            device=program.device,
        )
        started = time.perf_counter()
        _train_block(program, data, streams, unique_seeds, progress_so_far, started, checkpoint)
        if program.device.type == "cuda":
            torch.cuda.synchronize()
        seconds["train"] += time.perf_counter() - started
        if progress is not None:
            progress(program.step_count, seconds["train"])
    program.finish()
    return _trained(program, marks, progress_so_far)


CURVES = ("step", "F", "test_accuracy", "val_accuracy", "lhat", "clean_loss")  # what train records per checkpoint


def _train_block(
    program: Program, data: Data, streams: torch.Tensor, unique_seeds: list, so_far: dict, started: float, checkpoint
) -> None:
    """The steps of one block of sample streams (every active run; a run that overflows leaves the
    batch), saving the checkpoint where it is due; `so_far["run_steps"]` counts the run-steps computed."""
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
            seconds = {**so_far["seconds"], "train": so_far["seconds"]["train"] + time.perf_counter() - started}
            checkpoint.save({"step": program.step_count, "program": program.state(), **so_far, "seconds": seconds})
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
