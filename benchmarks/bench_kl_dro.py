"""KL-DRO (L5): runs per second of the batched program (every run of one batch size as one array
program, closed-form gradients) against a per-run torch.optim.SGD(nesterov=True) loop with autograd,
on the same runs and minibatch streams; the ratio from one run of each.

    .venv/bin/python benchmarks/bench_kl_dro.py [--data-dir DIR] [--batch 10] [--epochs 1] [--loop-runs 4]

The batched program runs the grid's 35 configurations x 10 seeds of one batch size; the per-run loop
runs `--loop-runs` of the same runs (its cost per run does not depend on which) and is scaled per run.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402
import torch  # noqa: E402

from kernels import kl_dro  # noqa: E402
from kernels.datasets import DataUnavailable  # noqa: E402
from kernels.datasets.california import load_california  # noqa: E402


def torch_loop(problem: kl_dro.Problem, batch: int, config: kl_dro.RunConfig, perms: np.ndarray) -> np.ndarray:
    """One run, the plain way: autograd through the estimator and torch.optim's Nesterov SGD."""
    X, y = torch.tensor(problem.X), torch.tensor(problem.y)
    theta = torch.tensor(problem.theta0, requires_grad=True)
    alpha = torch.zeros((), dtype=torch.float64, requires_grad=True)
    optimizer = torch.optim.SGD(
        [theta] if config.rho is None else [theta, alpha], lr=config.eta, momentum=0.9, nesterov=True
    )
    for perm in perms:
        for part in kl_dro.batch_slices(problem.n, batch):
            index = torch.as_tensor(perm[part])
            losses = (X[index] @ theta - y[index]) ** 2
            if config.rho is None:
                with torch.no_grad():
                    p = torch.softmax(losses, dim=0)
                loss = torch.sum(p * losses)
            else:
                loss = (
                    alpha
                    + (1.0 / config.rho) * torch.nn.functional.softplus(losses - alpha + math.log(config.rho)).mean()
                )
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    return theta.detach().numpy()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", default=os.environ.get("CLAIMS_DATA_DIR"))
    parser.add_argument("--batch", type=int, default=10)
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--loop-runs", type=int, default=4)
    args = parser.parse_args()
    try:
        data = load_california(args.data_dir)
    except DataUnavailable as missing:
        raise SystemExit(str(missing)) from None
    torch.set_num_threads(1)
    problem = kl_dro.problem_from(data.data, data.target)
    configs = kl_dro.grid_configs()
    streams = kl_dro.KeyedStreams([f"bench|batch={args.batch}|seed={s}" for s in range(args.seeds)])

    start = time.perf_counter()
    run = kl_dro.sgd_runs(problem, args.batch, configs, streams, args.epochs, record_every=args.epochs)
    batched_seconds = time.perf_counter() - start
    runs = len(configs) * args.seeds
    batched_rate = runs / batched_seconds

    # the same runs, one at a time: a baseline and proposed configurations of seed 0 at stable stepsizes
    sample = [
        kl_dro.RunConfig(1e-6, None),
        kl_dro.RunConfig(1e-7, 1e-3),
        kl_dro.RunConfig(1e-6, 0.1),
        kl_dro.RunConfig(1e-5, 0.9),
    ][: args.loop_runs]
    perms = np.stack([streams.permutations(e, problem.n)[0] for e in range(args.epochs)])
    start = time.perf_counter()
    worst = 0.0
    for config in sample:
        theta = torch_loop(problem, args.batch, config, perms)
        worst = max(worst, float(np.max(np.abs(theta - run["theta"][0, configs.index(config)]))))
    loop_rate = len(sample) / (time.perf_counter() - start)

    steps = args.epochs * len(kl_dro.batch_slices(problem.n, args.batch))
    print(f"batch {args.batch}, {args.epochs} epoch(s) = {steps} steps per run")
    print(
        f"batched program: {runs} runs in {batched_seconds:.2f} s = {batched_rate:,.1f} runs/s "
        f"({batched_rate * steps:,.0f} run-steps/s)"
    )
    print(
        f"per-run torch.optim loop: {len(sample)} runs, {loop_rate:,.2f} runs/s ({loop_rate * steps:,.0f} run-steps/s)"
    )
    print(f"ratio: {batched_rate / loop_rate:,.0f}x; largest |theta difference| on the shared runs {worst:.1e}")


if __name__ == "__main__":
    main()
