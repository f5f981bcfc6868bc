"""Kernel SGD for entropic OT: iterations per second with the fast Gaussian sums against naive direct
summation, and the cost of one iteration at T = 1e5 over T = 1e3 (ratios from one run).

    .venv/bin/python benchmarks/bench_eot.py [--seeds 20]

The naive method evaluates u(x_i) + v(y_i) = sum_{j<i} beta_j (k(x_j, x_i) + k(y_j, y_i)) directly, so
iteration i costs O(i); it is timed over a window of iterations after i - 1 sources exist.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402

from kernels import eot  # noqa: E402

CONFIG = eot.SgdConfig("proposed", 10.0, 1.0, 0.1)


def fast_rate(seeds: int, iterations: int) -> float:
    start = time.perf_counter()
    eot.kernel_sgd(CONFIG, list(range(seeds)), iterations, (iterations,))
    return iterations / (time.perf_counter() - start)


def naive_rate_at(seeds: int, existing: int, window: int = 50) -> float:
    """Iterations per second of direct summation once `existing` sources are in the sums."""
    rng = np.random.default_rng(0)
    xs, ys = eot.sample_mu(rng, (seeds, existing + window)), eot.sample_nu(rng, (seeds, existing + window))
    beta = rng.standard_normal((seeds, existing + window)) * 1e-3
    start = time.perf_counter()
    for i in range(existing, existing + window):
        x, y = xs[:, i], ys[:, i]
        z = np.sum(
            beta[:, :i]
            * (
                np.exp(-((xs[:, :i] - x[:, None]) ** 2) / CONFIG.sigma2)
                + np.exp(-((ys[:, :i] - y[:, None]) ** 2) / CONFIG.sigma2)
            ),
            axis=1,
        )
        z = z - (x - y) ** 2
        s = z / eot.EPS + math.log(CONFIG.rho)
        beta[:, i] = (CONFIG.C / math.sqrt(i + 1)) * (1 - 1 / (1 + np.exp(-s)) / CONFIG.rho)
    return window / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=20)
    args = parser.parse_args()
    f3, f4, f5 = (fast_rate(args.seeds, t) for t in (1_000, 10_000, 100_000))
    n4, n5 = naive_rate_at(args.seeds, 10_000), naive_rate_at(args.seeds, 100_000)
    print(f"batched over {args.seeds} seeds, {CONFIG.name}")
    print(f"fast sums: {f3:,.0f} it/s over 1e3 iterations, {f4:,.0f} it/s over 1e4, {f5:,.0f} it/s over 1e5")
    print(f"naive direct summation: {n4:,.0f} it/s at iteration 1e4, {n5:,.0f} it/s at iteration 1e5")
    print(f"speed-up at 1e4: {f4 / n4:.1f}x; at 1e5: {f5 / n5:.1f}x")
    print(f"cost of one iteration, whole run of 1e5 over whole run of 1e3: {f3 / f5:.2f}")


if __name__ == "__main__":
    main()
