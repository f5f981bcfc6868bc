"""UOT-DRO (claim L6): the one-image-per-run forward and hand-written backward of the network's
feature layers, R runs at once (batched matrix products; only the gradients asked for)."""

from __future__ import annotations

import torch
import torch.nn.functional as F

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


def _windows(t: torch.Tensor, width: int, offset: int = 0, channels: int = 64) -> torch.Tensor:
    """The 2x2 pooling windows (N, 12, 2, 12, 2, channels) of N 24 x 24 x channels maps stored channels
    last with rows `width` wide, map n starting at t.stride(0) * n."""
    row = width * channels
    return t.as_strided(
        (t.shape[0], 12, 2, 12, 2, channels),
        (t.stride(0), 2 * row, row, 2 * channels, channels, 1),
        t.storage_offset() + offset * channels,
    )


def _window_maximum(win: torch.Tensor) -> torch.Tensor:
    """Each window's maximum (N, 12, 12, C), of windows as _windows gives them."""
    return torch.maximum(
        torch.maximum(win[:, :, 0, :, 0], win[:, :, 0, :, 1]), torch.maximum(win[:, :, 1, :, 0], win[:, :, 1, :, 1])
    )


def _route_to_first_maximum(g_m: torch.Tensor, m: torch.Tensor, win: torch.Tensor, slots: torch.Tensor) -> None:
    """Write into slots (windows of the input's gradient) the gradient g_m (N, 12, 12, C) of the window
    maxima m: all of it to the first maximum of each window in scan order (max_pool2d's choice), zero
    elsewhere. rest * sign(m - value) keeps rest where the value is below the maximum and zeroes it where
    it is one, so every slot is an exact copy of g_m or zero."""
    rest = g_m
    for di, dj in ((0, 0), (0, 1), (1, 0)):
        later = rest * torch.sign(m - win[:, :, di, :, dj])
        torch.sub(rest, later, out=slots[:, :, di, :, dj])
        rest = later
    slots[:, :, 1, :, 1] = rest


class MaxPool2x2(torch.autograd.Function):
    """2x2 max-pooling of a channels-last batch c (B, C, 24, 24): the maxima as a (B, C, 12, 12) view of
    channels-last memory, the gradient to each window's first maximum (max_pool2d's values and gradient).
    On the CPU max_pool2d_with_indices measured 6-8 times slower on these maps than the four strided
    maxima and the routing here (40 ms against 5 ms for 200 images), a sixth of an evaluation."""

    @staticmethod
    def forward(ctx, c):  # noqa: D102
        nhwc = c.permute(0, 2, 3, 1)
        if not nhwc.is_contiguous():
            nhwc = nhwc.contiguous()
        m = _window_maximum(_windows(nhwc, 24, channels=nhwc.shape[-1]))
        ctx.save_for_backward(nhwc, m)
        return m.permute(0, 3, 1, 2)

    @staticmethod
    def backward(ctx, g):  # noqa: D102
        nhwc, m = ctx.saved_tensors
        g_c = torch.empty_like(nhwc)
        channels = nhwc.shape[-1]
        g_m = g.permute(0, 2, 3, 1).contiguous()  # the maxima's layout: strided operands measured 3x slower
        _route_to_first_maximum(g_m, m, _windows(nhwc, 24, channels=channels), _windows(g_c, 24, channels=channels))
        return g_c.permute(0, 3, 1, 2)


def _gradient_plane(runs: int, like: torch.Tensor) -> torch.Tensor:
    key = (runs, like.dtype, like.device)
    plane = _PLANES.get(key)
    if plane is None:
        if len(_PLANES) >= 16:
            _PLANES.clear()
        plane = _PLANES[key] = torch.zeros(runs, 28 * 28, 64, dtype=like.dtype, device=like.device)
    return plane


def features_forward(x, w1, b1, w2, b2, wf, bf, taps):
    """(pre, a, saved) of R runs on one image each, x (R, 1, 1, 28, 28), parameters stacked (R, ...), taps
    conv2_taps(w2) or None; `saved` is what features_backward needs. No autograd."""
    runs = x.shape[0]
    cols = x.reshape(runs, 28, 28).unfold(1, 26, 1).unfold(2, 26, 1).reshape(runs, 9, 676)
    h1 = torch.baddbmm(b1.unsqueeze(1), cols.transpose(1, 2), w1.view(runs, 32, 9).transpose(1, 2)).relu_()
    forward_taps, backward_taps = taps if taps is not None else conv2_taps(w2)
    products = zip(_shifted(h1, 622, 26), forward_taps.unbind(0))
    h, w = next(products)
    c2 = torch.baddbmm(b2.unsqueeze(1), h, w)
    for h, w in products:
        c2.baddbmm_(h, w)
    m = _window_maximum(_windows(c2, 26))
    a = m.view(runs, 144, 64).transpose(1, 2).relu().reshape(runs, 1, 9216)
    pre = torch.baddbmm(bf.unsqueeze(1), a, wf.transpose(1, 2))
    return pre, a, (cols, h1, c2, m, a, w1, wf, backward_taps)


def features_backward(saved, g_pre, needs):
    """The gradients (x, w1, b1, w2, b2, wf, bf; None where `needs` says False) of features_forward's
    inputs, from the gradient g_pre (R, 1, 128) of its FC-128 pre-activation. No autograd."""
    cols, h1, c2, m, a, w1, wf, backward_taps = saved
    need_x, need_w1, need_b1, need_w2, need_b2, need_wf, need_bf = needs[:7]
    runs = h1.shape[0]
    g_x = g_w1 = g_b1 = g_w2 = g_b2 = g_wf = g_bf = None
    if need_bf:
        g_bf = g_pre.sum(1)
    if need_wf:
        g_wf = torch.bmm(g_pre.transpose(1, 2), a)
    if not (need_x or need_w1 or need_b1 or need_w2 or need_b2):
        return g_x, g_w1, g_b1, g_w2, g_b2, g_wf, g_bf
    g_a = torch.ops.aten.threshold_backward(torch.bmm(g_pre, wf), a, 0)  # through the ReLU after the pool
    if need_b2:
        g_b2 = g_a.view(runs, 64, 144).sum(2)
    # the pool: each window's gradient to its first maximum in scan order, into the plane's interior
    plane = _gradient_plane(runs, c2)
    g_m = g_a.view(runs, 64, 144).transpose(1, 2).contiguous().view(runs, 12, 12, 64)
    _route_to_first_maximum(g_m, m, _windows(c2, 26), _windows(plane, 28, offset=2 * 28 + 2))
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
    return g_x, g_w1, g_b1, g_w2, g_b2, g_wf, g_bf


class OneImagePerRun(torch.autograd.Function):
    """(pre, a) of R runs on one image each under autograd: features_forward and features_backward."""

    @staticmethod
    def forward(ctx, x, w1, b1, w2, b2, wf, bf, taps):  # noqa: D102
        pre, a, saved = features_forward(x, w1, b1, w2, b2, wf, bf, taps)
        ctx.save_for_backward(*saved)
        ctx.mark_non_differentiable(a)
        return pre, a

    @staticmethod
    def backward(ctx, g_pre, _):  # noqa: D102
        return *features_backward(ctx.saved_tensors, g_pre, ctx.needs_input_grad), None
