"""The integer searches of the sample-size and count helpers: a monotone predicate's first true, a least size.

Written once for the fixed-sample bounds (pytest_claims.statements.decide) and the e-processes
(pytest_claims.anytime.evalues) alike: each finds the least whole number at which a predicate that is false, then
true, holds, by bisection over a bracket, or by doubling from a start and then bisection where no upper end is known.
"""

from __future__ import annotations

from collections.abc import Callable


def first_true(predicate: Callable[[int], bool], low: int, high: int) -> int:
    """The least k in [low, high) with predicate(k), for a predicate false then true as k grows; `high` if none is
    (predicate(high) is never asked). Returns k, after about log2(high - low) calls of the predicate."""
    while low < high:
        middle = (low + high) // 2
        low, high = (low, middle) if predicate(middle) else (middle + 1, high)
    return low


def least_size(ok: Callable[[int], bool], start: int, most: int) -> int | None:
    """The least size n >= `start` at which `ok(n)` holds, by doubling from `start` (at most to `most`) and then
    bisection between the last size that failed and the first that held. For a discrete test `ok` may be nearly but
    not exactly monotone in n: the answer is then a size at which it holds, the least up to a tooth. Returns the
    size, or None when `ok` fails at every size tried up to `most`."""
    low = high = start
    while not ok(high):
        if high >= most:
            return None
        low, high = high + 1, min(2 * high, most)
    return first_true(ok, low, high)
