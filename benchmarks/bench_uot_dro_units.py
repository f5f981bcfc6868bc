"""UOT-DRO (claim L6): which arrangement of paper-scale CPU units finishes the most units per hour of wall
on this machine, measured on a slice of a unit with a unit's ratio of training to evaluation.

    CLAIMS_DATA_DIR=... .venv/bin/python benchmarks/bench_uot_dro_units.py [--steps 16667] [--images 10000]

A paper-scale unit is 1e5 batch-1 steps and 12 checkpoint evaluations (10,000 objective images for F, and
10,000 test and 10,000 validation images for the accuracies). The slice keeps that ratio: --steps steps
with two evaluations (at step 0 and at the end) of --images images each. The arrangements, each timed
from the moment every process has its data loaded to the moment the last one ends:

  A  one unit at a time, one torch thread training, its evaluations in a second thread beside it
     (train(evaluate_aside=True), the default of `--l6-device cpu`);
  B  two units at once, in two processes, one thread each, evaluations in line;
  C  two units at once, in two processes, each evaluating aside (four threads on the cores).

Units per hour = units finished / wall. A slice's two evaluations overstate the evaluation that an
arrangement with evaluations aside waits for at the end (one of two here, one of twelve in a unit), so the
script also prints each arrangement's estimate for whole units, the lesser of two rates: its processes'
own pace (a unit's training is the slice's times 1e5 / --steps, its evaluations the slice's times 6; aside, a
unit waits for its last evaluation only) and what the cores allow (a unit's CPU time is the slice's times 6,
and the machine's cores run at most that many seconds of it a second: aside, the slice's training was slowed
only by the one evaluation that overlapped it, where a unit's overlaps eleven). The ratios against A are
what to compare (the machine is shared and noisy; each arrangement runs once, in one sitting).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

ARRANGEMENTS = {"A": (1, True), "B": (2, False), "C": (2, True)}  # (processes, evaluations aside)


def child(args: argparse.Namespace) -> None:
    """One unit slice in this process: load the data, wait for the go file, train, print the times."""
    import torch

    from workloads import uot_dro as fx
    from kernels import uot_dro
    from kernels.datasets import mnist

    torch.set_num_threads(1)
    size = fx.Size(args.steps, 1, (0, args.steps), args.images, args.images, fx.PAPER_SETTINGS)
    part = mnist.split(mnist.load_mnist(os.environ.get("CLAIMS_DATA_DIR")), args.master_seed)
    data = fx._data(part, size, args.master_seed, "cpu")
    Path(args.ready).touch()
    while not Path(args.go).exists():
        time.sleep(0.01)
    wall, cpu = time.perf_counter(), time.process_time()
    run = uot_dro.Run("proposed", 1e-4, args.seed)
    result = uot_dro.train([run], data, args.steps, size.checkpoints, args.master_seed, evaluate_aside=args.aside)
    print(
        json.dumps(
            {
                "wall": time.perf_counter() - wall,
                "cpu": time.process_time() - cpu,
                "train": result["seconds"]["train"],
                "evaluate": result["seconds"]["evaluate"],
            }
        )
    )


def arrangement(name: str, args: argparse.Namespace) -> dict:
    processes, aside = ARRANGEMENTS[name]
    with tempfile.TemporaryDirectory() as folder:
        go = Path(folder) / "go"
        children = []
        for k in range(processes):
            ready = Path(folder) / f"ready{k}"
            command = [sys.executable, __file__, "--child", "--steps", str(args.steps), "--images", str(args.images)]
            command += ["--seed", str(k), "--ready", str(ready), "--go", str(go)] + (["--aside"] if aside else [])
            children.append((subprocess.Popen(command, stdout=subprocess.PIPE, text=True), ready))
        while not all(ready.exists() for _, ready in children):
            time.sleep(0.05)
        started = time.perf_counter()
        go.touch()
        outs = []
        for process, _ in children:
            out, _ = process.communicate()
            if process.returncode:
                raise SystemExit(f"arrangement {name}: a unit slice failed (exit {process.returncode})")
            outs.append(json.loads(out.strip().splitlines()[-1]))
        wall = time.perf_counter() - started
    # a whole unit: training scaled to 1e5 steps, 12 evaluations (6 slices' worth); aside, only the last one waits
    scale, evaluations = 100_000 / args.steps, 6.0
    unit = max(p["train"] * scale + (p["evaluate"] / 2 if aside else p["evaluate"] * evaluations) for p in outs)
    cpu = max(p["cpu"] for p in outs) * evaluations
    per_hour = min(processes / unit, (os.cpu_count() or 1) / cpu) * 3600
    return {
        "wall": wall,
        "units": processes,
        "per_hour": processes / wall * 3600,
        "unit_wall": unit,
        "unit_cpu": cpu,
        "units_per_hour": per_hour,
        "processes": outs,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=16_667, help="steps of the slice (1e5 / 6: two evaluations)")
    parser.add_argument("--images", type=int, default=10_000, help="images of each evaluation set")
    parser.add_argument("--only", default="ABC", help="which arrangements to time, in order (default ABC)")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--aside", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--seed", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--master-seed", type=int, default=29589, help=argparse.SUPPRESS)
    parser.add_argument("--ready", help=argparse.SUPPRESS)
    parser.add_argument("--go", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args)
        return
    if args.steps < 1 or args.images < 1 or not set(args.only) <= set(ARRANGEMENTS):
        parser.error("--steps and --images must be positive; --only takes letters of ABC")
    print(f"unit slice: {args.steps} steps, 2 evaluations of {args.images} images; load {os.getloadavg()[0]:.2f}")
    found = {}
    for name in args.only:
        found[name] = arrangement(name, args)
        processes = ", ".join(
            f"train {p['train']:.0f} s, evaluate {p['evaluate']:.0f} s, CPU {p['cpu']:.0f} s"
            for p in found[name]["processes"]
        )
        print(
            f"  {name}: {found[name]['units']} unit(s) in {found[name]['wall']:.0f} s of wall, "
            f"{found[name]['per_hour']:.2f} slices an hour ({processes}); whole units: "
            f"{found[name]['unit_wall']:.0f} s of wall and {found[name]['unit_cpu']:.0f} s of CPU each, "
            f"{found[name]['units_per_hour']:.2f} units an hour",
            flush=True,
        )
    if "A" in found:
        for name in found:
            print(
                f"  {name} against A: slices {found[name]['per_hour'] / found['A']['per_hour']:.2f}x an hour, "
                f"whole units {found[name]['units_per_hour'] / found['A']['units_per_hour']:.2f}x"
            )


if __name__ == "__main__":
    main()
