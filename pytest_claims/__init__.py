"""pytest-claims: research claims as executable specifications (registry, statement outcomes, claim
verdicts, evidence, a keyed result store, mutants, merged runs and an HTML verdict report)."""
from claims._verdict.registry import ClaimRefuted, statement_holds

__all__ = ["ClaimRefuted", "statement_holds"]
