"""The safe t-test: an anytime-valid e-value for a t-test's statistic (pure-Python math, natural logs).

For a one-sample t statistic of n observations (nu = n - 1, n_eff = n), or a pooled two-sample one of n and n2
(nu = n + n2 - 2, n_eff = 1 / (1/n + 1/n2)), and a standardised effect delta > 0 fixed before the data,

    E = f_nct(t; nu, mu) / f_t(t; nu),        mu = sqrt(n_eff) delta,

the noncentral t density over the central one (Grunwald, de Heide & Koolen, "Safe testing", JRSSB 2024; the
"tDensity" form of the R package safestats). It is the Bayes factor of the scale-invariant statistic, the one the
right Haar prior on sigma gives, so it is an e-process in n for the null mean 0 whatever sigma is:
P(sup_n E_n >= 1 / alpha) <= alpha with the t statistic recomputed on all the data at every look
(docs/explanation/anytime-design.md 4.6 measured 0.0088 at alpha 0.01 with a look after every observation). E grows
with t (see below),
and moving every observation down lowers every t_n together, so the same bound holds for the one-sided null
mean <= 0. The two-sided form averages +delta and -delta (an average of e-values is one).

Computed without SciPy: with U ~ Gamma((nu + 1) / 2, 1) (the chi-square given t, rescaled),

    E = exp(-mu^2 / 2) E[exp(b sqrt(U))],     b = mu t sqrt(2 / (nu + t^2)),

which grows with b and so with t, and E[exp(b sqrt(U))] = 2 / Gamma((nu + 1) / 2) times the integral over s > 0 of
s^nu exp(-s^2 + b s). With s = e^y the integrand is smooth and log-concave on the whole line, where the trapezoid
rule converges faster than any power of its step: summed in logs around the mode until the terms fall 60 nats.
"""

from __future__ import annotations

import math

from pytest_claims.anytime.evalues import average_log_evalue

_STEPS_PER_WIDTH = 4  # trapezoid steps per standard width of the log-integrand at its mode
_TAIL_NATS = 60.0  # the sum stops where a term is this far below the mode's (e^-60: beyond double precision)


# The largest effect (in standard deviations) the e-value takes: its integrals overflow a double from about 1e10, and
# an effect of a thousand standard deviations is already no question for a t-test.
MAX_DELTA = 1000.0
# The most observations a sample may have: the integral's step is about 1 / sqrt(n) wide around ln sqrt(n / 2), and
# from about 1e18 observations it overflows a double (measured at 1e18 and 1e22), or falls below the spacing of doubles
# there and never ends (1e40). No t-test has a thousand million million observations.
MAX_SIZE = 10**15


def _check_statistic(t: float) -> float:
    if isinstance(t, bool) or not isinstance(t, (int, float)) or not math.isfinite(t):
        raise ValueError(f"t must be a finite number, got {t!r}")
    return float(t)


def _check_whole(name: str, value: int, least: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < least:
        raise ValueError(f"{name} must be an integer >= {least}, got {value!r}")
    if value > MAX_SIZE:
        raise ValueError(f"{name} must be at most {MAX_SIZE:.0e} observations, got {value!r}")
    return value


def _check_sizes(n: int, n2: int | None) -> tuple[int, float]:
    """(nu, n_eff) of a one-sample (n2 None) or pooled two-sample t statistic."""
    if n2 is None:
        return _check_whole("n", n, 2) - 1, float(n)
    n, n2 = _check_whole("n", n, 1), _check_whole("n2", n2, 1)
    if n + n2 < 3:
        raise ValueError(f"a two-sample t statistic needs n + n2 >= 3, got {n} + {n2}")
    return n + n2 - 2, 1.0 / (1.0 / n + 1.0 / n2)


def _log_mean_exp_b_sqrt_gamma(b: float, nu: int) -> float:
    """ln E[exp(b sqrt(U))] for U ~ Gamma((nu + 1) / 2, 1), by the trapezoid rule in y = ln s."""
    power = nu + 1.0

    def log_term(y: float) -> float:
        s = math.exp(y)
        return power * y - s * s + b * s

    mode_s = (b + math.sqrt(b * b + 8.0 * power)) / 4.0  # where (nu + 1) + b s - 2 s^2 = 0
    mode = math.log(mode_s)
    step = 1.0 / (_STEPS_PER_WIDTH * math.sqrt(2.0 * mode_s * mode_s + power))  # curvature there: 2 s^2 + nu + 1
    peak = log_term(mode)
    terms = [peak]
    for direction in (-1.0, 1.0):  # each side ends: the log-integrand falls to -inf both ways (log-concave)
        k = 1
        while (value := log_term(mode + direction * k * step)) >= peak - _TAIL_NATS:
            terms.append(value)
            k += 1
        terms.append(value)
    log_integral = peak + math.log(math.fsum(math.exp(v - peak) for v in terms)) + math.log(step)
    return math.log(2.0) - math.lgamma(power / 2.0) + log_integral


def safe_t_log_evalue(t: float, n: int, delta: float, *, n2: int | None = None, two_sided: bool = False) -> float:
    """ln E of the safe t-test at the statistic t of n observations (and n2 of a second sample, pooled variance; each
    at most MAX_SIZE), for the effect delta > 0 in standard deviations, fixed before the data: evidence for mean > 0
    (or a first sample's mean above the second's), or for mean != 0 with `two_sided`; for 'mean < 0' pass -t. A
    chain of looks (each on all the data so far) is decided by `anytime.decide_log_evalues`, the e-values at t for
    the statement and at -t against it: the first crossing of 1 / alpha is final."""
    t = _check_statistic(t)
    nu, n_eff = _check_sizes(n, n2)
    if isinstance(delta, bool) or not isinstance(delta, (int, float)) or not (0.0 < delta <= MAX_DELTA):
        raise ValueError(
            f"delta must be a positive finite number (the effect in standard deviations) of at most {MAX_DELTA:g}, "
            f"got {delta!r}"
        )
    mu = math.sqrt(n_eff) * delta
    scale = mu * math.sqrt(2.0 / (nu + t * t))
    sides = (t, -t) if two_sided else (t,)
    return average_log_evalue([-0.5 * mu * mu + _log_mean_exp_b_sqrt_gamma(scale * side, nu) for side in sides])
