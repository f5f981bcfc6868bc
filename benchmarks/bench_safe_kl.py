"""Instances per second of the batched F_rho solver against a per-instance scipy.optimize.brentq loop.

    .venv/bin/python benchmarks/bench_safe_kl.py [--sizes 4000 100000]

Both solve the same stationarity condition E_mu sigmoid(phi - beta) = rho on the same instances
(the five random families, n up to 400 atoms); the brentq loop works on each instance's real atoms.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402
from scipy.optimize import brentq  # noqa: E402

from workloads.safe_kl import random_instances  # noqa: E402
from kernels import safe_kl as sk  # noqa: E402


def brentq_loop(instances, limit: int | None = None) -> np.ndarray:
    count = len(instances) if limit is None else min(limit, len(instances))
    out = np.empty(count)
    for i in range(count):
        real = instances.mu[i] > 0
        phi, mu, rho = instances.phi[i, real], instances.mu[i, real], instances.rho[i]
        shift = np.log(rho) - np.log1p(-rho)

        def residual(beta):
            return np.sum(mu * 0.5 * (1.0 + np.tanh(0.5 * (phi - beta)))) - rho

        beta = brentq(residual, phi.min() - shift - 1.0, phi.max() - shift + 1.0, xtol=1e-15, rtol=8.9e-16, maxiter=500)
        out[i] = beta + np.log(rho) - 1.0 + np.sum(mu * np.logaddexp(0.0, phi - beta)) / rho
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[4000, 100000])
    parser.add_argument(
        "--loop-limit", type=int, default=4000, help="instances timed in the brentq loop (its rate is per instance)"
    )
    args = parser.parse_args()
    for size in args.sizes:
        instances = random_instances(29589, "benchmark", size)
        start = time.perf_counter()
        batched = sk.f_rho_value(instances.phi, instances.mu, instances.rho)
        t_batched = time.perf_counter() - start
        start = time.perf_counter()
        looped = brentq_loop(instances, args.loop_limit)
        t_loop = time.perf_counter() - start
        rate_batched, rate_loop = size / t_batched, len(looped) / t_loop
        agree = np.max(np.abs(batched[: len(looped)] - looped) / np.maximum(1.0, np.abs(looped)))
        print(
            f"{size:>7} instances: batched {rate_batched:,.0f}/s, brentq loop {rate_loop:,.0f}/s "
            f"(on {len(looped)}), ratio {rate_batched / rate_loop:.1f}x, max rel. difference {agree:.1e}"
        )


if __name__ == "__main__":
    main()
