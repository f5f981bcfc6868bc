"""Benchmark of the Clopper-Pearson bound helpers: time and accuracy of pytest_claims.stats.binomial against SciPy's.

A script, not a test: `python benchmarks/bench_binomial.py [--quick]` from pytest-claims/. For n = 1e3 ... 1e9
trials it times one decide_rate-equivalent computation (a lower bound at alpha = 0.01 and an upper bound at
alpha = 1e-6, as decide_rate computes them) on the plugin's pure-Python route, with SciPy's special.betaincinv
(the route the removed `stats` extra switched to), with SciPy's
`stats.beta.ppf` itself, and (n <= 1e5 only: seconds each) with decide.py's bisection, at several success
counts; and it reports the largest relative difference of every route's bounds from SciPy's beta.ppf (beta.isf for the
upper bound) and from a 40-digit mpmath root (the tests' reference) over those success counts and alphas
1e-12 ... 0.5. The pure route is the plugin's only one; SciPy's functions are measured as oracles.
Times are the best of several repeats (the machine is shared); compare them as ratios within one run.
"""

from __future__ import annotations

import argparse
import importlib.util
import math
import time
from pathlib import Path

from scipy import special, stats

from pytest_claims.statements import decide
from pytest_claims.stats import binomial

HERE = Path(__file__).resolve().parent
SIZES = [10**3, 10**4, 10**5, 10**6, 10**7, 10**8, 10**9]
RATES = [None, 1e-3, 0.3, 0.5]  # None: a single success
ALPHAS = [1e-12, 1e-6, 0.01, 0.5]
HELD_ALPHA, REFUTE_ALPHA = 0.01, 1e-6


def load_reference():
    """The tests' 40-digit mpmath reference (mp_bound), imported from tests/test_binomial.py."""
    spec = importlib.util.spec_from_file_location("binomial_reference", HERE.parent / "tests" / "test_binomial.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def successes_for(n: int, rate: float | None) -> int:
    return 1 if rate is None else max(1, min(n - 1, round(rate * n)))


def best_time(function, repeats: int) -> float:
    best = math.inf
    for _ in range(repeats):
        start = time.perf_counter()
        function()
        best = min(best, time.perf_counter() - start)
    return best


def scipy_bound(s: int, n: int, alpha: float, lower: bool) -> float:
    """SciPy's beta quantile: beta.ppf(alpha, s, n - s + 1) below; above, beta.isf(alpha, s + 1, n - s), the
    same quantile without rounding 1 - alpha first (beta.ppf(1 - alpha, ...) is 7e-7 off at alpha = 1e-12)."""
    return float(stats.beta.ppf(alpha, s, n - s + 1)) if lower else float(stats.beta.isf(alpha, s + 1, n - s))


def route_bound(route: str, s: int, n: int, alpha: float, lower: bool) -> float:
    if route == "old":
        return decide.rate_lower_bound(s, n, alpha) if lower else decide.rate_upper_bound(s, n, alpha)
    if route == "scipy":  # SciPy's incomplete beta inverses (Boost.Math underneath)
        return float(special.betaincinv(s, n - s + 1, alpha) if lower else special.betainccinv(s + 1, n - s, alpha))
    return binomial.rate_lower_bound(s, n, alpha) if lower else binomial.rate_upper_bound(s, n, alpha)


def decide_equivalent(route: str, s: int, n: int):
    """The two bounds decide_rate(at_least=True) computes."""
    if route == "beta.ppf":
        return lambda: (scipy_bound(s, n, HELD_ALPHA, True), scipy_bound(s, n, REFUTE_ALPHA, False))
    return lambda: (route_bound(route, s, n, HELD_ALPHA, True), route_bound(route, s, n, REFUTE_ALPHA, False))


def relative(found: float, exact) -> float:
    return float(abs(found - exact) / abs(exact)) if exact != 0 else (0.0 if found == 0 else math.inf)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="no mpmath comparison, one repeat")
    parser.add_argument("--old-up-to", type=int, default=10**5, help="largest n for decide.py's bisection")
    args = parser.parse_args()
    reference = None if args.quick else load_reference()
    repeats = 1 if args.quick else 5
    routes = ["pure", "scipy", "old"]
    print("| n | successes | pure ms | scipy betaincinv ms | beta.ppf ms | old bisection ms |")
    print("|---|---|---|---|---|---|")
    for n in SIZES:
        for rate in RATES:
            s = successes_for(n, rate)
            times = {}
            for route in ["pure", "scipy", "beta.ppf"] + (["old"] if n <= args.old_up_to and rate == 0.3 else []):
                times[route] = best_time(decide_equivalent(route, s, n), 1 if route == "old" else repeats) * 1e3
            old = f"{times['old']:.1f}" if "old" in times else "-"
            print(
                f"| {n:.0e} | {s} | {times['pure']:.3f} | {times['scipy']:.3f} | {times['beta.ppf']:.3f} | {old} |",
                flush=True,
            )
    print()
    print("Largest relative difference of the bounds over successes", RATES, "(None = 1) and alphas", ALPHAS)
    header = "| n | pure vs beta.ppf | scipy betaincinv vs beta.ppf | old vs beta.ppf"
    if reference:
        header += " | pure vs mpmath | scipy betaincinv vs mpmath | beta.ppf vs mpmath | old vs mpmath"
    print(header + " |")
    print("|---" * header.count("|") + "|")
    for n in SIZES:
        worst = {}
        for rate in RATES:
            s = successes_for(n, rate)
            for alpha in ALPHAS:
                for lower in (True, False):
                    found = {route: route_bound(route, s, n, alpha, lower) for route in routes[:2]}
                    if n <= args.old_up_to and rate == 0.3:
                        found["old"] = route_bound("old", s, n, alpha, lower)
                    found["beta.ppf"] = scipy_bound(s, n, alpha, lower)
                    exact = reference.mp_bound(s, n, alpha, lower, found["pure"]) if reference else None
                    for route, value in found.items():
                        pairs = [("vs beta.ppf", found["beta.ppf"])] + ([("vs mpmath", exact)] if exact else [])
                        for label, against in pairs:
                            key = (route, label)
                            worst[key] = max(worst.get(key, 0.0), relative(value, against))
        columns = [("pure", "vs beta.ppf"), ("scipy", "vs beta.ppf"), ("old", "vs beta.ppf")]
        if reference:
            columns += [("pure", "vs mpmath"), ("scipy", "vs mpmath"), ("beta.ppf", "vs mpmath"), ("old", "vs mpmath")]
        cells = [f"{worst[key]:.1e}" if key in worst else "-" for key in columns]
        print(f"| {n:.0e} | " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main()
