"""The safe t-test under a look after every observation (pytest_claims.anytime.safe_t), by Monte Carlo: how often a true
null (mean 0) is ever rejected, against the one-sided t-test's p-value read at every look; and when a real effect
is found. Prints today's numbers; benchmarks/RESULTS.md keeps them by date.

    python benchmarks/safe_t_type_one.py [--runs 4000] [--looks 100] [--delta 0.5] [--seed 0]
"""

from __future__ import annotations

import argparse
import math

import numpy as np
from scipy import stats

from pytest_claims import rate_upper_bound
from pytest_claims.anytime.safe_t import safe_t_log_evalue


def running_t(samples: np.ndarray) -> np.ndarray:
    """The one-sample t statistic of each run's first n observations, n = 2 .. columns (runs x looks)."""
    n = np.arange(1, samples.shape[1] + 1)
    mean = np.cumsum(samples, axis=1) / n
    sum_squares = np.cumsum(samples**2, axis=1)
    variance = (sum_squares[:, 1:] - n[1:] * mean[:, 1:] ** 2) / (n[1:] - 1)
    return mean[:, 1:] * np.sqrt(n[1:]) / np.sqrt(variance)


def first_crossings(t: np.ndarray, delta: float, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    """Per run, the first look (n) at which the safe t-test's e-value reaches 1 / alpha, and at which the one-sided
    t-test's p-value falls to alpha (0 where never)."""
    n = np.arange(2, t.shape[1] + 2)
    p_values = stats.t.sf(t, n - 1)
    level = -math.log(alpha)
    safe, naive = np.zeros(len(t), dtype=int), np.zeros(len(t), dtype=int)
    for run, row in enumerate(t):
        for statistic, size in zip(row, n):
            if safe_t_log_evalue(float(statistic), int(size), delta) >= level:
                safe[run] = size
                break
        below = np.nonzero(p_values[run] <= alpha)[0]
        naive[run] = n[below[0]] if below.size else 0
    return safe, naive


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=4000)
    parser.add_argument("--looks", type=int, default=100, help="observations per run (looks at n = 2 .. this)")
    parser.add_argument("--delta", type=float, default=0.5, help="the safe t-test's design effect")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    print(f"{args.runs} runs, a look after every observation, n = 2 .. {args.looks}, design effect {args.delta}")
    for effect in (0.0, args.delta):
        t = running_t(rng.standard_normal((args.runs, args.looks)) + effect)
        for alpha in (0.05, 0.01):
            safe, naive = first_crossings(t, args.delta, alpha)
            rates = []
            for name, found in (("safe t", safe), ("t-test at every look", naive)):
                k = int(np.count_nonzero(found))
                upper = rate_upper_bound(k, args.runs, 0.001)
                when = f", median n {int(np.median(found[found > 0]))}" if k else ""
                rates.append(f"{name} {k / args.runs:.4f} (upper 99.9% {upper:.4f}{when})")
            print(f"true mean {effect}: alpha {alpha}: ever rejected: " + "; ".join(rates))


if __name__ == "__main__":
    main()
