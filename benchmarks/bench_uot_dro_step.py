"""UOT-DRO (claim L6): the batch-1 DRO step of a single-run program (the full tier's and the CPU paper-scale
unit, `Program` with R = 1) against its floor, in one process on one thread.

    .venv/bin/python benchmarks/bench_uot_dro_step.py [--steps 40] [--rounds 5] [--method proposed]
        [--profile]

The floor is what the step cannot avoid on this thread: 13 conv2 passes of one image (the forward of each
of the 5 inner ascent steps and of the outer step, the input gradient of each inner step and of the outer
step, and the outer weight gradient: 6 + 6 + 1) at the fastest rate this thread runs one (the fastest of
F.conv2d on the default layout, F.conv2d channels-last, nine per-tap matrix products, and an im2col copy
of the channels-last maps with one matrix product, which an outside review found 7-12 % faster than
channels-last F.conv2d), plus 14 reads of the 4.7 MB FC-128 weight (a forward and an input gradient per
inner step, the same for the outer step, and the in-place update's read and write) at the rate a
matrix-vector product reads it (the faster of torch.mv and F.linear of a row). The step, each of
its parts (the inner maximisation; the outer forward and backward; the update) and the floor's parts are
timed in alternating rounds; each one's fastest round counts (another job on a shared machine slows
whichever runs beside it). Each part is printed beside its share of the floor.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch.profiler import ProfilerActivity, profile  # noqa: E402

from kernels import uot_dro  # noqa: E402

CONV2_PASSES = {"inner maximisation": 10, "outer forward + backward": 3, "update": 0}
FC_READS = {"inner maximisation": 10, "outer forward + backward": 2, "update": 2}


def per_call(function, calls: int) -> tuple[float, float]:
    """(wall seconds, CPU seconds of this process) per call of `function` over `calls` calls."""
    wall, cpu = time.perf_counter(), time.process_time()
    for _ in range(calls):
        function()
    return (time.perf_counter() - wall) / calls, (time.process_time() - cpu) / calls


def floor_parts() -> dict:
    """Functions timing the floor's two parts: one conv2 pass of one image, one read of the FC-128 weight."""
    generator = torch.Generator().manual_seed(0)
    h = torch.randn(1, 32, 26, 26, generator=generator)
    w = torch.randn(64, 32, 3, 3, generator=generator)
    h_last, w_last = (t.contiguous(memory_format=torch.channels_last) for t in (h, w))
    rows = torch.randn(1, 26 * 26, 32, generator=generator)
    taps = torch.randn(9, 1, 32, 64, generator=generator)
    out = torch.empty(1, 622, 64)
    maps = h[0].permute(1, 2, 0).contiguous()  # (26, 26, 32): channels-last
    filters = w.permute(2, 3, 1, 0).reshape(288, 64)  # (tap row, tap column, channel) x output channel
    im2col_out = torch.empty(576, 64)
    weight = torch.randn(128, 9216, generator=generator)
    vector = torch.randn(9216, generator=generator)
    row = vector.view(1, 9216)

    def im2col_product():
        rows_, columns, channels = maps.stride()
        windows = maps.as_strided((24, 24, 3, 3, 32), (rows_, columns, rows_, columns, channels))
        return torch.mm(windows.reshape(576, 288), filters, out=im2col_out)

    # the im2col pass and channels-last F.conv2d compute default F.conv2d's convolution (the tap products run on
    # operands of their own, and their rows include the 2 x 23 columns that wrap around a row)
    reference = F.conv2d(h, w)[0].permute(1, 2, 0)  # (24, 24, 64)
    torch.testing.assert_close(im2col_product().view(24, 24, 64), reference, rtol=1e-4, atol=1e-4)
    torch.testing.assert_close(F.conv2d(h_last, w_last)[0].permute(1, 2, 0), reference, rtol=1e-4, atol=1e-4)

    def tap_products():
        torch.bmm(rows[:, :622], taps[0], out=out)
        for t in range(1, 9):
            kh, kw = divmod(t, 3)
            offset = kh * 26 + kw
            out.baddbmm_(rows[:, offset : offset + 622], taps[t])

    return {
        "conv2 pass (F.conv2d)": lambda: F.conv2d(h, w),
        "conv2 pass (F.conv2d, channels-last)": lambda: F.conv2d(h_last, w_last),
        "conv2 pass (9 tap products)": tap_products,
        "conv2 pass (im2col copy + one product)": im2col_product,
        "FC-128 read (torch.mv)": lambda: torch.mv(weight, vector),
        "FC-128 read (F.linear of a row)": lambda: F.linear(row, weight),
    }


class Step:
    """A one-run program and the parts of its step, on synthetic images (the cost does not depend on pixels)."""

    def __init__(self, method: str, lr: float, total: int) -> None:
        self.program = uot_dro.Program([uot_dro.Run(method, lr, 0)], 1)
        generator = torch.Generator().manual_seed(1)
        self.x = torch.rand(total, 1, 1, 1, 28, 28, generator=generator)
        self.y = torch.randint(0, 10, (total, 1, 1), generator=generator)
        self.t = 0

    def _next(self):
        self.t = (self.t + 1) % self.x.shape[0]
        return self.x[self.t], self.y[self.t]

    def step(self) -> None:
        self.program.step(*self._next())

    def inner(self) -> None:
        x, y = self._next()
        uot_dro.inner_maximise(self.program.params, x, y)

    def gradients(self) -> None:
        x, y = self._next()
        self.program._gradients(0, 1, x, y)

    def update(self) -> None:
        """The update alone, from one step's gradients computed once (it reads them and writes the parameters:
        repeating it moves them by a stepsize's worth a call, which changes no cost)."""
        if not hasattr(self, "_parts"):
            x, y = self._next()
            self._parts = self.program._gradients(0, 1, x, y)
        self.program._update(*self._parts)

    def ascent_parts(self) -> dict:
        """Functions timing one inner ascent step's two halves: the feature layers' forward, and their
        backward to the image (each holds one conv2 pass and one FC-128 read of the floor)."""
        params = {k: v.detach() for k, v in self.program.params.items()}
        w2_grouped = uot_dro.grouped_conv2_weight(params["conv2.weight"])
        weights = [params[name] for name in uot_dro.model.FEATURE_PARAMETERS]
        x = self.x[0]
        _, _, saved = uot_dro.batched_autograd.features_forward(x, *weights, w2_grouped)
        g_pre = torch.randn(1, 1, 128, generator=torch.Generator().manual_seed(2))
        needs = [True] + [False] * 6
        return {
            "ascent: features forward": lambda: uot_dro.batched_autograd.features_forward(x, *weights, w2_grouped),
            "ascent: features backward to x": lambda: uot_dro.batched_autograd.features_backward(saved, g_pre, needs),
        }

    def timers(self) -> dict:
        """Functions timing the whole step and its parts; the outer forward and backward's time is the gradients'
        less the inner maximisation's."""
        return {
            "step": self.step,
            "inner maximisation": self.inner,
            "gradients (inner + outer)": self.gradients,
            "update": self.update,
            **self.ascent_parts(),
        }


CONV2_PASS = (
    *("conv2 pass (F.conv2d)", "conv2 pass (F.conv2d, channels-last)", "conv2 pass (9 tap products)"),
    "conv2 pass (im2col copy + one product)",
)
FC_READ = ("FC-128 read (torch.mv)", "FC-128 read (F.linear of a row)")
CLOCKS = ("wall clock", "CPU time")  # CPU time leaves out the time another job held this core


def floor_of(best: dict) -> tuple[float, float, float]:
    """(one conv2 pass, one FC-128 read: the fastest ways this thread ran them, seconds; the step's floor, ms)."""
    conv2 = min(best[name] for name in CONV2_PASS)
    fc_read = min(best[name] for name in FC_READ)
    return conv2, fc_read, (sum(CONV2_PASSES.values()) * conv2 + sum(FC_READS.values()) * fc_read) * 1e3


def report(clock: str, best: dict, floor: dict) -> float:
    """Print the floor, each part of the step beside its share of the floor, and the step's ratio; return it."""
    conv2, fc_read, floor_ms = floor_of(best)
    parts = {
        "inner maximisation": best["inner maximisation"],
        "outer forward + backward": best["gradients (inner + outer)"] - best["inner maximisation"],
        "update": best["update"],
    }
    print(f"by {clock}:")
    for name in floor:
        print(f"  {name}: {best[name] * 1e3:.3f} ms")
    print(
        f"  FC-128 read bandwidth {128 * 9216 * 4 / fc_read / 1e9:.1f} GB/s; floor = "
        f"{sum(CONV2_PASSES.values())} x {conv2 * 1e3:.3f} + {sum(FC_READS.values())} x {fc_read * 1e3:.3f} ms "
        f"= {floor_ms:.2f} ms"
    )
    print(f"  {'part':<28}{'measured ms':>12}{'floor share ms':>16}{'ratio':>8}")
    for name, seconds in parts.items():
        share = (CONV2_PASSES[name] * conv2 + FC_READS[name] * fc_read) * 1e3
        ratio = f"{seconds * 1e3 / share:.2f}" if share else "-"
        print(f"  {name:<28}{seconds * 1e3:>12.3f}{share:>16.3f}{ratio:>8}")
    share = (conv2 + fc_read) * 1e3
    for name in ("ascent: features forward", "ascent: features backward to x"):
        ms = best[name] * 1e3
        print(f"  {name:<34}{ms:>6.3f} ms, share {share:.3f} ms: {ms - share:.3f} ms beyond the floor's products")
    ratio = best["step"] * 1e3 / floor_ms
    print(f"  {'DRO step':<28}{best['step'] * 1e3:>12.3f}{floor_ms:>16.3f}{ratio:>8.2f}")
    print(f"  step / floor by {clock} = {ratio:.2f}")
    return ratio


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=40, help="calls per round of each timed function")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--method", default="proposed", choices=("proposed", "baseline"))
    parser.add_argument("--lr", type=float, default=1e-4)
    parser.add_argument("--profile", action="store_true", help="also print the step's costliest operators")
    args = parser.parse_args()
    if min(args.steps, args.rounds) < 1:
        parser.error("--steps and --rounds must be positive")
    torch.set_num_threads(1)
    floor = floor_parts()
    step = Step(args.method, args.lr, 64)
    timers = {**floor, **step.timers()}
    for function in timers.values():  # warm-up: allocator, caches, the gradient plane
        per_call(function, 3)
    best = {clock: {name: float("inf") for name in timers} for clock in CLOCKS}
    for _ in range(args.rounds):
        for name, function in timers.items():
            for clock, seconds in zip(CLOCKS, per_call(function, args.steps)):
                best[clock][name] = min(best[clock][name], seconds)
    print(
        f"torch {torch.__version__}, {torch.get_num_threads()} thread, load average {os.getloadavg()[0]:.2f}; "
        f"{args.method} eta={args.lr:g}, R = 1; fastest of {args.rounds} rounds of {args.steps} calls (the floor's "
        f"parts and the step: of {2 * args.rounds}, half of them beside the profiled rounds)"
    )
    profiled, table = profiled_rounds(step, floor, args.steps, args.rounds, best)
    for clock in CLOCKS:
        report(clock, best[clock], floor)
    where_the_time_goes(profiled, table if args.profile else None, args.steps, args.rounds, best["CPU time"])
    cold_caches(args.steps, args.rounds)
    print(f"load average after {os.getloadavg()[0]:.2f}")


PRODUCTS = (  # matrix products and convolutions (oneDNN's, and the im2col one conv1 takes with one input channel;
    # oneDNN's transposed convolution, conv2's input gradient, runs inside aten::_convolution's own time)
    *("aten::bmm", "aten::baddbmm", "aten::baddbmm_", "aten::mm", "aten::addmm", "aten::mv", "aten::matmul"),
    *("aten::mkldnn_convolution", "aten::convolution_backward", "aten::_slow_conv2d_forward"),
    *("aten::_slow_conv2d_backward", "aten::_convolution"),
)
# The other work the network's mathematics asks of any step, fused or not: the 2x2 max-pool and its backward
# (counted with their children: the backward's zeroed output), and the ReLU masks (forward and backward).
POOL = ("aten::max_pool2d_with_indices", "aten::max_pool2d_with_indices_backward")
RELU = ("aten::clamp_min", "aten::clamp_min_", "aten::threshold_backward")  # relu and relu_ call clamp_min
RELU_CALLS = (*RELU, "aten::relu", "aten::relu_")  # how the ReLU masks are called


def dispatch_floor(calls: int = 20_000) -> float:
    """Seconds per call of the cheapest operator call this thread makes (a view of a one-element tensor,
    an in-place add of one): what every operator the step calls from Python costs at least."""
    t = torch.zeros(1)
    one = torch.ones(1)
    return min(per_call(lambda: t.view(1), calls)[1], per_call(lambda: t.add_(one), calls)[1])


def profiled_round(step: Step, steps: int) -> tuple[dict, Any]:
    """One profiled round of `steps` steps: per step, the matrix products' own time, the pool's and the ReLU
    masks' (seconds), and the operator calls made from Python (counts); and the profiler's operator table."""
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        per_call(step.step, steps)
    totals = prof.key_averages()
    top_level = [e.name for e in prof.events() if e.cpu_parent is None]
    return totals, {
        "products": sum(e.self_cpu_time_total for e in totals if e.key in PRODUCTS) / 1e6 / steps,
        "pool": sum(e.cpu_time_total for e in totals if e.key in POOL) / 1e6 / steps,
        "relu": sum(e.self_cpu_time_total for e in totals if e.key in RELU) / 1e6 / steps,
        "pool calls": sum(e.count for e in totals if e.key in POOL) / steps,
        "relu calls": sum(e.count for e in totals if e.key in RELU) / steps,
        "calls from Python": len(top_level) / steps,
        # those of the pool and the masks (the rest of them run inside TorchScript, called from there)
        "pool and relu calls from Python": sum(name in (*POOL, *RELU_CALLS) for name in top_level) / steps,
    }


def profiled_rounds(step: Step, floor: dict, steps: int, rounds: int, best: dict) -> tuple[dict, Any]:
    """Profiled rounds of the step, each beside a round of the floor's parts and of the step unprofiled, whose
    times join `best` (so that the floor and the step of every ratio printed are the fastest of the whole
    run, and a machine whose speed changes between the timings and the profile cannot move those ratios);
    returns each profiled quantity's fastest round and the last round's operator table."""
    measured = []
    for _ in range(rounds):
        for name, function in {**floor, "step": step.step}.items():
            for clock, seconds in zip(CLOCKS, per_call(function, steps)):
                best[clock][name] = min(best[clock][name], seconds)
        totals, quantities = profiled_round(step, steps)
        measured.append(quantities)
    return {key: min(m[key] for m in measured) for key in measured[0]}, totals


def where_the_time_goes(fastest: dict, table: Any, steps: int, rounds: int, best: dict) -> None:
    """Where the step's time goes, from the profiled rounds (each quantity's fastest): the matrix products'
    own time (the floor's products and the rest: conv1, conv2's weight gradient, FC-10), and the operators
    called from Python, each costing at least the dispatch floor. Their sum is a lower bound on any step made
    of the same operator calls; the pool and the ReLU masks at their own time raise it; against 1.5 x the
    floor it says whether removing the small operators' work alone could get there, or whether the calls
    themselves must go (fused kernels). `table`: a profiler's operator table to print, or None."""
    products, pool, relu = fastest["products"], fastest["pool"], fastest["relu"]
    top_level = fastest["calls from Python"]  # the same in every round
    dispatch = dispatch_floor()
    floor_ms = floor_of(best)[2]
    bound = products * 1e3 + top_level * dispatch * 1e3
    print(f"where the step's time goes (CPU time; the fastest of {rounds} profiled rounds of {steps} steps):")
    print(
        f"  matrix products' and convolutions' own time {products * 1e3:.3f} ms = "
        f"{products * 1e3 / floor_ms:.2f} x the floor"
    )
    print(
        f"  operator calls from Python {top_level:.0f} per step x dispatch floor {dispatch * 1e6:.2f} us = "
        f"{top_level * dispatch * 1e3:.3f} ms"
    )
    print(
        f"  lower bound of a step of these calls = {bound:.3f} ms = {bound / floor_ms:.2f} x the floor "
        f"(measured step {best['step'] * 1e3:.3f} ms = {best['step'] * 1e3 / floor_ms:.2f}; target 1.5 = "
        f"{1.5 * floor_ms:.3f} ms)"
    )
    # the same bound with the pool and the ReLU masks at their own time in this step (the other calls still at
    # one dispatch each): what a step of PyTorch's separate operators costs at least, however its small
    # operators' work and Python's share were cut; only kernels fusing the pool and the masks into the
    # convolutions (and so keeping their maps in cache) could go below it
    other_calls = top_level - fastest["pool and relu calls from Python"]
    necessary = products + pool + relu + other_calls * dispatch
    print(
        f"  the pool and its backward {pool * 1e3:.3f} ms ({fastest['pool calls']:.0f} calls), the ReLU masks "
        f"{relu * 1e3:.3f} ms ({fastest['relu calls']:.0f} calls): with the products and one dispatch for each "
        f"other call {necessary * 1e3:.3f} ms = {necessary * 1e3 / floor_ms:.2f} x the floor"
    )
    rest = best["step"] - products
    print(
        f"  the rest of the measured step, {rest * 1e3:.3f} ms, is {rest / top_level * 1e6:.1f} us a call "
        f"over its operator calls ({rest / top_level / dispatch:.1f} x the dispatch floor of a call in a loop of one)"
    )
    if table is not None:
        print(table.table(sort_by="self_cpu_time_total", row_limit=25))


def cold_caches(steps: int, rounds: int) -> None:
    """The floor's conv2 pass alone (its maps and filters stay in this core's 1 MB L2 from call to call) and
    right after a read of the FC-128 weight, as every convolution of the step follows one (the 4.7 MB stream
    evicts them): what the step's order costs each of its convolutions, which no reordering of these eager
    calls avoids (each convolution needs the FC-128 result before it, or feeds the one after it)."""
    generator = torch.Generator().manual_seed(3)
    h = torch.randn(1, 32, 26, 26, generator=generator).contiguous(memory_format=torch.channels_last)
    w = torch.randn(64, 32, 3, 3, generator=generator).contiguous(memory_format=torch.channels_last)
    weight, vector = torch.randn(128, 9216, generator=generator), torch.randn(9216, generator=generator)

    def timed(stream: bool) -> float:
        total = 0.0
        for _ in range(steps):
            if stream:
                torch.mv(weight, vector)
            started = time.perf_counter()
            F.conv2d(h, w)
            total += time.perf_counter() - started
        return total / steps

    best = {flag: min(timed(flag) for _ in range(rounds)) for flag in (False, True)}
    print(
        f"conv2 pass alone {best[False] * 1e3:.3f} ms, after an FC-128 read {best[True] * 1e3:.3f} ms: "
        f"{best[True] / best[False]:.2f} times (the step's order)"
    )


if __name__ == "__main__":
    main()
