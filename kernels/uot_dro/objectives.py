"""UOT-DRO (claim L6): the adversarial loss (the inner Nesterov maximisation), objectives (21) and
(22), the per-run training losses of a batch, the evaluation losses and accuracy, and float32's
overflow threshold."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from kernels.uot_dro import compiled
from kernels.uot_dro.batched_autograd import CONV2_GROUPED, grouped_conv2_weight
from kernels.uot_dro.model import CLASSES, FEATURE_PARAMETERS, cross_entropy, forward, one_hot

LAMBDA = 1.0
BETA = 1.0
RHO = 0.1
INNER_STEPS = 5
INNER_MOMENTUM = 0.4
INNER_LR = 0.1  # divided by lambda


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


def inner_objective(
    params: dict[str, torch.Tensor], z: torch.Tensor, x: torch.Tensor, y: torch.Tensor, lam: float = LAMBDA
) -> torch.Tensor:
    """l(theta; z, y) - lambda ||z - x||^2 per run and image: (R, B)."""
    return cross_entropy(forward(params, z), y) - lam * (z - x).pow(2).sum(dim=(-3, -2, -1))


def inner_gradient(
    params: dict[str, torch.Tensor],
    z: torch.Tensor,
    x: torch.Tensor,
    y: torch.Tensor,
    lam: float = LAMBDA,
    onehot: torch.Tensor | None = None,
) -> torch.Tensor:
    """d inner_objective / d z (R, B, 1, 28, 28), params held fixed: for one image per run written out
    (the network's backward to its input, by TorchScript on the CPU (kernels.uot_dro.compiled), less
    2 lambda (z - x); `onehot`, y's one-hot if made already), for many by autograd."""
    if z.shape[1] == 1:
        if onehot is None:
            onehot = one_hot(y, CLASSES, z.dtype)
        grouped = params.get(CONV2_GROUPED)
        if grouped is None:
            grouped = grouped_conv2_weight(params["conv2.weight"])
        names = (*FEATURE_PARAMETERS, "fc2.weight", "fc2.bias")
        weights = [grouped if name == "conv2.weight" else params[name] for name in names]
        g_z = compiled.one_image_loss_input_gradient(z, onehot, *weights)
        return g_z.sub_(z - x, alpha=2 * lam)
    z = z.detach().requires_grad_(True)
    with torch.enable_grad():
        (g,) = torch.autograd.grad(inner_objective(params, z, x, y, lam).sum(), z)
    return g


def inner_maximise(
    params: dict[str, torch.Tensor],
    x: torch.Tensor,
    y: torch.Tensor,
    lam: float = LAMBDA,
    steps: int = INNER_STEPS,
    trace: bool = False,
):
    """z* ~ argmax_z l(theta; z, y) - lambda ||z - x||^2 by Nesterov ascent from z = x (per run, image).

    params are held fixed (detached; conv2's grouped weight prepared once for the steps). With trace=True
    also returns the objective at z_0 = x, z_1, ..., z_5.
    """
    frozen = {name: p.detach() for name, p in params.items()}
    frozen[CONV2_GROUPED] = grouped_conv2_weight(frozen["conv2.weight"])
    onehot = one_hot(y, CLASSES, x.dtype) if x.shape[1] == 1 else None
    lr, momentum = INNER_LR / lam, INNER_MOMENTUM
    u, v = x.clone(), torch.zeros_like(x)
    values = []
    for _ in range(steps):
        if trace:
            values.append(inner_objective(frozen, u, x, y, lam).detach())
        g = inner_gradient(frozen, torch.add(u, v, alpha=momentum), x, y, lam, onehot)  # at the look-ahead point
        v.mul_(momentum).add_(g, alpha=lr)  # v = momentum v + lr g
        u.add_(v)
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
    params: dict[str, torch.Tensor], x: torch.Tensor, y: torch.Tensor, chunk: int = 100
) -> torch.Tensor:
    """lhat (n,) of ONE run (params without the run axis) on n images x (n, 1, 28, 28), in image chunks.

    Evaluation loops over runs (each chunk of images is one large batch for that run's convolutions);
    only training needs the runs batched, since there each run sees a single image per step. Chunks
    of 100 images keep a chunk's feature maps (15 MB) near the cache: 1000-image chunks made evaluation
    2-3 times slower per image.
    """
    single = {k: v.unsqueeze(0) for k, v in params.items()}
    out = []
    for start in range(0, x.shape[0], chunk):
        xb, yb = x[start : start + chunk].unsqueeze(0), y[start : start + chunk].unsqueeze(0)
        u = inner_maximise(single, xb, yb)
        with torch.no_grad():
            out.append(inner_objective(single, u, xb, yb)[0])
    return torch.cat(out)


def accuracy(params: dict[str, torch.Tensor], x: torch.Tensor, y: torch.Tensor, chunk: int = 100) -> float:
    """Fraction of the images whose argmax prediction is the label, for one run."""
    single = {k: v.unsqueeze(0) for k, v in params.items()}
    correct = 0
    with torch.no_grad():
        for start in range(0, x.shape[0], chunk):
            logits = forward(single, x[start : start + chunk].unsqueeze(0))[0]
            correct += int((logits.argmax(dim=-1) == y[start : start + chunk]).sum())
    return correct / x.shape[0]


def run_objectives(lhat: torch.Tensor, alpha: torch.Tensor, blocks: tuple[int, int, int]) -> torch.Tensor:
    """The training loss of each run (R,) from its adversarial losses lhat (R, B): each block its method."""
    nb, npr, ne = blocks
    parts = []  # a block without runs is left out: at batch 1 its operations and their backward cost as much
    if nb:  # as a full block's
        parts.append(baseline_loss(lhat[:nb]).mean(dim=1))
    if npr:
        parts.append(proposed_loss(lhat[nb : nb + npr], alpha[nb : nb + npr, None]).mean(dim=1))
    if ne:
        parts.append(lhat[nb + npr :].mean(dim=1))  # ERM: z = x, so lhat is the plain cross-entropy
    return torch.cat(parts)
