"""pytest-claims: research claims as executable specifications.

A registry of claims and their statements (TOML), one test per statement, statement outcomes and
claim verdicts, evidence on the test reports, a keyed resumable result store, mutants that show each
statement's power, merged runs, and an HTML verdict report.
"""
from pytest_claims.assertions import statement_allclose
from pytest_claims.registry import ClaimRefuted, statement_holds
from pytest_claims.store import current_store

__all__ = ["ClaimRefuted", "current_store", "statement_allclose", "statement_holds"]
