"""Fixed-sample bounds for a bounded mean and a relative standard error (pytest_claims.statements.means_fixed): the
capital's monotonicity that the bisection relies on, the NumPy run of the same code against the pure-Python one,
coverage simulations under skewed, heavy-tailed-within-bounds and discrete nulls at the boundary (and mutants they
catch), the decisions' ends and their refusals.

Each coverage check fails only when the exact Clopper-Pearson lower bound, at level CHECK_LEVEL = 1e-6, of the
simulated miss rate exceeds the nominal alpha: a valid bound fails one check with probability at most 1e-6, and
this file's 56 checks together with at most 5.6e-5 (the union bound). A mutant is caught when that same lower bound
exceeds alpha: the checks can fail."""

from __future__ import annotations

import math
from statistics import NormalDist
from types import SimpleNamespace

import numpy as np
import pytest
from chains import INI, toy_registry
from pytest_claims.statements import means_fixed as mf
from pytest_claims.stats.binomial import rate_lower_bound
from pytest_claims.statements.means_fixed import (
    decide_mean_fixed,
    decide_relative_error,
    mean_bounds,
    relative_error_bounds,
)
from pytest_claims.outcomes import HELD, ClaimRefuted, StatementInconclusive

NUMPY_OPS = SimpleNamespace(minimum=np.minimum, sqrt=np.sqrt, log1p=np.log1p, where=np.where)
ALPHA = 0.1  # the nominal level of the simulations (a large one: misses are common enough to count)
CHECK_LEVEL = 1e-6  # each simulation check's own false-alarm probability
_PHI = NormalDist().cdf


def _clipped_lognormal(s: float, c: float) -> tuple[float, float]:
    """(E[Y], E[Y^2]) of Y = min(exp(N(0, s^2)), c) / c."""
    tail = 1.0 - _PHI(math.log(c) / s)
    m1 = math.exp(s * s / 2) * _PHI((math.log(c) - s * s) / s) + c * tail
    m2 = math.exp(2 * s * s) * _PHI((math.log(c) - 2 * s * s) / s) + c * c * tail
    return m1 / c, m2 / c**2


def _clipped_pareto(a: float, c: float) -> tuple[float, float]:
    """(E[Y], E[Y^2]) of Y = min(X, c) / c, X Pareto with index a and minimum 1 (infinite variance unclipped)."""
    return (1 + (c ** (1 - a) - 1) / (1 - a)) / c, (1 + 2 * (c ** (2 - a) - 1) / (2 - a)) / c**2


_E10 = math.exp(-10)
# Laws on [0, 1] with their exact first two moments: the nulls sit at the boundary (threshold = the true mean).
NULLS = {
    "exponential clipped at 10 (skewed)": (
        lambda rng, shape: np.minimum(rng.exponential(1.0, shape), 10.0) / 10.0,
        ((1 - _E10) / 10, 2 * (1 - 11 * _E10) / 100),
    ),
    "lognormal(0, 1.5) clipped at 20 (skewed)": (
        lambda rng, shape: np.minimum(rng.lognormal(0.0, 1.5, shape), 20.0) / 20.0,
        _clipped_lognormal(1.5, 20.0),
    ),
    "Pareto 1.1 clipped at 100 (heavy tail in bounds)": (
        lambda rng, shape: np.minimum(rng.pareto(1.1, shape) + 1.0, 100.0) / 100.0,
        _clipped_pareto(1.1, 100.0),
    ),
    "Bernoulli(0.05) (discrete, skewed)": (lambda rng, shape: (rng.random(shape) < 0.05) * 1.0, (0.05, 0.05)),
    "Bernoulli(0.5) (discrete)": (lambda rng, shape: (rng.random(shape) < 0.5) * 1.0, (0.5, 0.5)),
    "3-point {0, 0.1, 1} (discrete)": (
        lambda rng, shape: rng.choice([0.0, 0.1, 1.0], size=shape, p=[0.5, 0.45, 0.05]),
        (0.095, 0.45 * 0.01 + 0.05),
    ),
    "uniform (nice)": (lambda rng, shape: rng.random(shape), (0.5, 1 / 3)),
}


def _caught(misses: int, trials: int) -> bool:
    """The simulated miss rate is significantly above ALPHA: its Clopper-Pearson lower bound at CHECK_LEVEL."""
    return rate_lower_bound(int(misses), trials, CHECK_LEVEL) > ALPHA


def _sample(name: str, n: int, trials: int, seed: int) -> tuple[np.ndarray, float, float]:
    draw, (m1, m2) = NULLS[name]
    rng = np.random.default_rng([seed, n, sorted(NULLS).index(name)])
    return draw(rng, (trials, n)), m1, m2


# ------------------------------------------------------------------------------------------------
# Oracles


@pytest.mark.parametrize("name", ["Bernoulli(0.05) (discrete, skewed)", "lognormal(0, 1.5) clipped at 20 (skewed)"])
def test_the_capital_falls_as_the_candidate_mean_rises_so_bisection_finds_the_bound(name):
    """The bound's proof needs K_n(m) nonincreasing in m (each factor is): checked on a grid of 400 candidates."""
    x, _, _ = _sample(name, 60, 200, seed=1)
    grid = np.linspace(0.0025, 1.0, 400)
    caps = np.array([mf.log_capital(list(x.T), m, 0.05, NUMPY_OPS) for m in grid])
    assert np.all(np.diff(caps, axis=0) <= 1e-12)


def test_the_numpy_run_is_the_pure_python_bound_and_a_bound_above_the_mean_means_its_capital_crossed():
    """The simulations run log_capital and scaled_bounds on arrays; here on 15 samples per law they equal the
    pure-Python bounds of mean_bounds and relative_error_bounds, and lower > mean happens only where K_n(mean) >=
    1/alpha (the event the simulations count)."""
    for name in NULLS:
        x, m1, _ = _sample(name, 30, 15, seed=2)
        low, high = mf.scaled_bounds(list(x.T), 0.05, 0.02, NUMPY_OPS)
        r_low, r_high = mf.scaled_rse_bounds(list(x.T), 30, 0.0, 1.0, 0.05, 0.02, NUMPY_OPS)
        crossed = mf.log_capital(list(x.T), m1, 0.05, NUMPY_OPS) >= math.log(1 / 0.05)
        for i, row in enumerate(x):
            b = mean_bounds(row.tolist(), bounds=(0, 1), alpha_lower=0.05, alpha_upper=0.02)
            assert (b.lower, b.upper) == pytest.approx((low[i], high[i]), abs=1e-12), name
            assert relative_error_bounds(row.tolist(), bounds=(0, 1), alpha_lower=0.05, alpha_upper=0.02) == (
                pytest.approx((r_low[i], r_high[i]), rel=1e-9)
            )
            assert not b.lower > m1 or crossed[i], name


def test_bounds_on_another_scale_are_the_unit_bounds_moved_there():
    rng = np.random.default_rng(4)
    y = rng.random(50)
    unit = mean_bounds(y.tolist(), bounds=(0, 1), alpha_lower=0.01)
    moved = mean_bounds((3 + 4 * y).tolist(), bounds=(3, 7), alpha_lower=0.01)
    assert (moved.lower, moved.upper) == pytest.approx((3 + 4 * unit.lower, 3 + 4 * unit.upper), abs=1e-9)
    assert unit.lower < y.mean() < unit.upper


# ------------------------------------------------------------------------------------------------
# Coverage simulations: nominal ALPHA against the measured miss rate, at the boundary

MEAN_TRIALS = 20_000


@pytest.mark.parametrize("n", [20, 200])
@pytest.mark.parametrize("name", NULLS)
def test_the_mean_bound_misses_the_true_mean_at_most_alpha_of_the_time(name, n):
    """P(lower > mean) and P(upper < mean) at ALPHA each, over MEAN_TRIALS samples: counted as K_n(mean) >= 1/alpha
    on each side (lower > mean implies it, by the monotonicity above), so the measured rate bounds the bound's."""
    x, m1, _ = _sample(name, n, MEAN_TRIALS, seed=3)
    level = math.log(1 / ALPHA)
    below = int(np.sum(mf.log_capital(list(x.T), m1, ALPHA, NUMPY_OPS) >= level))  # lower bound above the mean
    above = int(np.sum(mf.log_capital(list((1.0 - x).T), 1.0 - m1, ALPHA, NUMPY_OPS) >= level))
    assert not _caught(below, MEAN_TRIALS), (name, n, below / MEAN_TRIALS)
    assert not _caught(above, MEAN_TRIALS), (name, n, above / MEAN_TRIALS)


MUTANT_TRIALS = 40_000


def test_the_simulation_catches_a_bound_computed_with_the_wrong_n():
    """A mutant that counts each observation four times (n taken as 4n) misses the mean more than alpha: caught."""
    x, m1, _ = _sample("Bernoulli(0.5) (discrete)", 200, MUTANT_TRIALS, seed=5)
    columns = list(x.T)
    crossed = int(np.sum(mf.log_capital(columns * 4, m1, ALPHA, NUMPY_OPS) >= math.log(1 / ALPHA)))
    assert _caught(crossed, MUTANT_TRIALS), crossed / MUTANT_TRIALS


def test_the_simulation_catches_the_normal_approximation_on_a_small_sample():
    """The normal approximation's lower bound, mean - z sd / sqrt(n), at n = 20 of a two-point law: caught."""
    x, m1, _ = _sample("Bernoulli(0.5) (discrete)", 20, MUTANT_TRIALS, seed=6)
    lower = x.mean(axis=1) - NormalDist().inv_cdf(1 - ALPHA) * x.std(axis=1, ddof=1) / math.sqrt(20)
    assert _caught(int(np.sum(lower > m1)), MUTANT_TRIALS)


RSE_TRIALS = 4_000


def _rse_sample(name: str, n: int, seed: int):
    x, m1, m2 = _sample(name, n, RSE_TRIALS, seed=seed)
    return x, math.sqrt(m2 - m1 * m1) / (math.sqrt(n) * m1)


@pytest.mark.parametrize("n", [20, 100])
@pytest.mark.parametrize("name", NULLS)
def test_the_relative_error_bounds_miss_the_true_one_at_most_alpha_of_the_time(name, n):
    """P(upper < RSE) (a false hold of 'RSE <= r' at r = RSE) and P(lower > RSE) (a false refutation), each at
    ALPHA, over RSE_TRIALS samples, by the plugin's own bounds run on arrays."""
    x, rse = _rse_sample(name, n, seed=7)
    lower, upper = mf.scaled_rse_bounds(list(x.T), n, 0.0, 1.0, ALPHA, ALPHA, NUMPY_OPS)
    assert not _caught(int(np.sum(upper < rse)), RSE_TRIALS), (name, n)
    assert not _caught(int(np.sum(lower > rse)), RSE_TRIALS), (name, n)


def test_the_simulation_catches_a_relative_error_with_the_wrong_n_and_a_plug_in_estimate():
    """Two mutants of the RSE's upper bound are caught: one computed with 2n in place of n, and the plug-in
    estimate sd / (sqrt(n) mean) taken as the bound."""
    x, rse = _rse_sample("Bernoulli(0.5) (discrete)", 100, seed=8)
    _, upper_wrong_n = mf.scaled_rse_bounds(list(x.T), 200, 0.0, 1.0, ALPHA, ALPHA, NUMPY_OPS)
    plug_in = x.std(axis=1, ddof=1) / (math.sqrt(100) * x.mean(axis=1))
    assert _caught(int(np.sum(upper_wrong_n < rse)), RSE_TRIALS)
    assert _caught(int(np.sum(plug_in < rse)), RSE_TRIALS)


# ------------------------------------------------------------------------------------------------
# Decisions


def test_a_mean_is_held_refuted_or_inconclusive_by_its_bounds():
    rng = np.random.default_rng(9)
    scores = rng.beta(0.3, 0.2, 400).tolist()  # mean 0.6, U-shaped
    found = decide_mean_fixed(scores, 0.5, bounds=(0, 1), alpha=1e-3, what="score")
    assert found.decision == HELD and found.lower >= 0.5 and found.n == 400
    with pytest.raises(ClaimRefuted, match="lies wholly below 0.7"):
        decide_mean_fixed(scores, 0.7, bounds=(0, 1), alpha=1e-3, what="score")
    with pytest.raises(StatementInconclusive, match="straddles 0.6"):
        decide_mean_fixed(scores, 0.6, bounds=(0, 1), alpha=1e-3, what="score")
    below = decide_mean_fixed(scores, 0.7, bounds=(0, 1), alpha=1e-3, what="score", at_least=False)
    assert below.upper <= 0.7 and below.statement == "mean <= 0.7"


def test_a_relative_error_is_held_or_refuted_by_its_bounds():
    rng = np.random.default_rng(10)
    values = (0.5 + 0.5 * rng.random(2000)).tolist()  # sd 0.144, mean 0.75: RSE of 2000 draws 0.0043
    held = decide_relative_error(values, 0.01, bounds=(0, 1), alpha=1e-3, what="rse")
    assert held.decision == HELD and held.upper <= 0.01 and held.lower <= held.estimate <= held.upper
    with pytest.raises(ClaimRefuted, match="lies wholly above 0.002"):
        decide_relative_error(values, 0.002, bounds=(0, 1), alpha=1e-3, what="rse")
    with pytest.raises(StatementInconclusive, match="straddles") as ended:
        decide_relative_error(values[:20], 0.05, bounds=(0, 1), alpha=1e-3, what="rse")
    # The RSE has no anytime route (registering it anytime is refused): its advice is a fresh run only.
    assert "--claims-continue" not in str(ended.value) and "no anytime route" in str(ended.value)
    with pytest.raises(StatementInconclusive) as mean_ended:
        decide_mean_fixed(values[:20], 0.75, bounds=(0, 1), alpha=1e-3, what="m")
    assert "--claims-continue" in str(mean_ended.value)  # a mean has one (decide_mean): the advice names it


@pytest.mark.parametrize(
    "call, problem",
    [
        (lambda: decide_mean_fixed([0.5, 1.2], 0.5, bounds=(0, 1), alpha=1e-3, what="m"), "1.2 lies outside"),
        (lambda: decide_mean_fixed([0.5], 0.5, bounds=None, alpha=1e-3, what="m"), "unbounded data have no"),
        (lambda: decide_mean_fixed([], 0.5, bounds=(0, 1), alpha=1e-3, what="m"), "needs 1 to"),
        (lambda: decide_mean_fixed([0.5], math.nan, bounds=(0, 1), alpha=1e-3, what="m"), "threshold must be"),
        (lambda: decide_mean_fixed([0.5], 0.5, bounds=(0, 1), alpha=0.99, what="m"), "alpha"),
        (lambda: decide_relative_error([0.5], 0.1, bounds=(0, 1), alpha=1e-3, what="r"), "needs 2 to"),
        (lambda: decide_relative_error([0.5, 0.6], 0, bounds=(0, 1), alpha=1e-3, what="r"), "r must be"),
        (lambda: decide_relative_error([0.5, math.inf], 0.1, bounds=(0, 1), alpha=1e-3, what="r"), "not a finite"),
    ],
)
def test_bad_input_gets_one_line_naming_it(call, problem):
    with pytest.raises((TypeError, ValueError), match=problem) as caught:
        call()
    assert "\n" not in str(caught.value)


TEST = """
import pytest
from pytest_claims import registered_false_alarm
from pytest_claims.statements.means_fixed import decide_mean_fixed


@pytest.mark.smoke
@pytest.mark.claim("score/high", statement="above")
def test_above():
    decide_mean_fixed([0.9] * 50, 0.4, bounds=(0, 1), alpha=registered_false_alarm(), what="above")
"""


@pytest.mark.parametrize("decision, outcome", [('decision = "fixed"', "held"), ('decision = "anytime"', "broken")])
def test_the_registered_method_is_checked(pytester, decision, outcome):
    """Registered fixed (or not said): decided by the bound, its evidence recorded; registered anytime: refused in
    one line naming decide_mean, the anytime route."""
    import json

    pytester.makefile(".ini", pytest=INI)
    pytester.makefile(".toml", registry=toy_registry("score/high", "above", "test_score.py", decision))
    pytester.makepyfile(test_score=TEST)
    result = pytester.runpytest_inprocess("-m", "smoke", "-p", "no:randomly", "-p", "no:cacheprovider")
    record = json.loads((pytester.path / "out" / "verdicts.json").read_text())["claims"][0]["statements"][0]
    if outcome == "held":
        assert record["outcome"] == "held" and record["evidence"]["above"]["lower"] >= 0.4
        assert record["evidence"]["above sample"]["n"] == 50
    else:
        assert record["outcome"] != "held"
        result.stdout.fnmatch_lines(["*registered decision is 'anytime'*decide it with decide_mean*"])


def test_the_e_values_for_a_family_are_the_bounds_capitals():
    """mean_log_evalues reaches ln(1/alpha) exactly where the lower bound at alpha clears the threshold (to the
    bisection's 2^-50), and its against side where the upper bound lies below it."""
    rng = np.random.default_rng(11)
    for _ in range(30):
        scores = rng.beta(0.5, 0.5, 60).tolist()
        threshold = float(rng.uniform(0.3, 0.7))
        log_for, log_against = mf.mean_log_evalues(scores, threshold, bounds=(0, 1), alpha=0.05)
        b = mean_bounds(scores, bounds=(0, 1), alpha_lower=0.05)
        assert (log_for >= math.log(20)) == (b.lower >= threshold - 2.0**-50)
        assert (log_against >= math.log(20)) == (b.upper <= threshold + 2.0**-50)
