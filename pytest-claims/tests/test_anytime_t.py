"""The safe t-test's e-value (pytest_claims.anytime.safe_t) against the noncentral t density's closed form in mpmath
(Kummer's function, at the precision its cancellation needs), its mean under the null, and its input checks."""

from __future__ import annotations

import math

import pytest

from pytest_claims.anytime.evalues import decide_log_evalues
from pytest_claims.anytime.safe_t import safe_t_log_evalue

mp = pytest.importorskip("mpmath")
stats = pytest.importorskip("scipy.stats")
integrate = pytest.importorskip("scipy.integrate")

# SciPy's nct overflows from n = 5000 on (boost's tgamma); the closed form does not. mu^2 = n delta^2 <= 800 keeps
# the precision the cancellation needs (about mu^2 / 2 nats) to a few hundred digits, milliseconds a point.
GRID = [
    (t, n, delta)
    for t in (-30.0, -4.0, -1.0, 0.0, 0.5, 2.5, 8.0, 40.0)
    for n, delta in [(n, d) for n in (2, 3, 10, 200) for d in (0.1, 0.5, 2.0)] + [(5000, 0.1), (5000, 0.3)]
]


def _log_ratio(x, nu, mu):
    """ln f_nct(x; nu, mu) - ln f_t(x; nu) by the density's closed form in 1F1 (Johnson, Kotz & Balakrishnan), or
    None where the precision was too low to see the sign of the sum."""
    z = mu**2 * x**2 / (2 * (nu + x**2))
    first = mp.sqrt(2) * mu * x * mp.hyp1f1(nu / 2 + 1, mp.mpf(3) / 2, z) / ((nu + x**2) * mp.gamma((nu + 1) / 2))
    second = mp.hyp1f1((nu + 1) / 2, mp.mpf(1) / 2, z) / (mp.sqrt(nu + x**2) * mp.gamma(nu / 2 + 1))
    if first + second <= 0:
        return None
    lead = (nu / 2) * mp.log(nu) + mp.loggamma(nu + 1) - mu**2 / 2 - nu * mp.log(2) - (nu / 2) * mp.log(nu + x**2)
    central = mp.loggamma((nu + 1) / 2) - mp.log(mp.sqrt(nu * mp.pi)) - (nu + 1) / 2 * mp.log(1 + x**2 / nu)
    return lead + mp.log(first + second) - central  # both densities' 1 / Gamma(nu / 2) cancel


def reference(t: float, nu: int, mu: float) -> float:
    """The closed form at doubling precision until two precisions agree to 1e-14."""
    digits, previous = 40 + int((mu * mu / 2 + mu * mu * t * t / (2 * (nu + t * t))) / 2), None
    while True:
        with mp.workdps(digits):
            value = _log_ratio(mp.mpf(t), mp.mpf(nu), mp.mpf(mu))
        if value is not None and previous is not None and abs(value - previous) <= 1e-14 * max(1, abs(previous)):
            return float(value)
        previous, digits = value, 2 * digits


@pytest.mark.parametrize(("t", "n", "delta"), GRID)
def test_one_sample_is_the_noncentral_over_the_central_t_density(t, n, delta):
    expected = reference(t, n - 1, math.sqrt(n) * delta)
    assert safe_t_log_evalue(t, n, delta) == pytest.approx(expected, rel=1e-11, abs=1e-11)


@pytest.mark.parametrize(("t", "n", "n2", "delta"), [(2.0, 10, 12, 0.5), (-1.0, 3, 1, 1.0), (6.0, 100, 40, 0.3)])
def test_two_samples_use_the_pooled_degrees_and_effective_size(t, n, n2, delta):
    expected = reference(t, n + n2 - 2, math.sqrt(1 / (1 / n + 1 / n2)) * delta)
    assert safe_t_log_evalue(t, n, delta, n2=n2) == pytest.approx(expected, rel=1e-11, abs=1e-11)


@pytest.mark.parametrize("t", [-3.0, 0.0, 1.7, 5.0])
def test_two_sided_is_the_average_of_both_effects(t):
    n, delta = 20, 0.4
    mu = math.sqrt(n) * delta
    expected = math.log((math.exp(reference(t, n - 1, mu)) + math.exp(reference(t, n - 1, -mu))) / 2)
    assert safe_t_log_evalue(t, n, delta, two_sided=True) == pytest.approx(expected, rel=1e-11, abs=1e-11)
    assert safe_t_log_evalue(t, n, delta, two_sided=True) == pytest.approx(
        safe_t_log_evalue(-t, n, delta, two_sided=True), abs=1e-12
    )


@pytest.mark.parametrize(("n", "delta"), [(2, 0.3), (5, 1.0), (30, 0.5)])
def test_its_mean_under_the_null_is_one(n, delta):
    """E is an e-value at every n: its mean over the central t law is 1 (the noncentral density integrates to 1)."""

    def integrand(t: float) -> float:
        return math.exp(stats.t.logpdf(t, n - 1) + safe_t_log_evalue(t, n, delta))

    mean, error = integrate.quad(integrand, -math.inf, math.inf, epsabs=1e-12, epsrel=1e-10, limit=200)
    assert error < 1e-8 and mean == pytest.approx(1.0, abs=1e-8)


def test_it_grows_with_t_so_a_mean_below_zero_gives_less():
    values = [safe_t_log_evalue(t / 4, 12, 0.5) for t in range(-40, 41)]
    assert all(a < b for a, b in zip(values, values[1:]))


def test_a_chain_of_looks_decides_at_its_first_crossing():
    looks = [(0.5, 5), (2.0, 10), (4.5, 20), (1.0, 40)]  # (t on all data so far, n)
    decision = decide_log_evalues(
        [safe_t_log_evalue(t, n, 0.5) for t, n in looks], [safe_t_log_evalue(-t, n, 0.5) for t, n in looks], alpha=0.01
    )
    assert (decision.decision, decision.decided_at_look) == ("held", 3)


def test_extreme_statistics_stay_finite():
    assert 0 < safe_t_log_evalue(1e6, 3, 1.0) < math.inf
    assert -math.inf < safe_t_log_evalue(-1e6, 3, 1.0) < 0
    assert math.isfinite(safe_t_log_evalue(3.0, 10**7, 0.01))


@pytest.mark.parametrize(
    ("args", "kwargs", "message"),
    [
        ((math.nan, 10, 0.5), {}, "t must be a finite number"),
        ((True, 10, 0.5), {}, "t must be a finite number"),
        ((1.0, 1, 0.5), {}, "n must be an integer >= 2"),
        ((1.0, 10.0, 0.5), {}, "n must be an integer >= 2"),
        ((1.0, 10, 0.0), {}, "delta must be a positive finite number"),
        ((1.0, 10, math.inf), {}, "delta must be a positive finite number"),
        ((1.0, 10, 0.5), {"n2": 0}, "n2 must be an integer >= 1"),
        ((1.0, 1, 0.5), {"n2": 1}, "needs n \\+ n2 >= 3"),
    ],
)
def test_bad_arguments_are_one_clear_error(args, kwargs, message):
    with pytest.raises(ValueError, match=message):
        safe_t_log_evalue(*args, **kwargs)
