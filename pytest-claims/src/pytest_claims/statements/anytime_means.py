"""Anytime decisions about means with no assumption on the data's law: betting on bounded data, signs of pairs.

The default routes for 'mean > c', 'mean_A > mean_B' and paired comparisons (the safe t-test, decide_safe_t, is the
route for data stated normal). Each decides as the other anytime routes do (pytest_claims.statements.anytime_batches):
this run's batch joins the statement's ledger (continued with --claims-continue, pooled in a merge), and the chain is
decided at its first crossing, held when its e-value for the statement reaches 1 / held_alpha, refuted when the one
against it reaches 1 / alpha. The maths is pytest_claims.anytime.betting; what each assumes, and what it was
measured to cost, is docs/explanation/anytime.md.

- `decide_mean(values, threshold, bounds=(lo, hi))`: 'mean > threshold' (or 'mean < threshold', at_least=False)
  of observations that can only lie in [lo, hi]. Assumes only the bounds and that the observations of a chain are
  drawn independently (or each with conditional mean at most the threshold, under the null); a value outside the
  bounds is refused.
- `decide_mean_difference(a, b, bounds=(lo, hi))`: 'mean_A > mean_B' by betting on the differences a_i - b_i
  (bounded in [lo - hi, hi - lo]) against 0: for paired data, or for two independent samples of equal size (each
  difference of independent draws has mean mean_A - mean_B).
- `decide_signs(a, b)`: 'A above B more often than not' (P(a > b) > 1/2) for pairs without bounds: the beta
  mixture of the count of pairs above, against the rate 1/2; refuted when B lies above A more often than not. A tie
  counts for neither side (conservative, and said in the verdict).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from pytest_claims.statements.anytime_batches import decide_batch_product
from pytest_claims.anytime.betting import check_bounds, check_values, scaled_threshold, sign_counts
from pytest_claims.statements.decision import held_level
from pytest_claims.anytime.chain_kinds import BETTING, MAX_BATCH_VALUES, SIGN

_BETTING_BASIS = "the capital of betting on its observations in order (Waudby-Smith & Ramdas)"


def _levels(what: str, alpha: float, held_alpha: float | None) -> dict[str, Any]:
    """The parameters every anytime route's chain starts with: the name and the two levels (held_level checks them)."""
    return {"what": what, "alpha": alpha, "held_alpha": held_level(alpha, held_alpha)}


def _observations(what: str, values: Iterable[float], lo: float, hi: float) -> list[float]:
    """The batch's observations as Python floats inside [lo, hi], or one ValueError naming the statement."""
    try:
        found = check_values(
            [float(v) if hasattr(v, "__float__") and not isinstance(v, bool) else v for v in values], lo, hi
        )
    except ValueError as error:
        raise ValueError(f"{what}: {error}") from None
    if not 1 <= len(found) <= MAX_BATCH_VALUES:
        raise ValueError(f"{what}: a batch holds 1 to {MAX_BATCH_VALUES} observations, got {len(found)}")
    return found


def _bounds(what: str, bounds: Any) -> tuple[float, float]:
    try:
        lo, hi = bounds
        return check_bounds(
            float(lo) if not isinstance(lo, bool) else lo, float(hi) if not isinstance(hi, bool) else hi
        )
    except (TypeError, ValueError) as error:
        raise ValueError(f"{what}: bounds must be (lo, hi), the values the data can take ({error})") from None


def decide_mean(
    values: Iterable[float],
    threshold: float,
    *,
    bounds: tuple[float, float],
    alpha: float,
    what: str,
    at_least: bool = True,
    held_alpha: float | None = None,
    batch: int | None = None,
) -> dict[str, Any]:
    """Decide 'mean > threshold' (at_least; else 'mean < threshold') from this batch's observations, in the order
    drawn, each known to lie in `bounds` = (lo, hi): anytime-valid for any law of the data inside the bounds, by the
    capital of betting against the statement's opposite (held at 1 / held_alpha, default alpha) and against the
    statement (refuted at 1 / alpha), continued over the statement's batches (`batch`: the claims_batch fixture).
    `values`: this batch's observations; `what` names it in messages and keys its evidence. Returns the decision's
    record when held; raises ClaimRefuted or StatementInconclusive otherwise."""
    __tracebackhide__ = True
    lo, hi = _bounds(what, bounds)
    try:
        scaled_threshold(threshold, lo, hi)
    except ValueError as error:
        raise ValueError(f"{what}: {error}") from None
    if not isinstance(at_least, bool):
        raise TypeError(f"{what}: at_least must be a boolean, got {at_least!r}")
    parameters = {**_levels(what, alpha, held_alpha), "lo": lo, "hi": hi, "threshold": float(threshold)}
    return decide_batch_product(
        BETTING,
        {"values": _observations(what, values, lo, hi)},
        {**parameters, "at_least": at_least},
        statement=f"mean {'>' if at_least else '<'} {threshold:g}",
        batch=batch,
        function="decide_mean",
        basis=_BETTING_BASIS,
        assumption=f"every observation lies in [{lo:g}, {hi:g}]; observations independent (any law)",
    )


def decide_mean_difference(
    a: Iterable[float],
    b: Iterable[float],
    *,
    bounds: tuple[float, float],
    alpha: float,
    what: str,
    held_alpha: float | None = None,
    batch: int | None = None,
) -> dict[str, Any]:
    """Decide 'mean_A > mean_B' from equally long batches a and b whose values lie in `bounds`: pairs (a_i, b_i)
    of paired data, or the i-th draws of two independent samples; by betting on the differences a_i - b_i, which lie
    in [lo - hi, hi - lo], against 0 (decide_mean's route), held at 1 / held_alpha (default alpha), refuted at
    1 / alpha, continued over the statement's batches (`batch`: the claims_batch fixture). `what` names it in
    messages and keys its evidence. Returns the decision's record when held; raises ClaimRefuted or
    StatementInconclusive otherwise."""
    __tracebackhide__ = True
    lo, hi = _bounds(what, bounds)
    a, b = list(a), list(b)
    if len(a) != len(b):
        raise ValueError(
            f"{what}: a and b must be equally long (pairs, or two samples of one size), got {len(a)}, {len(b)}"
        )
    a, b = _observations(what, a, lo, hi), _observations(what, b, lo, hi)
    width = hi - lo
    parameters = {**_levels(what, alpha, held_alpha), "lo": -width, "hi": width, "threshold": 0.0}
    return decide_batch_product(
        BETTING,
        {"values": [x - y for x, y in zip(a, b)]},
        {**parameters, "at_least": True},
        statement="mean_A > mean_B",
        batch=batch,
        function="decide_mean_difference",
        basis=_BETTING_BASIS + ", on the differences a - b",
        assumption=f"every value lies in [{lo:g}, {hi:g}]; pairs independent of each other (any law)",
    )


def decide_signs(
    a: Iterable[float],
    b: Iterable[float],
    *,
    alpha: float,
    what: str,
    held_alpha: float | None = None,
    batch: int | None = None,
) -> dict[str, Any]:
    """Decide 'A above B more often than not' (P(a > b) > 1/2) from pairs (a_i, b_i), with no bounds and no law
    assumed: held when the beta-mixture e-value of the pairs above (against the rate 1/2) reaches 1 / held_alpha,
    refuted when that of the pairs below reaches 1 / alpha. A tie counts for neither side (conservative). Continued
    over the statement's batches (`batch`: the claims_batch fixture); `what` names it in messages and keys its
    evidence. Returns the decision's record when held; raises ClaimRefuted or StatementInconclusive otherwise."""
    __tracebackhide__ = True
    try:
        above, below, ties = sign_counts(list(a), list(b))
    except ValueError as error:
        raise ValueError(f"{what}: {error}") from None
    if above + below + ties == 0:
        raise ValueError(f"{what}: no pairs in this batch")
    return decide_batch_product(
        SIGN,
        {"above": above, "below": below, "ties": ties},
        {**_levels(what, alpha, held_alpha)},
        statement="P(A > B) > 1/2",
        batch=batch,
        function="decide_signs",
        basis="the beta mixture of the count of pairs above (ties count for neither side)",
        assumption="pairs independent of each other (any law; no bounds)",
    )
