"""UOT-DRO (claim L6): the network (conv 32 - conv 64 - pool - FC 128 - FC 10), its keyed
initialisation, its forward pass over R runs stacked along a leading axis, and for one image per run
(a training step) its forward and backward without autograd."""

from __future__ import annotations

import math
from typing import Optional, Tuple

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch import Tensor

from kernels.seeding import key_seed
from kernels.uot_dro.batched_autograd import (
    CONV2_GROUPED,
    OneImagePerRun,
    features_backward,
    features_forward,
)


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
CLASSES = PARAMETER_SHAPES["fc2.bias"][0]  # the logits' width
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


FEATURE_PARAMETERS = ("conv1.weight", "conv1.bias", "conv2.weight", "conv2.bias", FC1, "fc1.bias")


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
        weights = (params[name] for name in FEATURE_PARAMETERS)
        pre, a = OneImagePerRun.apply(x, *weights, params.get(CONV2_GROUPED))
        return a, pre
    return features_grouped(params, x)


def features_grouped(params: dict[str, torch.Tensor], x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(a, pre) by grouped convolutions (group r holds run r's filters; channels-last), the pool of
    max_pool2d and a batched matrix product, differentiated by autograd: any B."""
    runs, batch = x.shape[:2]
    h = x.transpose(0, 1).reshape(batch, runs, 28, 28).contiguous(memory_format=torch.channels_last)
    h = F.relu(
        F.conv2d(h, params["conv1.weight"].reshape(runs * 32, 1, 3, 3), params["conv1.bias"].reshape(-1), groups=runs)
    )
    # with one input channel "channels-last" is also the default layout, and conv1 returns the default one:
    # conv2 and its backward ran 1.9 times slower on it than on channels-last (measured at 200 images)
    h = h.contiguous(memory_format=torch.channels_last)
    h = F.conv2d(h, params["conv2.weight"].reshape(runs * 64, 32, 3, 3), params["conv2.bias"].reshape(-1), groups=runs)
    h = F.relu(F.max_pool2d(h, 2))  # (B, R * 64, 12, 12); ReLU after the pool (they commute), on a quarter
    a = h.reshape(batch, runs, 9216).transpose(0, 1)  # flattened as nn.Module's flatten: (channel, row, column)
    return a, torch.baddbmm(params["fc1.bias"].unsqueeze(1), a, params[FC1].transpose(1, 2))


def forward(params: dict[str, torch.Tensor], x: torch.Tensor) -> torch.Tensor:
    """Logits (R, B, 10) of R runs on their images x (R, B, 1, 28, 28)."""
    return forward_parts(params, x)[0]


def one_hot(labels: Tensor, classes: int, dtype: torch.dtype) -> Tensor:
    """The labels' one-hot rows (..., classes), by a comparison: it needs no check of the labels' range and
    so no host synchronisation on CUDA."""
    return (labels.unsqueeze(-1) == torch.arange(classes, device=labels.device)).to(dtype)


def cross_entropy(logits: Tensor, labels: Tensor, onehot: Optional[Tensor] = None) -> Tensor:
    """Per-image cross-entropy, written with a one-hot product (deterministic on CUDA); `onehot`, the labels'
    one-hot if made already."""
    if onehot is None:
        onehot = one_hot(labels, logits.shape[-1], logits.dtype)
    return torch.logsumexp(logits, dim=-1) - (logits * onehot).sum(dim=-1)


def cross_entropy_gradient(logits: Tensor, labels: Tensor, onehot: Optional[Tensor] = None) -> Tensor:
    """d cross_entropy / d logits: softmax(logits) - onehot(labels) (what autograd computes for cross_entropy
    above, to rounding); `onehot`, the labels' one-hot if a loop over the same labels has made it once."""
    if onehot is None:
        onehot = one_hot(labels, logits.shape[-1], logits.dtype)
    return torch.softmax(logits, dim=-1).sub_(onehot)


# One image per run (a training step) without autograd: the step's gradients are a fixed chain of a few
# products, and at batch 1 autograd's bookkeeping (graph nodes, the engine, the cross-entropy's and the
# FC-10's generic backward ops) measured about a third of an inner ascent step


def head_forward(pre: Tensor, wo: Tensor, bo: Tensor) -> Tuple[Tensor, Tensor]:
    """(hidden = relu(pre), logits) of the FC-128 pre-activation pre (R, 1, 128), FC-10 stacked (wo, bo)."""
    hidden = F.relu(pre)
    return hidden, torch.baddbmm(bo.unsqueeze(1), hidden, wo.transpose(1, 2))


def head_backward(g_logits: Tensor, hidden: Tensor, wo: Tensor) -> Tensor:
    """The FC-128 pre-activation's gradient from the logits' g_logits (R, 1, 10), through FC-10 and the ReLU."""
    return torch.ops.aten.threshold_backward(torch.bmm(g_logits, wo), hidden, 0)


def one_image_forward(params: dict[str, torch.Tensor], x: torch.Tensor):
    """(logits (R, 1, 10), hidden = relu(pre) (R, 1, 128), a (R, 1, 9216), saved) of R runs on one image
    each, x (R, 1, 1, 28, 28); `saved` is what one_image_backward needs. Outside autograd."""
    pre, a, saved = features_forward(x, *(params[name] for name in FEATURE_PARAMETERS), params.get(CONV2_GROUPED))
    hidden, logits = head_forward(pre, params["fc2.weight"], params["fc2.bias"])
    return logits, hidden, a, saved


def one_image_backward(
    params: dict[str, torch.Tensor], hidden: torch.Tensor, saved: list, g_logits: torch.Tensor, wanted: set[str]
) -> dict[str, torch.Tensor]:
    """The gradients named in `wanted` ("x"; "pre", the FC-128 pre-activation's, whose outer product with a
    is FC1's weight gradient; the other parameters' names) from the logits' gradient g_logits (R, 1, 10),
    after one_image_forward: "x" (R, 1, 1, 28, 28), "pre" (R, 1, 128), each parameter stacked."""
    out = {}
    if "fc2.weight" in wanted:
        out["fc2.weight"] = torch.bmm(g_logits.transpose(1, 2), hidden)
    if "fc2.bias" in wanted:
        out["fc2.bias"] = g_logits.sum(1)
    g_pre = head_backward(g_logits, hidden, params["fc2.weight"])
    if "pre" in wanted:
        out["pre"] = g_pre
    names = ("x", *FEATURE_PARAMETERS)
    grads = features_backward(saved, g_pre, [name in wanted for name in names])
    out.update((name, g) for name, g in zip(names, grads) if name in wanted)
    return out


def one_image_loss_input_gradient(
    z: Tensor,
    onehot: Tensor,
    w1: Tensor,
    b1: Tensor,
    w2: Tensor,
    b2: Tensor,
    wf: Tensor,
    bf: Tensor,
    wo: Tensor,
    bo: Tensor,
) -> Tensor:
    """d cross_entropy(forward(params, z), labels) / d z (R, 1, 1, 28, 28) for one image per run (the inner
    maximisation's gradient less its penalty's): one_image_forward and one_image_backward's steps for the
    image alone, from the labels' one-hot, the parameters in FEATURE_PARAMETERS' order (conv2's as
    grouped_conv2_weight) and FC-10's (wo, bo). Compiled by TorchScript on the CPU (kernels.uot_dro.compiled)."""
    pre, a, saved = features_forward(z, w1, b1, w2, b2, wf, bf, w2)
    hidden, logits = head_forward(pre, wo, bo)
    g_logits = cross_entropy_gradient(logits, onehot, onehot)  # the labels are not read when their one-hot is given
    g_pre = head_backward(g_logits, hidden, wo)
    g_z = features_backward(saved, g_pre, [True, False, False, False, False, False, False])[0]
    assert g_z is not None  # asked for: refines the Optional for TorchScript
    return g_z
