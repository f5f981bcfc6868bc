"""UOT-DRO (claim L6): steps per second of the batched program (R runs as one program of batched
matrix products) against R single-run models (nn.Module + torch.optim.SGD) trained in a loop, and the
cost of one run-step in FLOP (counted by torch.utils.flop_counter on the autograd formulation of the
same network).

    .venv/bin/python benchmarks/bench_uot_dro.py [--runs 24] [--steps 6] [--loop-steps 2] [--rounds 3]
        [--threads 1] [--device cpu|cuda]

The R runs are the paper's three settings (proposed 1e-4, baseline 1e-5, ERM 1e-3) over R/3 seeds, on
synthetic 28 x 28 images (throughput does not depend on the pixels). Both routes are timed in
alternating rounds in one process, on the same thread count, and each route's rate is its fastest round:
on a shared machine another job slows whichever route runs beside it, and alternating lets both see
the same conditions. Rates by wall clock and by this process's CPU time are printed (they differ when
the machine is oversubscribed); mind the load (printed).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch  # noqa: E402

from kernels import uot_dro  # noqa: E402

SETTINGS = (("proposed", 1e-4), ("baseline", 1e-5), ("erm", 1e-3))


def _sync(device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.synchronize()


def runs_for(count: int) -> list[uot_dro.Run]:
    return [uot_dro.Run(m, lr, s) for s in range((count + 2) // 3) for m, lr in SETTINGS][:count]


def images(count: int, device: str) -> tuple[torch.Tensor, torch.Tensor]:
    generator = torch.Generator().manual_seed(0)
    return torch.randn(count, 1, 28, 28, generator=generator).to(device), torch.randint(
        0, 10, (count,), generator=generator
    ).to(device)


class Batched:
    """The batched program; `advance(steps)` runs that many steps of all R runs."""

    def __init__(self, runs, device: str, total_steps: int) -> None:
        self.program, self.count, self.t = uot_dro.Program(runs, 1, device), len(runs), 0
        self.x, self.y = images(self.count * total_steps, device)

    def advance(self, steps: int) -> None:
        for _ in range(steps):
            rows = slice(self.t * self.count, (self.t + 1) * self.count)
            self.program.step(self.x[rows].unsqueeze(1), self.y[rows].unsqueeze(1))
            self.t += 1


class Loop:
    """R single-run models stepped one after another; `advance(steps)` runs that many steps of each."""

    def __init__(self, runs, device: str, total_steps: int) -> None:
        self.models, self.t = [uot_dro.SingleRun(r, 1, device) for r in runs], 0
        self.x, self.y = images(total_steps, device)

    def advance(self, steps: int) -> None:
        for _ in range(steps):
            for model in self.models:
                model.step(self.x[self.t : self.t + 1], self.y[self.t : self.t + 1])
            self.t += 1


def timed(route, steps: int, device: str) -> tuple[float, float]:
    """(wall seconds, CPU seconds of this process) per step of `route`."""
    _sync(device)
    wall, cpu = time.perf_counter(), time.process_time()
    route.advance(steps)
    _sync(device)
    return (time.perf_counter() - wall) / steps, (time.process_time() - cpu) / steps


def compare(runs, steps: int, loop_steps: int, rounds: int, device: str) -> dict[str, list[tuple[float, float]]]:
    """Per-step (wall, CPU) times of both routes, one entry per round; two warm-up steps each first."""
    batched = Batched(runs, device, 2 + steps * rounds)
    loop = Loop(runs, device, 2 + loop_steps * rounds)
    batched.advance(2)
    loop.advance(2)
    times = {"batched": [], "loop": []}
    for _ in range(rounds):
        times["batched"].append(timed(batched, steps, device))
        times["loop"].append(timed(loop, loop_steps, device))
    return times


@contextlib.contextmanager
def autograd_formulation():
    """Every forward through uot_dro.features_grouped (grouped convolutions under autograd), the
    formulation torch.utils.flop_counter sees in full: the one-image-per-run program accumulates its
    convolutions with in-place products, which the counter does not count."""
    original = uot_dro.model.forward_features  # forward_parts reads it from its own module
    uot_dro.model.forward_features = uot_dro.features_grouped
    try:
        yield
    finally:
        uot_dro.model.forward_features = original


def flop_per_run_step(method: str) -> int:
    """FLOP of one step of one run (the batched program with R = 1: no nn.Module hooks to trip over)."""
    from torch.utils.flop_counter import FlopCounterMode

    program = uot_dro.Program([uot_dro.Run(method, 1e-5, 0)], 1)
    x, y = images(1, "cpu")
    with autograd_formulation(), FlopCounterMode(display=False) as counter:
        program.step(x.unsqueeze(1), y.unsqueeze(1))
    return int(counter.get_total_flops())


def peak_gflops(device: str) -> float:
    """GFLOP/s of a large float32 matrix product on this device and thread count (the ceiling)."""
    a = torch.randn(1024, 1024, device=device)
    a @ a
    _sync(device)
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        for _ in range(5):
            a @ a
        _sync(device)
        best = min(best, (time.perf_counter() - start) / 5)
    return 2 * 1024**3 / best / 1e9


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=24)
    parser.add_argument("--steps", type=int, default=6, help="batched steps per round")
    parser.add_argument("--loop-steps", type=int, default=2, help="loop steps (of every run) per round")
    parser.add_argument("--rounds", type=int, default=3, help="alternating rounds; each route's fastest counts")
    parser.add_argument(
        "--threads", type=int, default=1, help="torch intra-op threads on CPU (default 1; see workloads/uot_dro.py)"
    )
    parser.add_argument("--device", default="cpu", choices=("cpu", "cuda"))
    args = parser.parse_args()
    if min(args.runs, args.steps, args.loop_steps, args.rounds, args.threads) < 1:
        parser.error("--runs, --steps, --loop-steps, --rounds and --threads must be positive")
    if args.device == "cuda" and not torch.cuda.is_available():
        parser.error("--device cuda: no CUDA device (torch.cuda.is_available() is False)")
    torch.set_num_threads(args.threads)
    dro, erm = flop_per_run_step("proposed"), flop_per_run_step("erm")
    print(
        f"FLOP per run-step (convolutions and matrix products, torch.utils.flop_counter): DRO {dro / 1e9:.3f} GFLOP (5 "
        f"inner ascent steps + the update), ERM {erm / 1e9:.3f} GFLOP"
    )
    runs = runs_for(args.runs)
    per_step = sum(erm if r.method == "erm" else dro for r in runs)
    print(
        f"device {args.device}, {torch.get_num_threads()} thread(s), load average {os.getloadavg()[0]:.2f}; R = "
        f"{len(runs)} runs ({', '.join(f'{m} {lr:g}' for m, lr in SETTINGS)}); a 1024^3 matrix product runs at "
        f"{peak_gflops(args.device):.0f} GFLOP/s"
    )
    times = compare(runs, args.steps, args.loop_steps, args.rounds, args.device)
    for name, label in (("batched", "batched program"), ("loop", f"{len(runs)} single-run models in a loop")):
        rounds = ", ".join(f"{1 / wall:.2f}" for wall, _ in times[name])
        wall, cpu = min(w for w, _ in times[name]), min(c for _, c in times[name])
        print(
            f"{label}: {1 / wall:.2f} steps/s = {len(runs) / wall:.1f} run-steps/s ({per_step / wall / 1e9:.1f} "
            f"GFLOP/s) by wall clock, {1 / cpu:.2f} steps/s by CPU time; rounds (steps/s, wall): {rounds}"
        )
    wall = min(w for w, _ in times["loop"]) / min(w for w, _ in times["batched"])
    cpu = min(c for _, c in times["loop"]) / min(c for _, c in times["batched"])
    print(f"speed-up of the batched program: {wall:.2f}x by wall clock, {cpu:.2f}x by CPU time")
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
