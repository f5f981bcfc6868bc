"""The exact binomial tails and Clopper-Pearson bounds of pytest_claims.stats.binomial (its one route, pure Python)
against mpmath at 40 digits and against the binomial sum itself, for n up to 1e9; each bound on its side of the
observed rate; SciPy an oracle elsewhere (tests/test_inconclusive.py), never a route."""

from __future__ import annotations

import ast
import importlib
import math
import sys
import tomllib
from pathlib import Path

import pytest

from pytest_claims.stats import binomial

# The module's stated accuracy, "about 1e-12 relative", is what every comparison asserts.
RELATIVE = 1e-12

# The tests of n >= 1e8 take seconds each (the 40-digit reference): they run without -m smoke only.
LARGE = 10**8


@pytest.fixture(scope="module")
def core_binomial():
    """The module as the core install imports it: a fresh copy loaded while `import scipy` fails."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setitem(sys.modules, "scipy", None)
        patch.setitem(sys.modules, "scipy.special", None)
        spec = importlib.util.spec_from_file_location("binomial_without_scipy", binomial.__file__)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    return module


@pytest.fixture
def route(core_binomial):
    """The module as the core install has it (SciPy not importable): the one route."""
    return core_binomial


# ------------------------------------------------------------------------------------------------
# The reference: mpmath at 40 digits


def _mp():
    mpmath = pytest.importorskip("mpmath")
    mpmath.mp.dps = 40
    return mpmath


def mp_incomplete_beta(a, b, x):
    """(I_x(a, b), 1 - I_x(a, b)) in mpmath at 40 digits: the prefactor from loggamma and the continued
    fraction (modified Lentz, on the side of the mean where it converges) evaluated at that precision. The
    identity is exact; what the double routes get wrong (rounding amplified near the mean) is gone at 40
    digits. Checked against the definition (a binomial sum) in test_the_reference_is_the_definition."""
    mp = _mp()
    a, b, x = mp.mpf(a), mp.mpf(b), mp.mpf(x)
    if x == 0:
        return mp.mpf(0), mp.mpf(1)
    if x == 1:
        return mp.mpf(1), mp.mpf(0)
    mirrored = x > (a + 1) / (a + b + 2)
    if mirrored:
        a, b, x = b, a, 1 - x
    y = 1 - x
    log_prefactor = a * mp.log(x) + b * mp.log(y) - (mp.loggamma(a) + mp.loggamma(b) - mp.loggamma(a + b))
    tiny = mp.mpf(10) ** -200
    d = 1 / (1 - (a + b) * x / (a + 1))
    c, value = mp.mpf(1), d
    for m in range(1, 10**6):
        for numerator in (
            m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)),
            -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1)),
        ):
            d = 1 + numerator * d
            d = 1 / (d if abs(d) > tiny else tiny)
            c = 1 + numerator / c
            c = c if abs(c) > tiny else tiny
            value *= d * c
        if abs(d * c - 1) < mp.mpf(10) ** -36:
            break
    small = mp.exp(log_prefactor) * value / a
    return (1 - small, small) if mirrored else (small, 1 - small)


def mp_binomial_sf(k, n, p):
    """P(X >= k) at 40 digits."""
    if k <= 0:
        return _mp().mpf(1)
    if k > n:
        return _mp().mpf(0)
    return mp_incomplete_beta(k, n - k + 1, p)[0]


def mp_binomial_cdf(k, n, p):
    """P(X <= k) at 40 digits."""
    if k < 0:
        return _mp().mpf(0)
    if k >= n:
        return _mp().mpf(1)
    return mp_incomplete_beta(k + 1, n - k, p)[1]


def mp_bound(successes, trials, alpha, lower, start):
    """The Clopper-Pearson bound to 40 digits: Newton's method on P(X >= s | p) = alpha (lower) or
    P(X <= s | p) = alpha (upper), from `start` (a double route's answer: from 1e-8 relative, three
    quadratically converging steps reach 1e-32)."""
    mp = _mp()
    s, n = successes, trials
    p, alpha = mp.mpf(start), mp.mpf(alpha)
    for _ in range(6):
        if lower:  # d/dp P(X >= s) = s C(n, s) p^(s-1) q^(n-s)
            gap = mp_incomplete_beta(s, n - s + 1, p)[0] - alpha
            log_slope = mp.loggamma(n + 1) - mp.loggamma(s) - mp.loggamma(n - s + 1)
            slope = mp.exp(log_slope + (s - 1) * mp.log(p) + (n - s) * mp.log(1 - p))
        else:  # d/dp P(X <= s) = -(n - s) C(n, s) p^s q^(n-s-1)
            gap = mp_incomplete_beta(s + 1, n - s, p)[1] - alpha
            log_slope = mp.loggamma(n + 1) - mp.loggamma(s + 1) - mp.loggamma(n - s)
            slope = -mp.exp(log_slope + s * mp.log(p) + (n - s - 1) * mp.log(1 - p))
        step = gap / slope
        p -= step
        if abs(step) < mp.mpf(10) ** -34 * p:
            break
    return p


def relative_error(found, exact):
    """|found - exact| / |exact| (0 when both are 0), computed in mpmath."""
    mp = _mp()
    if exact == 0:
        return 0.0 if found == 0 else math.inf
    return float(abs(mp.mpf(found) - exact) / abs(exact))


# ------------------------------------------------------------------------------------------------
# The grid: n from 1 to 1e9; successes at the edges (0, 1, 2, n - 1, n) and at rates from 1e-6 to 0.999


SIZES = [1, 2, 10, 1000, 10**5, 10**6, 10**7, 10**8, 10**9]
ALPHAS = [1e-12, 1e-6, 0.01, 0.05, 0.5]


def success_counts(n):
    counts = {0, 1, 2, n - 1, n} | {round(rate * n) for rate in (1e-6, 1e-3, 0.3, 0.5, 0.999)}
    return sorted(s for s in counts if 0 <= s <= n)


def grid_param(values, case_id, n):
    return pytest.param(*values, id=case_id, marks=[] if n >= LARGE else [pytest.mark.smoke])


BOUND_GRID = [grid_param((s, n), f"{s}of{n}", n) for n in SIZES for s in success_counts(n)]


@pytest.mark.parametrize("successes, trials", BOUND_GRID)
def test_bounds_match_mpmath(successes, trials, route):
    """Both one-sided bounds at every alpha from 1e-12 to 0.5 against the 40-digit root, to 1e-12."""
    worst = []
    for alpha in ALPHAS:
        for lower in (True, False):
            bound = route.rate_lower_bound if lower else route.rate_upper_bound
            found = bound(successes, trials, alpha)
            if lower and successes == 0:
                assert found == 0.0
            elif not lower and successes == trials:
                assert found == 1.0
            else:
                exact = mp_bound(successes, trials, alpha, lower, found)
                worst.append((relative_error(found, exact), alpha, "lower" if lower else "upper", found))
    assert max(worst, default=(0.0,))[0] <= RELATIVE, max(worst)


def tail_points(n):
    """(k, p): k at the mean and 1, 3, 8, 20 standard deviations out, for p from 1e-6 to 0.9; k = 0, 1, n."""
    points = set()
    for p in (1e-6, 1e-3, 0.3, 0.5, 0.9):
        sd = math.sqrt(n * p * (1 - p))
        for z in (-8, -3, -1, 0, 1, 3, 8, 20):
            k = math.floor(n * p + z * sd)
            if 0 <= k <= n:
                points.add((k, p))
        points.update({(0, p), (1, p), (n, p)})
    return sorted(points)


TAIL_GRID = [grid_param((k, n, p), f"{k}of{n}at{p}", n) for n in SIZES for k, p in tail_points(n)]


@pytest.mark.parametrize("k, n, p", TAIL_GRID)
def test_tails_match_mpmath(k, n, p, route):
    """P(X >= k) and P(X <= k) against 40 digits, each relative to itself (tails down to 1e-300), to 1e-12."""
    for mine, exact in (
        (route.binomial_sf(k, n, p), mp_binomial_sf(k, n, p)),
        (route.binomial_cdf(k, n, p), mp_binomial_cdf(k, n, p)),
    ):
        if exact < 1e-300:  # below the normal range of doubles: only a small absolute error is possible
            assert abs(mine - float(exact)) <= 1e-310
        else:
            assert relative_error(mine, exact) <= RELATIVE, (mine, float(exact))


# ------------------------------------------------------------------------------------------------
# The reference, the core install, the conventions


@pytest.mark.smoke
@pytest.mark.parametrize("k, n, p", [(0, 1, 0.5), (3, 10, 0.3), (7, 10, 0.3), (480, 1000, 0.5), (30, 2000, 0.01)])
def test_the_reference_is_the_definition(k, n, p):
    """The 40-digit reference equals the binomial sum it stands for (mpmath, exact binomial coefficients)."""
    mp = _mp()
    p = mp.mpf(p)
    at_least = mp.fsum(mp.binomial(n, j) * p**j * (1 - p) ** (n - j) for j in range(k, n + 1))
    assert abs(mp_binomial_sf(k, n, p) - at_least) <= mp.mpf(10) ** -33 * at_least
    assert abs(mp_binomial_cdf(k, n, p) - (1 - at_least + mp.binomial(n, k) * p**k * (1 - p) ** (n - k))) <= 1e-33


@pytest.mark.smoke
def test_without_scipy_the_module_answers_as_in_the_full_install(core_binomial):
    """With SciPy not importable the module loads and answers exactly what it answers where SciPy is installed."""
    for s, n in [(0, 5), (1, 10**9), (3000, 10**4), (999_999, 10**6)]:
        for alpha in (1e-9, 0.05):
            assert core_binomial.rate_lower_bound(s, n, alpha) == binomial.rate_lower_bound(s, n, alpha)
            assert core_binomial.rate_upper_bound(s, n, alpha) == binomial.rate_upper_bound(s, n, alpha)
            assert core_binomial.binomial_sf(s, n, alpha) == binomial.binomial_sf(s, n, alpha)
    assert core_binomial.incomplete_beta(2.5, 3.5, 0.4) == binomial.pure_incomplete_beta(2.5, 3.5, 0.4)


@pytest.mark.smoke
def test_scipy_is_no_route_of_the_plugin():
    """One exact route: the module imports no SciPy and has no switch to it, and no extra installs SciPy."""
    tree = ast.parse(Path(binomial.__file__).read_text(encoding="utf-8"))
    imported = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    imported |= {n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    assert not {m for m in imported if m.split(".")[0] == "scipy"}, imported
    assert not hasattr(binomial, "USE_SCIPY")
    pyproject = Path(__file__).resolve().parent.parent / "pyproject.toml"
    extras = tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]["optional-dependencies"]
    assert not [e for e, needs in extras.items() if any(r.lower().startswith("scipy") for r in needs)], extras


def definition_sf(k, n, p):
    """P(X >= k) for X ~ Binomial(n, p) at 50 digits from the definition, 1 - sum of P(X = j) for j < k (terms by
    the ratio P(X = j + 1) / P(X = j) = (n - j) p / ((j + 1) (1 - p))): no incomplete beta, no continued fraction."""
    mp = _mp()
    with mp.workdps(50):
        p = mp.mpf(p)
        term, below = (1 - p) ** n, mp.mpf(0)
        for j in range(k):
            below += term
            term *= (n - j) * p / ((j + 1) * (1 - p))
        return 1 - below


@pytest.mark.smoke
def test_the_99_percent_lower_bound_of_1000_in_1e9_is_the_exact_root_and_below_the_observed_rate():
    """The issue's case (SciPy 1.17.1's betaincinv gives 1.903e-6, above the observed 1e-6): at the plugin's bound
    the chance of 1000 or more successes is alpha, by the binomial sum itself; the bound is below 1e-6."""
    successes, trials, alpha = 1000, 10**9, 0.01
    bound = binomial.rate_lower_bound(successes, trials, alpha)
    assert bound < successes / trials == 1e-6
    assert float(definition_sf(successes, trials, bound) / alpha - 1) == pytest.approx(0, abs=1e-9)
    # the root is where the tail crosses alpha: a hair below it the tail is smaller, a hair above larger
    assert (
        definition_sf(successes, trials, bound * (1 - 1e-6))
        < alpha
        < definition_sf(successes, trials, bound * (1 + 1e-6))
    )
    # a statement "rate >= 1.5e-6" cannot hold on these counts: the tail there is near 1, not alpha
    assert definition_sf(successes, trials, 1.5e-6) > 1 - 1e-9


@pytest.mark.smoke
@pytest.mark.parametrize("lower", [True, False], ids=["lower", "upper"])
def test_a_bound_on_the_wrong_side_of_the_observed_rate_is_refused(lower, monkeypatch):
    """The guard in rate_lower_bound / rate_upper_bound: an inverse that answers on the wrong side of s/n (here a
    planted one) raises, naming the count, instead of returning a bound a statement would decide by."""
    monkeypatch.setattr(binomial, "pure_incomplete_beta_inverse", lambda *a, **k: 0.5 if lower else 0.1)
    bound = binomial.rate_lower_bound if lower else binomial.rate_upper_bound
    side = "lower bound above" if lower else "upper bound below"
    with pytest.raises(AssertionError, match=f"{side} the observed rate: .* 3/10 = 0.3 at alpha 0.05"):
        bound(3, 10, 0.05)
    assert bound(3, 10, 0.9) == (0.5 if lower else 0.1)  # alpha > 1/2 asks for the other side: not checked


def _summed_cdf(k: int, n: int, p: float) -> float:
    """P(X <= k) summed term by term in log space: the implementation binomial.py replaced in decide.py."""
    if k < 0:
        return 0.0
    if k >= n or p <= 0.0:
        return 1.0
    if p >= 1.0:
        return 0.0
    lp, lq = math.log(p), math.log1p(-p)
    terms = [
        math.lgamma(n + 1) - math.lgamma(i + 1) - math.lgamma(n - i + 1) + i * lp + (n - i) * lq for i in range(k + 1)
    ]
    top = max(terms)
    return min(1.0, math.exp(top) * math.fsum(math.exp(t - top) for t in terms))


def _bisected(f) -> float:
    """The root of a function decreasing from >= 0 at 0 to <= 0 at 1, by 200 halvings (as decide.py did)."""
    lo, hi = 0.0, 1.0
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if mid in (lo, hi):
            break
        lo, hi = (mid, hi) if f(mid) > 0 else (lo, mid)
    return 0.5 * (lo + hi)


@pytest.mark.smoke
@pytest.mark.parametrize("n", [1, 2, 5, 10, 60])
def test_conventions_are_the_replaced_bisection_s(n, core_binomial):
    """Against the bisection and term-by-term sum decide.py used before this module (kept above as the
    oracle) wherever those are accurate (n <= 60, alpha >= 1e-5): the same bounds to the bisection's
    accuracy, the same tails, the same edge values (0 successes, n successes, k < 0, k >= n)."""
    for s in range(n + 1):
        for alpha in (1e-5, 0.01, 0.3):
            lower = 0.0 if s == 0 else _bisected(lambda p: alpha - (1.0 - _summed_cdf(s - 1, n, p)))
            upper = 1.0 if s == n else _bisected(lambda p: _summed_cdf(s, n, p) - alpha)
            assert core_binomial.rate_lower_bound(s, n, alpha) == pytest.approx(lower, rel=1e-9, abs=1e-300)
            assert core_binomial.rate_upper_bound(s, n, alpha) == pytest.approx(upper, rel=1e-9)
    for k in range(-1, n + 2):
        for p in (0.0, 1e-3, 0.5, 0.9, 1.0):
            assert core_binomial.binomial_cdf(k, n, p) == pytest.approx(_summed_cdf(k, n, p), rel=1e-12)
    assert core_binomial.rate_lower_bound(0, n, 0.05) == 0.0
    assert core_binomial.rate_upper_bound(n, n, 0.05) == 1.0


@pytest.mark.smoke
def test_edges_and_bad_input(route):
    """alpha at 0 or 1 gives the trivial bounds; the tails' edges; counts outside [0, n] are errors."""
    assert route.rate_lower_bound(3, 10, 0.0) == 0.0 and route.rate_upper_bound(3, 10, 0.0) == 1.0
    assert route.rate_lower_bound(3, 10, 1.0) == 1.0 and route.rate_upper_bound(3, 10, 1.0) == 0.0
    assert route.binomial_sf(0, 10, 0.3) == 1.0 and route.binomial_sf(11, 10, 0.3) == 0.0
    assert route.binomial_cdf(-1, 10, 0.3) == 0.0 and route.binomial_cdf(10, 10, 0.3) == 1.0
    assert route.binomial_sf(1, 10, 0.0) == 0.0 and route.binomial_sf(10, 10, 1.0) == 1.0
    assert route.binomial_cdf(0, 10, 0.0) == 1.0 and route.binomial_cdf(9, 10, 1.0) == 0.0
    for successes, trials in [(11, 10), (-1, 10), (1, 0)]:
        with pytest.raises(ValueError):
            route.rate_lower_bound(successes, trials, 0.05)
        with pytest.raises(ValueError):
            route.rate_upper_bound(successes, trials, 0.05)
    with pytest.raises(TypeError):
        route.rate_lower_bound(2.5, 10, 0.05)


@pytest.mark.smoke
@pytest.mark.parametrize("n", [1, 7, 100, 10**4, 10**6, 10**9])
def test_bounds_lie_in_their_intervals_and_are_monotone(n, route):
    """0 <= lower < s/n < upper <= 1 (equalities only at s = 0 or n); both bounds grow with s; the lower
    bound grows and the upper falls as alpha grows; a smaller alpha widens the interval."""
    counts = sorted(c for c in {0, 1, 2, n // 3, n // 2, n - 2, n - 1, n} if 0 <= c <= n)
    alphas = [1e-12, 1e-6, 1e-3, 0.05, 0.3, 0.5]
    previous_lower = previous_upper = -1.0
    for s in counts:
        lowers = [route.rate_lower_bound(s, n, alpha) for alpha in alphas]
        uppers = [route.rate_upper_bound(s, n, alpha) for alpha in alphas]
        for lower, upper in zip(lowers, uppers):
            assert 0.0 <= lower <= s / n <= upper <= 1.0
            assert (lower < s / n or s == 0) and (s / n < upper or s == n)
        # strictly, but for bounds within an ulp of 1 (1 - 1e-18 is 1.0 in doubles)
        assert all(a < b for a, b in zip(lowers, lowers[1:])) or s == 0
        assert all(a > b or a >= 1 - 2.3e-16 for a, b in zip(uppers, uppers[1:])) or s == n
        assert lowers[0] > previous_lower or s == 0
        assert uppers[0] > previous_upper or previous_upper >= 1 - 2.3e-16
        previous_lower, previous_upper = lowers[0], uppers[0]


@pytest.mark.smoke
@pytest.mark.parametrize("a, b", [(0.5, 0.5), (0.3, 40.0), (2.5, 3.5), (17.25, 900.5), (1200.5, 800.25)])
def test_incomplete_beta_at_non_integer_parameters(a, b, route):
    """I_x(a, b) and its complement against mpmath's betainc, and the pure inverse back to x, to 1e-12."""
    mp = _mp()
    mean = a / (a + b)
    for x in (mean * 1e-3, mean * 0.5, mean, min(0.999, mean * 1.1), 1 - (1 - mean) * 1e-3):
        # each side as a lower integral (mpmath's series there; its upper integrals cancel), 1 - x exact
        exact = mp.betainc(a, b, 0, x, regularized=True)
        exact_complement = mp.betainc(b, a, 0, 1 - mp.mpf(x), regularized=True)
        found, complement = route.incomplete_beta(a, b, x)
        for mine, value in ((found, exact), (complement, exact_complement)):
            if value < 1e-300:  # below the normal doubles
                assert abs(mine - float(value)) <= 1e-310
            else:
                assert relative_error(mine, value) <= RELATIVE, (x, mine, float(value))
        if 1e-300 < found <= 0.5:
            back = binomial.pure_incomplete_beta_inverse(a, b, lower=found)
            assert float(mp.betainc(a, b, 0, back, regularized=True) / exact - 1) == pytest.approx(0, abs=RELATIVE)
