"""Fixed-sample decisions about a bounded mean and a relative standard error, by betting confidence bounds.

Pure Python (math only; the arithmetic is written once over an `ops` namespace, so the tests run the very same code
on NumPy arrays for their coverage simulations). Explained in docs/explanation/means-and-families.md.

**The bound.** Observations x_1..x_n known to lie in [lo, hi] are rescaled to y_i in [0, 1]. For a candidate mean m
the capital of betting against 'mean <= m' is K_n(m) = prod_i (1 + lambda_i (y_i - m)), with the predictable stake of
Waudby-Smith & Ramdas ("Estimating means of bounded random variables by betting", JRSS-B 2024, their fixed-n
plug-in): lambda_i = min(sqrt(2 ln(1/alpha) / (n s2_{i-1})), c / m), c = 1/2, s2 the running variance estimate of
pytest_claims.anytime.betting. If the y_i are independent with mean m (or each has conditional mean <= m), K_n(m)
has mean <= 1, so by Markov P(K_n(mu) >= 1/alpha) <= alpha at the true mean mu, whatever the law inside the bounds.
Each factor is nonincreasing in m (lambda_i's plug-in part does not depend on m; the truncated part gives the factor
1 - c + c y_i / m), so {m : K_n(m) >= 1/alpha} is an interval [0, L): the lower confidence bound is L, found by
bisection and reported from below (the last m still rejected), so P(L > mu) <= alpha. The upper bound is the lower
bound of 1 - y. The capital depends on the order of the observations: pass them in the order drawn, never sorted
or chosen after seeing them.

**The relative standard error** of a mean of n draws, RSE = sigma / (sqrt(n) |mu|), is bounded by bounding sigma^2
and |mu|: sigma^2 is the mean of z_j = (x_{2j-1} - x_{2j})^2 / 2 over disjoint pairs (each z_j in
[0, (hi - lo)^2 / 2], independent, with mean sigma^2 exactly), bounded by the same betting bound at alpha / 2; |mu|
by the mean's bound at the other alpha / 2 (split again in two when the bounds straddle 0, where its sign is not
known). By the union bound the RSE's one-sided bound fails with probability at most alpha. Unbounded data are refused:
no finite sample bounds a mean or a variance without an assumption on the law.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

from pytest_claims.anytime.betting import TRUNCATION, check_bounds, check_values
from pytest_claims.stats.binomial import check_level
from pytest_claims.statements.decide import interval_decision
from pytest_claims.statements.decision import check_registered, conclude, held_level
from pytest_claims.stats.shown_numbers import significant

#: The arithmetic on floats; the tests pass NumPy's (minimum, sqrt, log1p, where) to run the same code on arrays.
MATH_OPS = SimpleNamespace(
    minimum=min, sqrt=math.sqrt, log1p=math.log1p, where=lambda test, yes, no: yes if test else no
)
BISECTION_STEPS = 50  # halvings of [0, 1]: the bound to 2^-50 of (hi - lo), below rounding of most data
MAX_VALUES = 100_000  # a fixed-sample bound costs 2 x 50 passes over the values in pure Python (~2 s per 1e4)


def log_capital(columns: list[Any], m: Any, alpha: float, ops: Any = MATH_OPS) -> Any:
    """ln K_n(m): the log capital of betting against 'mean <= m' on the observations y_1..y_n in [0, 1] (`columns`,
    in the order drawn; each a float, or with NumPy's `ops` an array of independent trials), with the fixed-n plug-in
    stake tuned to `alpha` and truncated at 1/2 of the largest stake that keeps the capital positive. `m` in (0, 1]
    (a float or an array). Returns a float (or an array)."""
    n = len(columns)
    gain = 2.0 * math.log(1.0 / alpha) / n
    cap = TRUNCATION / m
    sum_y = sum_sq = log_k = 0.0
    for i, y in enumerate(columns):
        s2 = (0.25 + sum_sq) / (i + 1)  # s2_{i-1}: 1/4 before any data (anytime_betting's running estimate)
        stake = ops.minimum(ops.sqrt(gain / s2), cap)
        log_k = log_k + ops.log1p(stake * (y - m))
        mu = (0.5 + sum_y + y) / (i + 2)
        sum_y = sum_y + y
        sum_sq = sum_sq + (y - mu) ** 2
    return log_k


def scaled_lower_bound(columns: list[Any], alpha: float, ops: Any = MATH_OPS) -> Any:
    """The betting lower confidence bound, at level `alpha`, for the mean of y_1..y_n in [0, 1] (`columns` as
    log_capital takes them): the largest m found by bisection at which K_n(m) >= 1/alpha still holds (0 if none),
    so the bound lies below the confidence set's infimum. Returns a float (or an array)."""
    level = math.log(1.0 / alpha)
    low, high = 0.0 * columns[0], 1.0 + 0.0 * columns[0]  # K_n(1) <= 1 < 1/alpha: m = 1 is never rejected
    for _ in range(BISECTION_STEPS):
        middle = (low + high) / 2.0
        rejected = log_capital(columns, middle, alpha, ops) >= level
        low, high = ops.where(rejected, middle, low), ops.where(rejected, high, middle)
    return low


def scaled_bounds(columns: list[Any], alpha_lower: float, alpha_upper: float, ops: Any = MATH_OPS) -> tuple[Any, Any]:
    """(lower bound at alpha_lower, upper bound at alpha_upper) for the mean of y_1..y_n in [0, 1]; a level of 0
    gives the trivial bound (0, or 1). Returns floats (or arrays)."""
    lower = scaled_lower_bound(columns, alpha_lower, ops) if alpha_lower > 0 else 0.0 * columns[0]
    upper = 1.0 - scaled_lower_bound([1.0 - y for y in columns], alpha_upper, ops) if alpha_upper > 0 else 1.0
    return lower, upper + 0.0 * columns[0]


def _split_pairs(columns: list[Any]) -> list[Any]:
    """z_j = (y_{2j-1} - y_{2j})^2 in [0, 1], one per disjoint pair in order (an odd last value is left out): for
    independent draws of one law, E[z_j] = 2 sigma_y^2 exactly."""
    return [(columns[2 * j] - columns[2 * j + 1]) ** 2 for j in range(len(columns) // 2)]


def scaled_rse_bounds(
    columns: list[Any], n: int, lo: float, hi: float, alpha_lower: float, alpha_upper: float, ops: Any = MATH_OPS
) -> tuple[Any, Any]:
    """(lower bound at alpha_lower, upper bound at alpha_upper) for RSE = sigma / (sqrt(n) |mu|) of the values
    lo + (hi - lo) y (columns in [0, 1], at least 2): sigma^2 by the pairs' betting bound at half the level, |mu| by
    the mean's at the other half (split in two where lo < 0 < hi). An upper bound with |mu| possibly 0 is infinite.
    Returns floats (or arrays)."""
    width = hi - lo
    pairs = _split_pairs(columns)  # each in [0, 1]; its mean is 2 sigma_y^2
    v_low, v_high = scaled_bounds(pairs, alpha_lower / 2.0, alpha_upper / 2.0, ops)
    sd_low, sd_high = ops.sqrt(v_low / 2.0) * width, ops.sqrt(v_high / 2.0) * width

    def abs_mean(level: float) -> tuple[Any, Any]:
        """(the least |mu| and the largest |mu| consistent with the bounds, each at `level` in all)."""
        if lo >= 0 or hi <= 0:  # the sign is known: one side at the whole level for each end
            low, high = scaled_bounds(columns, level, level, ops)
        else:
            low, high = scaled_bounds(columns, level / 2.0, level / 2.0, ops)
        low, high = lo + width * low, lo + width * high
        least = ops.where(low > 0, low, ops.where(high < 0, -high, 0.0 * low))
        most = ops.where(-low > high, -low, high)
        return least, most

    root_n = math.sqrt(n)
    least_upper, _ = abs_mean(alpha_upper / 2.0) if alpha_upper > 0 else (0.0, 0.0)
    _, most_lower = abs_mean(alpha_lower / 2.0) if alpha_lower > 0 else (0.0, math.inf)
    upper = sd_high / (root_n * ops.where(least_upper > 0, least_upper, 0.0 * least_upper + 1e-300))
    upper = ops.where(least_upper > 0, upper, math.inf + 0.0 * upper)
    lower = sd_low / (root_n * most_lower)
    return lower, upper


# ------------------------------------------------------------------------------------------------
# Results


@dataclass(frozen=True)
class MeanBounds:
    """One-sided confidence bounds for the mean of `n` observations in [`lo`, `hi`]: P(`lower` > mean) <=
    `alpha_lower` and P(`upper` < mean) <= `alpha_upper`, for any law inside the bounds (independent observations,
    in the order drawn); `method` names the bound."""

    lower: float
    upper: float
    n: int
    lo: float
    hi: float
    alpha_lower: float
    alpha_upper: float
    method: str = "betting (Waudby-Smith & Ramdas), fixed n"


@dataclass(frozen=True)
class FixedMeanDecision:
    """A fixed-sample decision of `statement`, 'mean >= threshold' (or '<='): the `decision` word (outcomes.py), the
    `threshold`, the bounds `lower` and `upper` it was decided by (the statement's side at `held_alpha`, the other at
    `refute_alpha`), the sample size `n`, and the `assumption` its validity rests on."""

    decision: str
    statement: str
    threshold: float
    lower: float
    upper: float
    n: int
    held_alpha: float
    refute_alpha: float
    assumption: str


@dataclass(frozen=True)
class RelativeErrorDecision:
    """A fixed-sample decision of `statement`, 'RSE <= r', RSE = sigma / (sqrt(n) |mean|): the `decision` word, `r`,
    the RSE's bounds `lower` (at `refute_alpha`, which refutes) and `upper` (at `held_alpha`, which holds), the plug-in
    `estimate` sd / (sqrt(n) |mean|), `n`, the number of `observations` used, and the `assumption`."""

    decision: str
    statement: str
    r: float
    lower: float
    upper: float
    estimate: float
    n: int
    observations: int
    held_alpha: float
    refute_alpha: float
    assumption: str


# ------------------------------------------------------------------------------------------------
# Checks shared by the helpers


def _checked(what: str, values: Iterable[float], bounds: Any, least: int) -> tuple[list[float], float, float]:
    """The observations as floats in [lo, hi] and the bounds, or one ValueError naming `what`."""
    try:
        lo, hi = bounds
        lo, hi = check_bounds(lo, hi)
        found = check_values(
            [float(v) if hasattr(v, "__float__") and not isinstance(v, bool) else v for v in values], lo, hi
        )
    except (TypeError, ValueError) as error:
        raise ValueError(
            f"{what}: {error} (bounds=(lo, hi) are the values the data can take; unbounded data have no "
            "fixed-sample bound without an assumption on their law)"
        ) from None
    if not least <= len(found) <= MAX_VALUES:
        raise ValueError(f"{what}: needs {least} to {MAX_VALUES} observations, got {len(found)}")
    return found, lo, hi


def mean_bounds(
    values: Iterable[float], *, bounds: tuple[float, float], alpha_lower: float, alpha_upper: float | None = None
) -> MeanBounds:
    """One-sided confidence bounds for the mean of `values` (in the order drawn), each known to lie in `bounds` =
    (lo, hi): the lower bound at level `alpha_lower` (P(lower > mean) <= alpha_lower), the upper at `alpha_upper`
    (None: alpha_lower), by the fixed-n betting bound; valid for any law inside the bounds. A level of 0 gives the
    trivial bound (lo or hi). Returns a MeanBounds."""
    found, lo, hi = _checked("mean_bounds", values, bounds, 1)
    alpha_upper = alpha_lower if alpha_upper is None else alpha_upper
    check_level("alpha_lower", alpha_lower)
    check_level("alpha_upper", alpha_upper)
    columns = [(x - lo) / (hi - lo) for x in found]
    low, high = scaled_bounds(columns, alpha_lower, alpha_upper)
    lower, upper = max(lo, lo + (hi - lo) * low), min(hi, lo + (hi - lo) * high)
    return MeanBounds(lower, upper, len(found), lo, hi, float(alpha_lower), float(alpha_upper))


def mean_log_evalues(
    values: Iterable[float], threshold: float, *, bounds: tuple[float, float], alpha: float
) -> tuple[float, float]:
    """(ln E_for, ln E_against) of 'mean >= threshold' from one sample, `values` in the order drawn, each in `bounds`
    = (lo, hi), the threshold strictly inside: the fixed-n betting capitals against 'mean <= threshold' (E_for) and
    against 'mean >= threshold' (E_against), their stakes tuned to `alpha`. Each is an e-value under its null for any
    law inside the bounds (mean <= 1), so min(1, 1 / E) is a valid p-value: the statistics `decide_family` takes,
    as e-values ("e-merging") or as p-values ("holm"). Returns the pair of natural logs."""
    found, lo, hi = _checked("mean_log_evalues", values, bounds, 1)
    check_level("alpha", alpha)
    if alpha == 0:
        raise ValueError("mean_log_evalues: alpha must be > 0 (it sizes the stakes)")
    if isinstance(threshold, bool) or not isinstance(threshold, (int, float)) or not lo < threshold < hi:
        raise ValueError(
            f"mean_log_evalues: the threshold must lie strictly inside ({lo:g}, {hi:g}), got {threshold!r}"
        )
    columns = [(x - lo) / (hi - lo) for x in found]
    m = (threshold - lo) / (hi - lo)
    return log_capital(columns, m, alpha), log_capital([1.0 - y for y in columns], 1.0 - m, alpha)


def decide_mean_fixed(
    values: Iterable[float],
    threshold: float,
    *,
    bounds: tuple[float, float],
    alpha: float,
    what: str,
    at_least: bool = True,
    held_alpha: float | None = None,
) -> FixedMeanDecision:
    """Decide 'mean >= threshold' (at_least; else 'mean <= threshold') from one fixed sample, `values` in the order
    drawn, each known to lie in `bounds` = (lo, hi): held when the betting bound on the statement's side at
    `held_alpha` (None: alpha) clears the threshold, refuted when the other side's at `alpha` lies wholly beyond
    it, inconclusive otherwise (decide_interval ends the test). Valid for any law inside the bounds, with no
    normality assumption. For a statement registered `decision = "anytime"` use decide_mean (refused here); `what`
    names it in messages and keys its evidence. Returns a FixedMeanDecision when held; raises ClaimRefuted or
    StatementInconclusive otherwise."""
    __tracebackhide__ = True
    check_registered(what, "decide_mean_fixed", anytime=False, anytime_route="decide_mean")
    found, lo, hi = _checked(what, values, bounds, 1)
    held = held_level(alpha, held_alpha)
    if isinstance(threshold, bool) or not isinstance(threshold, (int, float)) or not math.isfinite(threshold):
        raise ValueError(f"{what}: threshold must be a finite number, got {threshold!r}")
    if not isinstance(at_least, bool):
        raise TypeError(f"{what}: at_least must be a boolean, got {at_least!r}")
    b = mean_bounds(
        found, bounds=(lo, hi), alpha_lower=held if at_least else alpha, alpha_upper=alpha if at_least else held
    )
    assumption = f"every observation lies in [{lo:g}, {hi:g}]; observations independent, in the order drawn (any law)"
    sample = {"n": b.n, "mean": math.fsum(found) / b.n, "method": b.method, "assumption": assumption}
    decided = interval_decision(
        b.lower,
        b.upper,
        threshold,
        at_least=at_least,
        alpha=alpha,
        what=what,
        held_confidence=1 - held,
        done=b.n,
        statement="mean",
        records=((what + " sample", sample),),
    )
    return FixedMeanDecision(
        conclude(decided).decision,
        f"mean {'>=' if at_least else '<='} {threshold:g}",
        float(threshold),
        b.lower,
        b.upper,
        b.n,
        held,
        alpha,
        assumption,
    )


def relative_error_bounds(
    values: Iterable[float],
    *,
    bounds: tuple[float, float],
    alpha_lower: float,
    alpha_upper: float | None = None,
    n: int | None = None,
) -> tuple[float, float]:
    """(lower at `alpha_lower`, upper at `alpha_upper`, None: alpha_lower) one-sided confidence bounds for the
    relative standard error sigma / (sqrt(n) |mean|) of the law of `values` (at least 2, in the order drawn, each in
    `bounds`); `n` the sample size whose mean's RSE is meant (None: len(values)). The upper bound is inf where the
    mean may be 0. Returns the pair of floats."""
    found, lo, hi = _checked("relative_error_bounds", values, bounds, 2)
    alpha_upper = alpha_lower if alpha_upper is None else alpha_upper
    check_level("alpha_lower", alpha_lower)
    check_level("alpha_upper", alpha_upper)
    size = len(found) if n is None else n
    if isinstance(size, bool) or not isinstance(size, int) or size < 1:
        raise ValueError(f"relative_error_bounds: n must be a whole number >= 1 (or None), got {n!r}")
    columns = [(x - lo) / (hi - lo) for x in found]
    lower, upper = scaled_rse_bounds(columns, size, lo, hi, alpha_lower, alpha_upper)
    return float(lower), float(upper)


def decide_relative_error(
    values: Iterable[float],
    r: float,
    *,
    bounds: tuple[float, float],
    alpha: float,
    what: str,
    n: int | None = None,
    held_alpha: float | None = None,
) -> RelativeErrorDecision:
    """Decide 'the relative standard error is at most r', RSE = sigma / (sqrt(n) |mean|) of the law of `values` (the
    mean of n draws; n None: len(values)), from one fixed sample (at least 2 values in the order drawn, each in
    `bounds` = (lo, hi); unbounded data are refused): held when the RSE's upper bound at `held_alpha` (None: alpha)
    is at most r, refuted when its lower bound at `alpha` exceeds r, inconclusive otherwise (decide_interval ends the
    test). `r` > 0. `what` names it in messages and keys its evidence. Returns a RelativeErrorDecision when held;
    raises ClaimRefuted or StatementInconclusive otherwise."""
    __tracebackhide__ = True
    check_registered(what, "decide_relative_error", anytime=False, anytime_route="no anytime route (register it fixed)")
    found, lo, hi = _checked(what, values, bounds, 2)
    held = held_level(alpha, held_alpha)
    if isinstance(r, bool) or not isinstance(r, (int, float)) or not 0 < r < math.inf:
        raise ValueError(f"{what}: r must be a positive finite number (the largest relative error), got {r!r}")
    size = len(found) if n is None else n
    lower, upper = relative_error_bounds(found, bounds=(lo, hi), alpha_lower=alpha, alpha_upper=held, n=size)
    mean = math.fsum(found) / len(found)
    sd = math.sqrt(math.fsum((x - mean) ** 2 for x in found) / (len(found) - 1))
    estimate = sd / (math.sqrt(size) * abs(mean)) if mean else math.inf
    assumption = (
        f"every observation lies in [{lo:g}, {hi:g}]; observations independent, in the order drawn (any law); "
        "sigma^2 from disjoint pairs, the mean's and the variance's bounds at half the level each"
    )
    sample = {"observations": len(found), "n": size, "estimate": estimate, "mean": mean, "sd": sd}
    decided = interval_decision(
        lower,
        upper,
        r,
        at_least=False,
        alpha=alpha,
        what=what,
        held_confidence=1 - held,
        done=len(found),
        can_continue=False,
        statement="RSE",
        records=((what + " sample", {**sample, "assumption": assumption}),),
    )
    return RelativeErrorDecision(
        conclude(decided).decision,
        f"RSE <= {significant(r)}",
        float(r),
        lower,
        upper,
        estimate,
        size,
        len(found),
        held,
        alpha,
        assumption,
    )
