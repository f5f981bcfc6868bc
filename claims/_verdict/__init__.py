"""The suite's verdict machinery: registry, statement outcomes, claim verdicts and the report."""
from claims._verdict.registry import ClaimRefuted, statement_holds

__all__ = ["ClaimRefuted", "statement_holds"]
