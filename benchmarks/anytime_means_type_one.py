"""Nominal against measured type-I error for the routes of issue 47's table that the plugin now answers: each row
valid (measured at most alpha, within Monte Carlo error) or refused by the plugin in one line (the line printed).

- Means by betting (decide_mean's e-process, pytest_claims.anytime.betting) under skewed, heavy-tailed and two-point
  nulls whose mean is exactly the threshold, a look after every observation, both sides; a deliberately invalid bet
  (chosen after its outcome) as the control that must exceed alpha; and the power cost against the safe t-test on
  normal data (clipped at +-4 sd, which the betting route needs as bounds).
- The safe t-test on skewed data (t at every look, and decide_safe_t's product of batch e-values): refused without
  assume="normal"; what it would measure is printed beside the refusal.
- Alpha spent over rounds: each round testing its own batch (valid) against cumulative data with batch sizes chosen
  from the data (refused).
- A fixed rate statement ending inconclusive: the former advice (M more trials on the same stream, decided again)
  against the new one (a fresh stream of the 90%-chance size, decided alone), exact by binomial sums.

- Pooling a replication set in a merge (benchmarks/pooling_type_one.py): the users' behaviours of issue 47's table
  (seeds fixed in advance, added in ascending order, cherry-picked, added below, one stream under several labels,
  relabelled, a lower seed continued after a merge), merged through pool_seeds; valid, refused, or not detectable and
  stated as an assumption of the pooled route.

    python benchmarks/anytime_means_type_one.py [--size ci|large] [--seed 0] [--rows all|pooling]

`--size ci` runs in seconds (CI's docs step); `--size large` is the run recorded in benchmarks/RESULTS.md.
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np
from scipy import stats

from pytest_claims.anytime.evalues import round_alpha
from pytest_claims.statements.anytime_batches import decide_safe_t, decide_test_spent
from pytest_claims.anytime.betting import betting_path
from pytest_claims.anytime.safe_t import safe_t_log_evalue
from pytest_claims.statements.decide import rate_decision_counts, trials_for_chance, trials_to_decide

from pooling_type_one import pooling_rows  # this directory: the pooling rows

SIZES = {  # runs, observations per run (betting); runs (safe t); runs (spending); first-run trials (fixed rate)
    "ci": {"betting": (200, 150), "power": 40, "safe_t": 200, "spending": 40_000, "fixed": 60},
    "large": {"betting": (4000, 500), "power": 400, "safe_t": 2000, "spending": 1_000_000, "fixed": 100},
}


def row(route: str, nominal: float, measured: float | None, runs: int | None, verdict: str) -> None:
    """One table row: the route, nominal alpha, measured type-I with its Monte Carlo s.e. (or exact), valid/refused."""
    if measured is None:
        shown = "-"
    elif runs is None:
        shown = f"{measured:.4g} (exact, {measured / nominal:.2f} x alpha)"
    else:
        se = math.sqrt(max(measured, nominal) * (1 - max(measured, nominal)) / runs)
        shown = f"{measured:.4g} +- {se:.2g} ({measured / nominal:.2f} x alpha, {runs} runs)"
    print(f"| {route} | {nominal:g} | {shown} | {verdict} |")


def pooling_row(route: str, null: str, nominal: float, measured: str, verdict: str) -> None:
    print(f"| pooling, {route}; {null} | {nominal:g} | {measured} | {verdict} |")


# ------------------------------------------------------------------------------------------------
# Nulls in [0, 1] whose mean is exactly known


def _truncated_exponential(rng, n, cap=20.0):
    """Exp(1) conditioned on [0, cap], over cap: mean (1 - (cap + 1) e^-cap) / (1 - e^-cap) / cap."""
    u = rng.random(n)
    return -np.log1p(-u * (1 - math.exp(-cap))) / cap


def _capped_lognormal(rng, n, sigma=1.5, cap=50.0):
    return np.minimum(np.exp(sigma * rng.standard_normal(n)), cap) / cap


def _lognormal_mean(sigma=1.5, cap=50.0):
    """E[min(LN(0, sigma), cap)] / cap, exactly."""
    phi = stats.norm.cdf
    return (math.exp(sigma**2 / 2) * phi((math.log(cap) - sigma**2) / sigma) + cap * phi(-math.log(cap) / sigma)) / cap


NULLS = {
    "skewed: Exp(1) truncated to [0, 20]": (
        _truncated_exponential,
        (1 - 21 * math.exp(-20)) / (1 - math.exp(-20)) / 20,
    ),
    "skewed, heavy: lognormal(0, 1.5) capped at 50": (_capped_lognormal, _lognormal_mean()),
    "heavy-tailed: t(2) clipped to [-30, 30]": (
        lambda rng, n: (np.clip(rng.standard_t(2, n), -30, 30) + 30) / 60,
        0.5,
    ),
    "two-point {0, 1}, mean 0.5": (lambda rng, n: (rng.random(n) < 0.5).astype(float), 0.5),
    "two-point {0, 1}, mean 0.02 (skewed)": (lambda rng, n: (rng.random(n) < 0.02).astype(float), 0.02),
}


def betting_type_one(rng, draw, m, alpha, runs, n, aggressive=False):
    """P(the capital for 'mean > m' ever reaches 1/alpha), P(the one against it does), under a null of mean m."""
    level, above, below = -math.log(alpha), 0, 0
    for _ in range(runs):
        path = betting_path(draw(rng, n), 0.0, 1.0, m, alpha=alpha, held_alpha=alpha, aggressive=aggressive)
        above += max(s.log_for for s in path) >= level
        below += max(s.log_against for s in path) >= level
    return above / runs, below / runs


def betting_rows(rng, size):
    runs, n = SIZES[size]["betting"]
    for alpha in (0.05, 0.01):
        for name, (draw, m) in NULLS.items():
            above, below = betting_type_one(rng, draw, m, alpha, runs, n)
            for side, measured in (("'mean > c' falsely held", above), ("'mean < c' falsely held", below)):
                ok = measured <= alpha + 4 * math.sqrt(alpha * (1 - alpha) / runs)
                row(
                    f"betting, {name}, {side}, a look after each of {n}", alpha, measured, runs, "valid" if ok else "NO"
                )
        draw, m = NULLS["two-point {0, 1}, mean 0.5"]
        control, _ = betting_type_one(rng, draw, m, alpha, runs, n, aggressive=True)
        meant = "invalid, as meant" if control > 2 * alpha else "NO (the invalid control kept alpha: a blind test)"
        row("control: a bet chosen after its outcome (invalid), two-point 0.5", alpha, control, runs, meant)


def _first_crossing(levels) -> int | None:
    return next((i for i, hit in enumerate(levels, start=1) if hit), None)


def power_rows(rng, size, effect=0.5, most=400):
    """Looks to reach 1/alpha on N(effect, 1) data: betting (clipped to [-4, 4]) against the safe t (delta = effect),
    each with a look after every observation; median and 90% quantile of the first crossing."""
    runs = SIZES[size]["power"]
    for alpha in (1e-2, 1e-4):
        level, found = -math.log(alpha), {"betting": [], "safe t": []}
        for _ in range(runs):
            x = np.clip(rng.normal(effect, 1.0, most), -4, 4)
            path = betting_path(x, -4.0, 4.0, 0.0, alpha=alpha, held_alpha=alpha)
            found["betting"].append(_first_crossing(s.log_for >= level for s in path) or math.inf)
            sums, squares, crossed = np.cumsum(x), np.cumsum(x * x), math.inf
            for k in range(2, most + 1):
                mean = sums[k - 1] / k
                sd = math.sqrt(max((squares[k - 1] - k * mean * mean) / (k - 1), 1e-300))
                if safe_t_log_evalue(mean * math.sqrt(k) / sd, k, effect) >= level:
                    crossed = k
                    break
            found["safe t"].append(crossed)
        shown = {name: np.quantile(v, [0.5, 0.9]) for name, v in found.items()}
        ratio = shown["betting"] / shown["safe t"]
        print(
            f"| power, N({effect}, 1) vs 'mean > 0', alpha {alpha:g} ({runs} runs): first crossing, median / 90% | "
            f"betting {shown['betting'][0]:.0f} / {shown['betting'][1]:.0f} | safe t {shown['safe t'][0]:.0f} / "
            f"{shown['safe t'][1]:.0f} | betting costs {ratio[0]:.2f} / {ratio[1]:.2f} x |"
        )


# ------------------------------------------------------------------------------------------------
# The safe t on skewed data: refused without assume="normal"


def refusal(call) -> str:
    try:
        call()
    except ValueError as error:
        return f"refused: {str(error).split(': ', 1)[1]}"
    return "NOT REFUSED"


def safe_t_rows(rng, size, delta=0.5, n=100):
    runs, alpha = SIZES[size]["safe_t"], 0.05
    line = refusal(lambda: decide_safe_t(2.0, 10, delta=delta, alpha=alpha, what="m"))
    hits = 0
    for _ in range(runs):  # centred exponential: mean exactly 0, skewed; t recomputed at every look
        x = rng.exponential(1.0, n) - 1.0
        sums, squares = np.cumsum(x), np.cumsum(x * x)
        for k in range(2, n + 1):
            mean = sums[k - 1] / k
            sd = math.sqrt(max((squares[k - 1] - k * mean * mean) / (k - 1), 1e-300))
            if safe_t_log_evalue(-mean * math.sqrt(k) / sd, k, delta) >= -math.log(alpha):  # 'mean < 0' held
                hits += 1
                break
    row(f"safe t, centred Exp(1) (mean 0), 'mean < 0', t at every look to {n}", alpha, hits / runs, runs, line)
    batch = rng.exponential(1.0, (runs * 5, 5)) - 1.0
    t = -batch.mean(axis=1) * math.sqrt(5) / batch.std(axis=1, ddof=1)
    null_mean = float(np.mean([math.exp(safe_t_log_evalue(float(v), 5, delta)) for v in t]))
    print(
        f"| decide_safe_t's product, batches of 5 centred Exp(1): a batch e-value's null mean {null_mean:.3g} "
        f"(must be <= 1) | {alpha:g} | - | {line} |"
    )


# ------------------------------------------------------------------------------------------------
# Alpha spent over rounds


def spending_type_one(rng, alpha, runs, cumulative, rounds=20):
    """P(some round k's one-sided z-test rejects at round_alpha(alpha, k)) under N(0, 1) data, when each round's size
    follows the data: the same size again if z > 1, else 100 times more (diluting the old data); sums drawn whole."""
    levels = stats.norm.isf([round_alpha(alpha, k) for k in range(1, rounds + 1)])
    total, n, size = np.zeros(runs), np.zeros(runs), np.full(runs, 20.0)
    alive, hits = np.ones(runs, bool), 0
    for k in range(rounds):
        drawn = rng.standard_normal(runs) * np.sqrt(size)
        if cumulative:
            total, n = total + drawn, n + size
            z = total / np.sqrt(n)
        else:
            z = drawn / np.sqrt(size)
        crossed = alive & (z >= levels[k])
        hits, alive = hits + int(crossed.sum()), alive & ~crossed
        size = np.where(z > 1.0, 1.0, 100.0) * (n if cumulative else size)
    return hits / runs


def spending_rows(rng, size):
    runs = SIZES[size]["spending"]
    line = refusal(
        lambda: decide_test_spent(0.5, 0.5, alpha=0.01, held_alpha=0.01, what="x", batch=0, round_data="cumulative")
    )
    for alpha in (0.05, 0.01, 1e-3):
        own = spending_type_one(rng, alpha, runs, cumulative=False)
        ok = own <= alpha + 4 * math.sqrt(alpha / runs)
        row("alpha spending, each round its own batch, sizes chosen from the data", alpha, own, runs,
            "valid" if ok else "NO")  # fmt: skip
        row("alpha spending, cumulative data, sizes chosen from the data", alpha,
            spending_type_one(rng, alpha, runs, cumulative=True), runs, line)  # fmt: skip


# ------------------------------------------------------------------------------------------------
# A fixed rate statement after an inconclusive end


def _refuted_chance(n: int, t: float, alpha: float) -> float:
    """P(decide_rate refutes 'rate >= t' at n trials | rate t): the largest refuted count's binomial tail."""
    refuted, _ = rate_decision_counts(n, t, alpha=alpha, held_alpha=alpha)
    return float(stats.binom.cdf(refuted, n, t)) if refuted >= 0 else 0.0


def fixed_rows(size, t=0.5, alpha=0.05, most=20_000):
    """'rate >= t' true at rate t, a first run of n1 trials at alpha. Former advice: on an inconclusive end add M more
    trials of the same stream (N in total, the borderline size) and decide again. New advice: a fresh stream of the
    90%-chance size, decided alone. Exact: sums over the first run's count (and, for the former, the added count)."""
    n1 = SIZES[size]["fixed"]
    refuted1, held1 = rate_decision_counts(n1, t, alpha=alpha, held_alpha=alpha)
    first = float(stats.binom.cdf(refuted1, n1, t))
    former, fresh, chances = first, first, []
    for k in range(refuted1 + 1, held1):
        p_k = float(stats.binom.pmf(k, n1, t))
        total = trials_to_decide(k / n1, t, alpha, at_least=True, trials=n1, most=most)
        if total is not None and total > n1:  # refuted at N in total, given k of the first n1
            refuted, _ = rate_decision_counts(total, t, alpha=alpha, held_alpha=alpha)
            former += p_k * float(stats.binom.cdf(refuted - k, total - n1, t)) if refuted >= k else 0.0
        n_fresh = trials_for_chance(k / n1, t, alpha, at_least=True, most=most)
        if n_fresh is not None:
            fresh += p_k * _refuted_chance(n_fresh, t, alpha)
            chances.append(n_fresh)
    row(f"fixed rate (n = {n1}, rate = t = {t}), then M more on the same stream (former advice)", alpha, former,
        None, "no (the former advice)")  # fmt: skip
    row(f"fixed rate (n = {n1}), then a fresh stream of the 90%-chance size, decided alone (new advice)", alpha, fresh,
        None, "the fresh run alone: alpha; both runs: at most alpha + alpha")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", choices=sorted(SIZES), default="ci")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--rows", choices=("all", "pooling"), default="all", help="every row, or the pooling rows only")
    args = parser.parse_args()
    rng, started = np.random.default_rng(args.seed), time.perf_counter()
    print(f"issue 47's table, size {args.size}, seed {args.seed}, rows {args.rows}\n")
    print("| route | nominal | measured type-I | valid or refused |\n|---|---|---|---|")
    if args.rows == "pooling":
        pooling_rows(rng, args.size, NULLS, pooling_row)
        print(f"\n{time.perf_counter() - started:.1f} s")
        return
    betting_rows(rng, args.size)
    safe_t_rows(rng, args.size)
    spending_rows(rng, args.size)
    fixed_rows(args.size)
    pooling_rows(rng, args.size, NULLS, pooling_row)
    print("\n| power cost | betting | safe t | ratio |\n|---|---|---|---|")
    power_rows(rng, args.size)
    print(f"\n{time.perf_counter() - started:.1f} s")


if __name__ == "__main__":
    main()
