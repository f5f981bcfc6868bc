"""UOT-DRO (claim L6): the one-image-per-run forward and hand-written backward of the network's
feature layers, R runs at once (grouped convolutions of a batch of one; only the gradients asked for)."""

from __future__ import annotations

from typing import List, Optional, Tuple

import torch
import torch.nn.functional as F
from torch import Tensor

# The one-image-per-run program: R runs, each on its own image, as grouped convolutions on a batch of
# one (group r holds run r's filters), channels-last throughout, with a hand-written backward that asks
# each convolution's backward for only the gradients wanted (the inner maximisation wants the input's
# alone). oneDNN's grouped convolution of one image measured 0.12-0.14 ms a run for conv2 forward or
# input gradient on one thread, against 0.26 ms for the nine shifted per-tap matrix products this
# program used before (benchmarks/bench_uot_dro_step.py), and it grows linearly in R.
#
#   x (R, 28, 28) -> conv1 + ReLU: h1 (1, R * 32, 26, 26), channels-last
#                 -> conv2: c2 (1, R * 64, 24, 24), channels-last, i.e. memory (24, 24, R * 64)
#                 -> 2x2 max-pool + ReLU (ReLU and max commute): a (R, 1, 9216) in nn.Module's flatten order
#                    (channel, row, column) -> FC-128: pre (R, 1, 128)
#
# The backward sends the pool's gradient to the first maximum of each window in scan order (max_pool2d's
# indices), then through the two convolutions' backward.

CONV2_GROUPED = "conv2.grouped"  # optional params entry: grouped_conv2_weight(conv2.weight), prepared once

# The functions below are written in the subset of Python that TorchScript compiles (kernels.uot_dro.compiled).


def grouped_conv2_weight(weight: Tensor) -> Tensor:
    """conv2's filters (R, 64, 32, 3, 3) as one grouped convolution's weight (R * 64, 32, 3, 3), channels-last
    (the input's layout: a default-layout weight measured 5-8 % slower a pass)."""
    return weight.reshape(-1, 32, 3, 3).contiguous(memory_format=torch.channels_last)


def features_forward(
    x: Tensor, w1: Tensor, b1: Tensor, w2: Tensor, b2: Tensor, wf: Tensor, bf: Tensor, w2_grouped: Optional[Tensor]
) -> Tuple[Tensor, Tensor, List[Tensor]]:
    """(pre, a, saved) of R runs on one image each, x (R, 1, 1, 28, 28), parameters stacked (R, ...),
    w2_grouped grouped_conv2_weight(w2) or None; `saved` is what features_backward needs. No autograd."""
    runs = x.shape[0]
    x = x.reshape(1, runs, 28, 28).contiguous(memory_format=torch.channels_last)
    w1 = w1.reshape(runs * 32, 1, 3, 3)
    h1 = F.conv2d(x, w1, b1.reshape(-1), groups=runs).relu_().contiguous(memory_format=torch.channels_last)
    w2 = grouped_conv2_weight(w2) if w2_grouped is None else w2_grouped
    c2 = F.conv2d(h1, w2, groups=runs)  # (1, R * 64, 24, 24), without the bias: added after the pool
    # on channels-last maps max_pool2d_with_indices and its backward measured 10 and 16 us for one image,
    # against 30 and 80 us for four strided maxima and a hand-written routing of the gradient
    m, argmax = F.max_pool2d_with_indices(c2, 2)
    # conv2's bias (one number a channel) commutes with the pool, as ReLU does: added to a quarter of the
    # entries it measured 16 us less a pass than inside the convolution
    a = m.contiguous().add_(b2.reshape(1, -1, 1, 1)).relu_().view(runs, 1, 9216)  # in flatten order
    pre = torch.baddbmm(bf.unsqueeze(1), a, wf.transpose(1, 2))
    return pre, a, [x, h1, c2, argmax, a, w1, w2, wf]


def features_backward(saved: List[Tensor], g_pre: Tensor, needs: List[bool]) -> List[Optional[Tensor]]:
    """The gradients [x, w1, b1, w2, b2, wf, bf] (None where `needs` says False) of features_forward's
    inputs, from the gradient g_pre (R, 1, 128) of its FC-128 pre-activation. No autograd."""
    x, h1, c2, argmax, a, w1, w2, wf = saved[0], saved[1], saved[2], saved[3], saved[4], saved[5], saved[6], saved[7]
    need_x, need_w1, need_b1, need_w2, need_b2 = needs[0], needs[1], needs[2], needs[3], needs[4]
    runs = a.shape[0]
    grads: List[Optional[Tensor]] = [None, None, None, None, None, None, None]
    if needs[6]:
        grads[6] = g_pre.sum(1)
    if needs[5]:
        grads[5] = torch.bmm(g_pre.transpose(1, 2), a)
    need_h1 = need_x or need_w1 or need_b1
    if not (need_h1 or need_w2 or need_b2):
        return grads
    g_a = torch.ops.aten.threshold_backward(torch.bmm(g_pre, wf), a, 0)  # through the ReLU after the pool
    # conv2's bias is added after the pool: its gradient sums the pooled maps' gradient (3 us, against 20 us
    # for convolution_backward's sum over the full maps)
    if need_b2:
        grads[4] = g_a.view(runs, 64, 144).sum(2)
    # the pool: each window's gradient to its first maximum in scan order (max_pool2d's indices). Its
    # backward is given the gradient in the maps' layout (channels-last): given the flatten order's layout it
    # measured 84 us for one image, converting its maps, against 16 us (+ 5 us for this conversion)
    channels = runs * 64
    g_a = g_a.view(1, channels, 12, 12).contiguous(memory_format=torch.channels_last)
    g_c2 = torch.ops.aten.max_pool2d_with_indices_backward(g_a, c2, [2, 2], [2, 2], [0, 0], [1, 1], False, argmax)
    if need_w2:
        g_w2 = torch.ops.aten.convolution_backward(
            g_c2, h1, w2, [channels], [1, 1], [0, 0], [1, 1], False, [0, 0], runs, [False, True, False]
        )[1]
        grads[3] = g_w2.view(runs, 64, 32, 3, 3).contiguous()  # the parameter's layout
    if need_h1:  # conv2's input gradient as the transposed convolution it is: for one run it measured 129 us
        # against 146 us from convolution_backward (the same numbers; the same time for a group of four runs)
        g_h1 = torch.ops.aten.threshold_backward(F.conv_transpose2d(g_c2, w2, groups=runs), h1, 0)
        g_x, g_w1, g_b1 = torch.ops.aten.convolution_backward(
            g_h1, x, w1, [runs * 32], [1, 1], [0, 0], [1, 1], False, [0, 0], runs, [need_x, need_w1, need_b1]
        )
        if need_x:
            grads[0] = g_x.reshape(runs, 1, 1, 28, 28)
        if need_w1:
            grads[1] = g_w1.view(runs, 32, 1, 3, 3)
        if need_b1:
            grads[2] = g_b1.view(runs, 32)
    return grads


class OneImagePerRun(torch.autograd.Function):
    """(pre, a) of R runs on one image each under autograd: features_forward and features_backward."""

    @staticmethod
    def forward(ctx, x, w1, b1, w2, b2, wf, bf, w2_grouped):  # noqa: D102
        pre, a, saved = features_forward(x, w1, b1, w2, b2, wf, bf, w2_grouped)
        ctx.save_for_backward(*saved)
        ctx.mark_non_differentiable(a)
        return pre, a

    @staticmethod
    def backward(ctx, g_pre, _):  # noqa: D102
        return *features_backward(list(ctx.saved_tensors), g_pre, list(ctx.needs_input_grad[:7])), None
