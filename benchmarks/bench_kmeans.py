"""Throughput of the k-means routes, printed as ratios measured in one run (not a pass/fail test).

    .venv/bin/python benchmarks/bench_kmeans.py            # all sections
    .venv/bin/python benchmarks/bench_kmeans.py --quick    # fewer trials

Sections: explicit vs Gram vs Wishart trials per second at d = 100, 1e4, 1e5 (Lloyd + Hartigan on the
same trials); the Wishart route's cost at d = 1e9 over d = 1e3; the official 20 x 20 x 100 grid through
the Wishart route on one core; the whole full-tier k-means grid (both starts, d up to 1e9).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from threadpoolctl import threadpool_limits  # noqa: E402

from workloads.kmeans import FULL  # noqa: E402
from kernels import kmeans as km  # noqa: E402

SEED = 29589


def best_of(repeats: int, fn) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def both(arrays, partition, route):
    km.lloyd(arrays, partition, 2, route=route)
    km.hartigan(arrays, partition, 2, route=route)


def routes(trials: int) -> None:
    print(f"== routes: Lloyd + Hartigan on the same {trials} trials (sigma2 = 100), best of 3")
    print(
        f"{'d':>8} {'explicit t/s':>13} {'gram t/s':>10} {'wishart t/s':>12} {'gram/explicit':>14} "
        f"{'wishart/explicit':>17}"
    )
    for d in (100, 10_000, 100_000):
        data, _, partition = km.make_trials(SEED, d, 100.0, trials)
        explicit = best_of(3, lambda: both(data, partition, "explicit"))
        gram = best_of(3, lambda: both(km.gram_matrix(data), partition, "gram"))
        wishart = best_of(3, lambda: both(*km.sample_gram_wishart(SEED, d, 100.0, trials)[::2], "gram"))
        print(
            f"{d:>8} {trials / explicit:>13.1f} {trials / gram:>10.1f} {trials / wishart:>12.1f} "
            f"{explicit / gram:>14.1f} {explicit / wishart:>17.1f}"
        )


def wishart_scaling(trials: int) -> None:
    def run(d):
        gram, _, partition = km.sample_gram_wishart(SEED, d, 100.0, trials)
        both(gram, partition, "gram")

    t3, t9 = best_of(3, lambda: run(1_000)), best_of(3, lambda: run(10**9))
    print(f"== Wishart route, {trials} trials: d=1e3 {t3:.3f} s, d=1e9 {t9:.3f} s, ratio 1e9/1e3 = {t9 / t3:.2f}")


def official_grid_one_core() -> None:
    with threadpool_limits(1):
        start = time.perf_counter()
        for sigma2 in FULL.sigma2s:
            for d, _ in FULL.row:
                gram, _, partition = km.sample_gram_wishart(SEED, d, sigma2, FULL.trials)
                both(gram, partition, "gram")
        elapsed = time.perf_counter() - start
    cells = len(FULL.sigma2s) * len(FULL.row)
    print(
        f"== official grid {len(FULL.row)} d x {len(FULL.sigma2s)} sigma2 x {FULL.trials} trials, Wishart route, one "
        f"core: {elapsed:.1f} s ({cells * FULL.trials / elapsed:.0f} trials/s)"
    )


def full_tier_grid() -> None:
    start = time.perf_counter()
    for st in FULL.starts:
        for sigma2 in FULL.sigma2s:
            for d, source in FULL.row:
                km.paired_cell(SEED, d, sigma2, FULL.trials, source=source, start=st)
    for sigma2 in FULL.high_noise:
        for d in FULL.huge_dims:
            km.paired_cell(SEED, d, sigma2, FULL.trials, source="wishart")
    print(
        f"== whole full-tier k-means grid (both starts, + d = 1e6, 1e9), this machine's threads: "
        f"{time.perf_counter() - start:.1f} s"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    routes(10 if args.quick else 20)
    wishart_scaling(500 if args.quick else 2000)
    official_grid_one_core()
    if not args.quick:
        full_tier_grid()
