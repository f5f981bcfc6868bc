"""pytest-claims: research claims as executable specifications.

A registry of claims and their statements (TOML), one test per statement, statement outcomes and
claim verdicts, evidence on the test reports, a keyed resumable result store, mutants that show each
statement's power, merged runs, and an HTML verdict report.
"""

from pytest_claims.assertions import (
    statement_allclose,
    statement_ge,
    statement_in_interval,
    statement_le,
    statement_none,
)
from pytest_claims.decide import (
    StatementInconclusive,
    decide_interval,
    decide_rate,
    decide_test,
    rate_lower_bound,
    rate_upper_bound,
    statement_inconclusive,
)
from pytest_claims.registry import ClaimRefuted, statement_holds
from pytest_claims.store import current_store


def registered_false_alarm() -> float:
    """The running statement test's registered false-alarm probability at its tier (see plugin)."""
    from pytest_claims.plugin import registered_false_alarm as found

    return found()


__all__ = [
    "ClaimRefuted",
    "StatementInconclusive",
    "current_store",
    "decide_interval",
    "decide_rate",
    "decide_test",
    "rate_lower_bound",
    "rate_upper_bound",
    "registered_false_alarm",
    "statement_allclose",
    "statement_ge",
    "statement_in_interval",
    "statement_le",
    "statement_none",
    "statement_holds",
    "statement_inconclusive",
]
