"""E-processes for means with no assumption on the data's distribution: betting on bounded data, signs of pairs.

Pure Python maths (math only; nothing of pytest). Explained, with its measured type-I error and power, in
docs/explanation/anytime.md ("Means without a normality assumption").

**Betting** (Waudby-Smith & Ramdas, "Estimating means of bounded random variables by betting", JRSS-B 2024,
arXiv:2010.09686). Observations x_i known to lie in [lo, hi] are rescaled to y_i = (x_i - lo) / (hi - lo) in [0, 1]
and the threshold c to m in (0, 1). Against the null 'mean <= m' a gambler who starts with capital 1 and stakes the
fraction lambda_i >= 0 on each y_i ends with

    K_n = prod_i (1 + lambda_i (y_i - m)),

and against 'mean >= m' with prod_i (1 - lambda_i (y_i - m)): the two one-sided halves of the paper's hedged capital
process. If each lambda_i is chosen from y_1 .. y_{i-1} only (predictable) and every factor stays positive, each
factor has conditional mean 1 + lambda_i (E[y_i | past] - m) <= 1 under the null, whatever the distribution of the
y's in [0, 1] (skewed, two-point, heavy in its bounded tails): K is a nonnegative supermartingale and, by Ville's
inequality, P(sup_n K_n >= 1 / alpha) <= alpha with a look after every observation. The bet is the paper's
predictable plug-in (its eq. 26, one-sided: log(1/alpha) where the two-sided form has log(2/alpha)),

    lambda_i = min( sqrt(2 log(1/alpha) / (s2_{i-1} i log(1 + i))), TRUNCATION / m ),      (TRUNCATION / (1 - m)
                                                                                            for the other side)
    mu_i = (1/2 + sum_{j<=i} y_j) / (i + 1),   s2_i = (1/4 + sum_{j<=i} (y_j - mu_j)^2) / (i + 1),

truncated at 1/2 of the largest stake that keeps capital positive (1/m), so a factor is at least 1/2. The capital
depends on the order of the observations; so the state after a batch (`BettingState`: the count, the two sums and
the two log capitals) continues exactly where the batch before left it, and a chain of batches is one e-process.

**Signs of pairs** (no bounds needed): for pairs (a_i, b_i), the statement 'A above B more often than not'
(P(a > b) > 1/2) is held by the beta-mixture e-process of the count of pairs with a > b against the rate 1/2
(pytest_claims.anytime.evalues.rate_log_evalues); refuted by that of the pairs with a < b. A tie counts for neither
side: conservative both ways (it can only lower each e-value), and said so in the verdict.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

from pytest_claims.anytime.evalues import UNIFORM, rate_log_evalues

TRUNCATION = 0.5  # of the largest stake 1/m that keeps the capital positive: every factor is >= 1/2 (WSR's c = 1/2)


def check_bounds(lo: float, hi: float) -> tuple[float, float]:
    """(lo, hi) as floats if they are finite with lo < hi and hi - lo finite, else one ValueError naming them."""
    for name, value in (("lo", lo), ("hi", hi)):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise ValueError(f"bounds: {name} must be a finite number, got {value!r}")
    if not lo < hi:
        raise ValueError(f"bounds must be (lo, hi) with lo < hi, got ({lo!r}, {hi!r})")
    if not math.isfinite(float(hi) - float(lo)):  # every observation is rescaled by hi - lo
        raise ValueError(f"bounds ({lo!r}, {hi!r}) are too far apart: hi - lo is no finite number")
    return float(lo), float(hi)


def check_values(values: Iterable[float], lo: float, hi: float) -> list[float]:
    """The observations as floats, each finite and inside [lo, hi], or one ValueError naming the first that is not."""
    out = []
    for index, value in enumerate(values):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(float(value)):
            raise ValueError(f"observation {index} is {value!r}, not a finite number")
        if not lo <= value <= hi:
            raise ValueError(
                f"observation {index} = {value!r} lies outside the registered bounds [{lo:g}, {hi:g}]: betting is "
                "valid only for data inside its bounds (register bounds that hold for every value the data can take)"
            )
        out.append(float(value))
    return out


def scaled_threshold(threshold: float, lo: float, hi: float) -> float:
    """The threshold rescaled to [0, 1], which must lie strictly inside, also once rescaled (a mean at a bound is no
    question)."""
    if isinstance(threshold, bool) or not isinstance(threshold, (int, float)) or not lo < threshold < hi:
        raise ValueError(f"the threshold must lie strictly inside the bounds ({lo:g}, {hi:g}), got {threshold!r}")
    scaled = (threshold - lo) / (hi - lo)
    if not 0.0 < scaled < 1.0:  # a stake is 1/2 over m or 1 - m: a threshold rounded onto a bound stakes without end
        raise ValueError(
            f"the threshold {threshold!r} lies so near a bound of ({lo:g}, {hi:g}) that rescaled to [0, 1] it is the "
            "bound itself (in double precision)"
        )
    return scaled


def _check_alpha(name: str, alpha: float) -> float:
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float)) or not 0.0 < alpha < 1.0:
        raise ValueError(f"{name} must be in (0, 1) for a bet's size, got {alpha!r}")
    return float(alpha)


@dataclass(frozen=True)
class BettingState:
    """Where a betting chain stands: n observations seen, the plug-in's sums (sum of y; sum of (y_j - mu_j)^2), and
    the log capital against 'mean <= m' (for) and against 'mean >= m' (against)."""

    n: int = 0
    sum_y: float = 0.0
    sum_sq: float = 0.0
    log_for: float = 0.0
    log_against: float = 0.0


def _stake(state: BettingState, alpha: float, cap: float) -> float:
    """The predictable plug-in bet for observation i = n + 1, from the state after the first n."""
    i = state.n + 1
    s2 = (0.25 + state.sum_sq) / (state.n + 1)  # s2_{i-1}: 1/4 before any data
    return min(math.sqrt(2.0 * math.log(1.0 / alpha) / (s2 * i * math.log1p(i))), cap)


def betting_step(
    state: BettingState, y: float, m: float, *, alpha: float, held_alpha: float, aggressive: bool = False
) -> BettingState:
    """The state after one more observation y in [0, 1]: each side stakes its predictable bet (tuned to its own
    level: held_alpha for, alpha against), then the plug-in's sums take y in. `aggressive` is a deliberately invalid
    variant kept for the tests and the benchmark: the bet chosen *after* seeing y (the better of the two extreme
    stakes): its "capital" is no supermartingale, and its measured type-I error exceeds alpha."""
    up, down = TRUNCATION / m, TRUNCATION / (1.0 - m)
    if aggressive:
        lam_for, lam_against = (up if y > m else 0.0), (down if y < m else 0.0)
    else:
        lam_for, lam_against = _stake(state, held_alpha, up), _stake(state, alpha, down)
    mu = (0.5 + state.sum_y + y) / (state.n + 2)  # mu_i, which includes y_i (the paper's form)
    return BettingState(
        n=state.n + 1,
        sum_y=state.sum_y + y,
        sum_sq=state.sum_sq + (y - mu) ** 2,
        log_for=state.log_for + math.log1p(lam_for * (y - m)),
        log_against=state.log_against + math.log1p(-lam_against * (y - m)),
    )


def betting_path(
    values: Iterable[float],
    lo: float,
    hi: float,
    threshold: float,
    *,
    alpha: float,
    held_alpha: float,
    state: BettingState | None = None,
    aggressive: bool = False,
) -> list[BettingState]:
    """The state after each of `values` (checked inside [lo, hi]), continuing `state` (a fresh chain if None): the
    log capitals for 'mean > threshold' (log_for) and against it (log_against), at every look."""
    lo, hi = check_bounds(lo, hi)
    m = scaled_threshold(threshold, lo, hi)
    alpha, held_alpha = _check_alpha("alpha", alpha), _check_alpha("held_alpha", held_alpha)
    state, out = state or BettingState(), []
    for x in check_values(values, lo, hi):
        state = betting_step(state, (x - lo) / (hi - lo), m, alpha=alpha, held_alpha=held_alpha, aggressive=aggressive)
        out.append(state)
    return out


def sign_counts(a: Iterable[float], b: Iterable[float]) -> tuple[int, int, int]:
    """(pairs with a > b, pairs with a < b, ties) of two equally long sequences of finite numbers."""
    a, b = list(a), list(b)
    if len(a) != len(b):
        raise ValueError(f"paired samples must be equally long, got {len(a)} and {len(b)}")
    above = below = ties = 0
    for index, (x, y) in enumerate(zip(a, b)):
        for value in (x, y):
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(float(value)):
                raise ValueError(f"pair {index} holds {value!r}, not a finite number")
        above, below, ties = above + (x > y), below + (x < y), ties + (x == y)
    return above, below, ties


def sign_log_evalues(above: int, below: int, ties: int) -> tuple[float, float]:
    """(ln E for 'P(a > b) > 1/2', ln E for 'P(a < b) > 1/2') after these counts: the uniform beta mixture against
    the rate 1/2 of each count among all pairs, a tie a failure for both (conservative)."""
    n = above + below + ties
    return rate_log_evalues(above, n, 0.5, prior=UNIFORM)[0], rate_log_evalues(below, n, 0.5, prior=UNIFORM)[0]
