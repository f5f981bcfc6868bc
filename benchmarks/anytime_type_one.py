"""Exact type-I error of a rate statement decided again at each of 100 looks: today's rule against the e-process.

    .venv/bin/python benchmarks/anytime_type_one.py             # t in {0.5, 0.9}, a look every 1, 10, 100 trials
    .venv/bin/python benchmarks/anytime_type_one.py --quick     # a look every 10 trials only
    .venv/bin/python benchmarks/anytime_type_one.py --power     # and the cost: trials to hold a true statement

The statement 'rate >= t' is true, at rate = t (the hardest true case), and decided after every m trials, up to
100 looks; the run stops at its first held (held_alpha = 0.01) or refuted look. Printed: P(refuted at some look),
exact, by dynamic programming over the success count (the mass of the runs still going, convolved with
Binomial(m, t) at each look, the refuted and held counts taken out). The counts at each look come from the
plugin's own functions: decide.rate_decision_counts (today's exact Clopper-Pearson rule, reapplied at each look)
and anytime.anytime_decision_counts (the uniform beta-mixture e-process). One look of today's rule is also shown:
it is what the registered alpha promises. Not a pass/fail test: tests/test_anytime.py asserts the guarantees.

--power adds the price of that guarantee: with the true rate q on the statement's side, the trials by which
'rate >= t' is held with probability 0.5 and 0.9 (the held side at level alpha): for today's rule n50 / n90, the
least n at which one look holds with that probability; for the e-process tau50 / tau90, looked at after every
trial (exact, by the same dynamic program with the held count taken out at each n).
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "pytest-claims" / "src"))

import numpy as np  # noqa: E402
from scipy import stats  # noqa: E402

from pytest_claims.anytime.evalues import anytime_decision_counts  # noqa: E402
from pytest_claims.statements.decide import rate_decision_counts  # noqa: E402

HELD_ALPHA = 0.01
LOOKS = 100


def refuted_chance(counts_at, threshold: float, step: int, looks: int) -> float:
    """P(refuted at some look) for a true rate = threshold, a look every `step` trials, stopping at a decision.
    counts_at(n) -> (largest refuted count, least held count) at n trials."""
    step_law = stats.binom.pmf(np.arange(step + 1), step, threshold)
    going = np.ones(1)
    refuted = []
    for look in range(1, looks + 1):
        going = np.convolve(going, step_law)
        most_refuted, least_held = counts_at(look * step)
        refuted.append(float(going[: most_refuted + 1].sum()))
        going[: most_refuted + 1] = 0.0
        going[max(least_held, 0) :] = 0.0
    return math.fsum(refuted)


def row(threshold: float, step: int, alpha: float) -> str:
    def today(n: int) -> tuple[int, int]:
        return rate_decision_counts(n, threshold, alpha=alpha, held_alpha=HELD_ALPHA)

    def anytime(n: int) -> tuple[int, int]:
        return anytime_decision_counts(n, threshold, alpha=alpha, held_alpha=HELD_ALPHA)

    one_look = refuted_chance(today, threshold, step * LOOKS, 1)
    many = refuted_chance(today, threshold, step, LOOKS)
    evalue = refuted_chance(anytime, threshold, step, LOOKS)
    return (
        f"| {threshold:g} | {step} | {alpha:g} | {one_look:.3g} | {many:.3g} | {many / alpha:.1f} "
        f"| {evalue:.3g} | {evalue / alpha:.2f} |"
    )


def held_by(q: float, threshold: float, alpha: float, most: int) -> tuple[int, int, int, int]:
    """(n50, n90) of today's rule at one look, (tau50, tau90) of the e-process looked at after every trial."""
    one_look, going, held = [], np.ones(1), []
    for n in range(1, most + 1):
        _, least_held = rate_decision_counts(n, threshold, alpha=alpha, held_alpha=alpha)
        one_look.append(stats.binom.sf(least_held - 1, n, q))
        going = np.convolve(going, [1.0 - q, q])
        _, least_held = anytime_decision_counts(n, threshold, alpha=alpha, held_alpha=alpha)
        held.append(going[least_held:].sum())
        going[least_held:] = 0.0
    one_look, ever = np.array(one_look), np.cumsum(held)
    firsts = [
        int(np.argmax(p >= level)) + 1 if (p >= level).any() else -1 for p in (one_look, ever) for level in (0.5, 0.9)
    ]
    return tuple(firsts)


def power_table() -> None:
    print("\nTrials to hold 'rate >= t' at true rate q (held side at alpha): today one look, the e-process any look")
    print("| q vs t | alpha | today n50 / n90 | e-process tau50 / tau90 | ratio tau50 / tau90 |")
    print("|---|---|---|---|---|")
    for q, threshold, most in ((0.6, 0.5, 1400), (0.9, 0.8, 700), (0.99, 0.95, 900), (0.95, 0.9, 1600)):
        for alpha in (1e-2, 1e-4, 1e-5):
            n50, n90, tau50, tau90 = held_by(q, threshold, alpha, most)
            print(
                f"| {q:g} vs {threshold:g} | {alpha:g} | {n50} / {n90} | {tau50} / {tau90} "
                f"| {tau50 / n50:.2f} / {tau90 / n90:.2f} |",
                flush=True,
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a look every 10 trials only")
    parser.add_argument("--power", action="store_true", help="also the trials needed to hold a true statement")
    args = parser.parse_args()
    steps = (10,) if args.quick else (1, 10, 100)
    print(f"'rate >= t' true at rate = t; {LOOKS} looks, a look every m trials; held_alpha = {HELD_ALPHA}")
    print("| t | m | alpha | today, 1 look at 100 m | today, 100 looks | x alpha | e-process, 100 looks | x alpha |")
    print("|---|---|---|---|---|---|---|---|")
    start = time.perf_counter()
    for threshold in (0.5, 0.9):
        for step in steps:
            for alpha in (1e-2, 1e-4, 1e-5):
                print(row(threshold, step, alpha), flush=True)
    print(f"wall time {time.perf_counter() - start:.1f} s")
    if args.power:
        start = time.perf_counter()
        power_table()
        print(f"wall time {time.perf_counter() - start:.1f} s")


if __name__ == "__main__":
    main()
