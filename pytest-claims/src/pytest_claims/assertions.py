"""Tolerance assertions for statements, in the manner of numpy.testing.assert_allclose (the value
under test first, the reference second): the worst error and where it occurred go into the test's
evidence, and a failure prints the command that reproduces the test."""

from __future__ import annotations

from typing import Any

from pytest_claims.registry import ClaimRefuted


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
    import numpy as np  # the one helper that needs it (the extra pytest-claims[numpy])

    from pytest_claims.plugin import current_evidence, reproduce_command

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
    found = current_evidence()
    if found is not None:
        found[0].record(**{what: summary})
    if bad:
        command = reproduce_command(found[1]) if found is not None else "(outside a pytest run)"
        raise ClaimRefuted(
            f"{what}: {bad} of {a.size} outside atol={atol:g} + rtol={rtol:g} |desired|; "
            f"worst at {summary['worst_at']}: "
            f"actual {summary['actual']!r}, desired {summary['desired']!r} (abs error {float(error[worst]):.3g}); "
            f"reproduce: {command}"
        )
    return summary
