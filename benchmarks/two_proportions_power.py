"""The two-proportions route at one look and along a chain of batches, exact: what decide_two_proportions costs
against Fisher's exact test read once, and what a continued chain buys.

    .venv/bin/python benchmarks/two_proportions_power.py

One look: for n seeds a arm and true rates (p_A, p_B), the chance that the statement 'p_A > p_B' is held, by the
one-sided Fisher exact test at level alpha (scipy.stats.fisher_exact, p <= alpha) and by the plugin's conditional
e-value (pytest_claims.anytime.evalues.two_proportions_log_evalue, E >= 1 / alpha): a sum over every table of its
binomial probability. Chain: batches of b seeds a arm, a look after each, the product of the batches' e-values;
the chance of having crossed 1 / alpha by batch m, by a walk over the running ln E (crossed mass taken out), and
the same walk's crossing chance under the null p_A = p_B (at most alpha by Ville's inequality).
Not a pass/fail test: the registry's `decision` reasons cite it (RESULTS.md).
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "pytest-claims" / "src"))

from scipy import stats  # noqa: E402

from pytest_claims.anytime.evalues import two_proportions_log_evalue  # noqa: E402


def table_law(n: int, p_a: float, p_b: float) -> list[tuple[float, int, int]]:
    """Every table of n a arm: (its probability, k_a, k_b)."""
    a, b = stats.binom.pmf(range(n + 1), n, p_a), stats.binom.pmf(range(n + 1), n, p_b)
    return [(a[k_a] * b[k_b], k_a, k_b) for k_a in range(n + 1) for k_b in range(n + 1)]


def one_look_power(n: int, p_a: float, p_b: float, alpha: float) -> tuple[float, float]:
    """(Fisher's chance of holding, the e-value's) at one look of n seeds a arm."""
    fisher = evalue = 0.0
    for prob, k_a, k_b in table_law(n, p_a, p_b):
        table = [[k_a, n - k_a], [k_b, n - k_b]]
        if stats.fisher_exact(table, alternative="greater").pvalue <= alpha:
            fisher += prob
        if two_proportions_log_evalue(k_a, n, k_b, n) >= -math.log(alpha):
            evalue += prob
    return fisher, evalue


def chain_crossing(batch: int, p_a: float, p_b: float, alpha: float, batches: int) -> list[float]:
    """The chance that the product chain has crossed 1 / alpha by each of `batches` looks."""
    steps: dict[float, float] = {}
    for prob, k_a, k_b in table_law(batch, p_a, p_b):
        if prob == 0.0:  # a table the rates rule out adds states and no mass
            continue
        key = round(two_proportions_log_evalue(k_a, batch, k_b, batch), 10)
        steps[key] = steps.get(key, 0.0) + prob
    level, alive, crossed, out = -math.log(alpha), {0.0: 1.0}, 0.0, []
    for _ in range(batches):
        after: dict[float, float] = {}
        for log_e, mass in alive.items():
            for step, prob in steps.items():
                total = log_e + step
                if total >= level:
                    crossed += mass * prob
                else:
                    key = round(total, 8)
                    after[key] = after.get(key, 0.0) + mass * prob
        alive = after
        out.append(crossed)
    return out


def main() -> None:
    print("one look: chance of holding 'p_A > p_B' (Fisher's one-sided exact test | the conditional e-value)")
    for n, p_a, p_b in ((10, 0.9, 0.05), (10, 0.75, 0.0), (20, 0.6, 0.1), (32, 0.9, 0.0), (4, 1.0, 0.0)):
        for alpha in (1e-2, 1e-4, 1e-5):
            fisher, evalue = one_look_power(n, p_a, p_b, alpha)
            print(f"  n {n:>2} a arm, rates {p_a:.2f} vs {p_b:.2f}, alpha {alpha:g}: {fisher:.3f} | {evalue:.3f}")
    print("a chain of batches of 4 seeds a arm, a look after each: chance of having crossed by batch 1, 2, ...")
    # the null row stops at 6 batches: its 25 outcomes a batch make the walk's states grow (12 take minutes)
    for p_a, p_b, alpha, batches in (
        (0.75, 0.0, 1e-5, 12),
        (0.5, 0.0, 1e-5, 12),
        (0.4, 0.0, 1e-5, 12),
        (0.5, 0.5, 1e-2, 6),
    ):
        crossed = chain_crossing(4, p_a, p_b, alpha, batches)
        print(f"  rates {p_a:.2f} vs {p_b:.2f}, alpha {alpha:g}: " + " ".join(f"{c:.3g}" for c in crossed))


if __name__ == "__main__":
    main()
