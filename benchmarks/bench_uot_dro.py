"""UOT-DRO (claim L6): steps per second of the batched program (R runs as one grouped-convolution
program) against R single-run models (nn.Module + torch.optim.SGD) trained in a loop, and the cost of
one run-step in FLOP (counted by torch.utils.flop_counter on the single-run step).

    .venv/bin/python benchmarks/bench_uot_dro.py [--runs 24] [--steps 10] [--threads 1] [--device cpu|cuda]

The R runs are the paper's three settings (proposed 1e-4, baseline 1e-5, ERM 1e-3) over R/3 seeds, on
synthetic 28 x 28 images (throughput does not depend on the pixels). Rates come from one run on a
shared machine: compare the ratio, and mind the load (printed).
"""
from __future__ import annotations

import argparse
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
    return torch.randn(count, 1, 28, 28, generator=generator).to(device), torch.randint(0, 10, (count,), generator=generator).to(device)


def batched_rate(runs, steps: int, device: str) -> float:
    """Steps per second of the whole batch (every run advances one step per step)."""
    program = uot_dro.Program(runs, 1, device)
    x, y = images(len(runs) * (steps + 2), device)
    batch = lambda t: (x[t * len(runs) : (t + 1) * len(runs)].unsqueeze(1), y[t * len(runs) : (t + 1) * len(runs)].unsqueeze(1))  # noqa: E731
    program.step(*batch(0))
    program.step(*batch(1))
    _sync(device)
    start = time.perf_counter()
    for t in range(2, steps + 2):
        program.step(*batch(t))
    _sync(device)
    return steps / (time.perf_counter() - start)


def loop_rate(runs, steps: int, device: str) -> float:
    """Steps per second when each run is its own model, stepped one after another."""
    models = [uot_dro.SingleRun(r, 1, device) for r in runs]
    x, y = images(steps + 2, device)
    for m in models:
        m.step(x[0:1], y[0:1])
    _sync(device)
    start = time.perf_counter()
    for t in range(1, steps + 1):
        for m in models:
            m.step(x[t : t + 1], y[t : t + 1])
    _sync(device)
    return steps / (time.perf_counter() - start)


def flop_per_run_step(method: str) -> int:
    """FLOP of one step of one run (the batched program with R = 1: no nn.Module hooks to trip over)."""
    from torch.utils.flop_counter import FlopCounterMode

    program = uot_dro.Program([uot_dro.Run(method, 1e-5, 0)], 1)
    x, y = images(1, "cpu")
    with FlopCounterMode(display=False) as counter:
        program.step(x.unsqueeze(1), y.unsqueeze(1))
    return int(counter.get_total_flops())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=24)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--threads", type=int, default=1, help="torch intra-op threads on CPU (default 1; see fixtures/uot_dro.py)")
    parser.add_argument("--device", default="cpu", choices=("cpu", "cuda"))
    args = parser.parse_args()
    if args.runs < 1 or args.steps < 1 or args.threads < 1:
        parser.error("--runs, --steps and --threads must be positive")
    if args.device == "cuda" and not torch.cuda.is_available():
        parser.error("--device cuda: no CUDA device (torch.cuda.is_available() is False)")
    torch.set_num_threads(args.threads)
    dro, erm = flop_per_run_step("proposed"), flop_per_run_step("erm")
    print(f"FLOP per run-step (convolutions and matrix products, torch.utils.flop_counter): DRO {dro / 1e9:.3f} GFLOP (5 inner ascent steps + the update), ERM {erm / 1e9:.3f} GFLOP")
    runs = runs_for(args.runs)
    per_step = sum(erm if r.method == "erm" else dro for r in runs)
    print(f"device {args.device}, {torch.get_num_threads()} thread(s), load average {os.getloadavg()[0]:.2f}; R = {len(runs)} runs ({', '.join(f'{m} {lr:g}' for m, lr in SETTINGS)})")
    b = batched_rate(runs, args.steps, args.device)
    print(f"batched program: {b:.2f} steps/s = {b * len(runs):.1f} run-steps/s ({b * per_step / 1e9:.1f} GFLOP/s)")
    loop = loop_rate(runs, max(2, args.steps // 2), args.device)
    print(f"{len(runs)} single-run models in a loop: {loop:.2f} steps/s = {loop * len(runs):.1f} run-steps/s ({loop * per_step / 1e9:.1f} GFLOP/s)")
    print(f"speed-up of the batched program: {b / loop:.2f}x")
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
