"""Assertions for statements that own their messages: the value under test first, the reference second;
what was checked, the worst element and where it occurred go into the test's evidence under `what`, and
a failure raises ClaimRefuted with one line naming them and the command that reproduces the test.

statement_allclose works in the manner of numpy.testing.assert_allclose; statement_le, statement_ge and
statement_in_interval compare elementwise against bounds; statement_none asserts that no case violates a
statement; statement_holds asserts a condition as printed. All take scalars or arrays (NumPy is imported when
they run)."""

from __future__ import annotations

from typing import Any

from pytest_claims.context import record, refute


def statement_holds(condition: bool, message: str) -> None:
    """Assert a statement as printed: where `condition` is false, raise ClaimRefuted with the `message` and the
    command that reproduces the test."""
    __tracebackhide__ = True
    if not bool(condition):
        refute(message)


def _where(index: tuple[int, ...]) -> Any:
    return list(index) if len(index) != 1 else index[0]


def statement_allclose(
    actual: Any, desired: Any, *, rtol: float = 1e-7, atol: float = 0.0, what: str = "values"
) -> dict[str, Any]:
    """Assert |actual - desired| <= atol + rtol |desired| elementwise (NaN only against NaN).

    Records {what: {checked, max_abs_error, max_rel_error, worst_at, actual, desired, rtol, atol}} as
    evidence and returns it; raises ClaimRefuted naming the worst element and the reproduce command.
    """
    __tracebackhide__ = True
    import numpy as np  # (the extra pytest-claims[numpy])

    a, d = np.broadcast_arrays(np.asarray(actual, dtype=np.float64), np.asarray(desired, dtype=np.float64))
    with np.errstate(invalid="ignore", over="ignore"):
        error = np.abs(a - d)
        same_nan = np.isnan(a) & np.isnan(d)
        same_inf = np.isinf(a) & (a == d)
        error = np.where(same_nan | same_inf, 0.0, error)
        error = np.where(np.isnan(error), np.inf, error)  # NaN against a number
        allowed = atol + rtol * np.abs(np.where(np.isfinite(d), d, 0.0))
        excess = error - allowed
        relative = error / np.where(np.abs(d) > 0, np.abs(d), np.inf)
    bad = int(np.sum(excess > 0))
    worst = np.unravel_index(int(np.argmax(excess)), excess.shape) if excess.size else ()
    largest = np.unravel_index(int(np.argmax(error)), error.shape) if error.size else ()
    summary = {
        "checked": int(a.size),
        "outside_tolerance": bad,
        "max_abs_error": float(error.max()) if error.size else 0.0,
        "max_abs_error_at": _where(tuple(int(i) for i in largest)) if error.size else None,
        "max_rel_error": float(relative.max()) if relative.size else 0.0,
        "worst_at": _where(tuple(int(i) for i in worst)) if excess.size else None,  # least margin to the tolerance
        "actual": float(a[worst]) if excess.size else None,
        "desired": float(d[worst]) if excess.size else None,
        "rtol": rtol,
        "atol": atol,
    }
    record(what, summary)
    if bad:
        refute(
            f"{what}: {bad} of {a.size} outside atol={atol:g} + rtol={rtol:g} |desired|; "
            f"worst at {summary['worst_at']}: "
            f"actual {summary['actual']!r}, desired {summary['desired']!r} (abs error {float(error[worst]):.3g})"
        )
    return summary


def _compare(actual: Any, lower: Any, upper: Any, what: str, wording: str, strict: bool = False) -> dict[str, Any]:
    """lower <= actual <= upper elementwise (strict: lower < actual < upper; None: no bound; NaN fails):
    the evidence and the refutation."""
    __tracebackhide__ = True
    import numpy as np

    value = np.asarray(actual, dtype=np.float64)
    low = np.asarray(-np.inf if lower is None else lower, dtype=np.float64)
    high = np.asarray(np.inf if upper is None else upper, dtype=np.float64)
    value, low, high = np.broadcast_arrays(value, low, high)
    with np.errstate(invalid="ignore"):
        excess = np.maximum(low - value, value - high)  # > 0: outside; NaN: not a number
    excess = np.where(np.isnan(excess), np.inf, excess)
    bad = int(np.sum(excess >= 0)) if strict else int(np.sum(excess > 0))
    worst = np.unravel_index(int(np.argmax(excess)), excess.shape) if excess.size else ()
    summary: dict[str, Any] = {
        "checked": int(value.size),
        "violations": bad,
        "worst_at": _where(tuple(int(i) for i in worst)) if excess.size else None,
        "actual": float(value[worst]) if excess.size else None,
        "lower": None if lower is None else float(low[worst]) if excess.size else None,
        "upper": None if upper is None else float(high[worst]) if excess.size else None,
        "least_margin": float(-excess[worst]) if excess.size else None,  # < 0: by how much the worst fails
    }
    record(what, summary)
    if bad:
        at = f" at {summary['worst_at']}" if value.size > 1 else ""
        bounds = wording.format(lower=summary["lower"], upper=summary["upper"])
        actual = summary["actual"]
        # bounds per element: the worst element is measured against its own bound, not every element's
        own = any(
            np.ndim(b) > 0 and np.ptp(np.asarray(b, dtype=np.float64)) > 0 for b in (lower, upper) if b is not None
        )
        found = (
            f"outside their own bounds; worst{at}: {actual!r}, not {bounds}"
            if own
            else f"not {bounds}; worst{at}: {actual!r}"
        )
        refute(f"{what}: {bad} of {value.size} {found} (off by {-summary['least_margin']:.3g})")
    return summary


def statement_le(actual: Any, bound: Any, *, what: str, strict: bool = False) -> dict[str, Any]:
    """Assert actual <= bound (strict: actual < bound) elementwise (put any rounding allowance into the
    bound, with its reason); `what` names it in the message and keys the evidence. Returns the evidence record (the
    worst case); raises ClaimRefuted where it fails."""
    __tracebackhide__ = True
    return _compare(actual, None, bound, what, "< {upper!r}" if strict else "<= {upper!r}", strict)


def statement_ge(actual: Any, bound: Any, *, what: str, strict: bool = False) -> dict[str, Any]:
    """Assert actual >= bound (strict: actual > bound) elementwise; `what` names it in the message and keys the
    evidence. Returns the evidence record (the worst case); raises ClaimRefuted where it fails."""
    __tracebackhide__ = True
    return _compare(actual, bound, None, what, "> {lower!r}" if strict else ">= {lower!r}", strict)


def statement_in_interval(actual: Any, lower: Any, upper: Any, *, what: str, strict: bool = False) -> dict[str, Any]:
    """Assert lower <= actual <= upper (strict: the open interval) elementwise; `what` names it in the message and
    keys the evidence. Returns the evidence record (the worst case); raises ClaimRefuted where it fails."""
    __tracebackhide__ = True
    return _compare(
        actual, lower, upper, what, "in ({lower!r}, {upper!r})" if strict else "in [{lower!r}, {upper!r}]", strict
    )


def statement_none(violations: Any, *, what: str, cases: Any = None) -> dict[str, Any]:
    """Assert that no case violates the statement: `violations` is a boolean mask (True: violated) over the
    cases checked; `cases` (optional, same length) describes each, and the first violating one is named; `what`
    names it in the message and keys the evidence. Returns the evidence record; raises ClaimRefuted where one fails."""
    __tracebackhide__ = True
    import numpy as np

    mask = np.asarray(violations, dtype=bool).reshape(-1)
    bad = np.flatnonzero(mask)
    summary: dict[str, Any] = {
        "checked": int(mask.size),
        "violations": int(bad.size),
        "first_at": int(bad[0]) if bad.size else None,
    }
    if bad.size and cases is not None:
        summary["first_case"] = repr(cases[int(bad[0])])[:300]
    record(what, summary)
    if bad.size:
        example = f": {summary['first_case']}" if "first_case" in summary else ""
        refute(f"{what}: {bad.size} of {mask.size} cases violate it; the first at {int(bad[0])}{example}")
    return summary
