"""Anytime chains for the tests: a ledger's batches built from (successes, trials) counts as a run writes them, with
the cumulative counts and the log e-values of 'rate >= threshold' under the uniform prior; and the toy project of
one anytime statement that the continuation tests write (its ini file and registry)."""

from __future__ import annotations

from pytest_claims.anytime.evalues import UNIFORM, rate_log_evalues_for


def ledger_batches(*counts: tuple[int, int], threshold: float, seed: int = 0) -> list[dict]:
    batches, total_s, total_n = [], 0, 0
    for index, (s, n) in enumerate(counts):
        total_s, total_n = total_s + s, total_n + n
        log_for, log_against = rate_log_evalues_for(total_s, total_n, threshold, at_least=True, prior=UNIFORM)
        batches.append(
            {
                "batch": index,
                "stream": f"seed={seed}|test=t|batch={index}",
                "run": "",
                "successes": s,
                "trials": n,
                "cum_successes": total_s,
                "cum_trials": total_n,
                "log_e_for": log_for,
                "log_e_against": log_against,
            }
        )
    return batches


INI = """
[pytest]
claims_registry = registry.toml
claims_tiers = smoke full
claims_report_dir = out
claims_store_dir = store
"""


def toy_registry(claim: str, statement: str, tests: str, decision: str) -> str:
    """A registry of one claim `claim` (tested in `tests`) with one statement, registered false alarm 1e-4, decided
    as the line `decision` says (empty: not said)."""
    return f"""
[paper.toy]
title = "A toy paper"
source = "nowhere"

[[claim]]
id = "{claim}"
key = "T1"
paper = "toy"
where = "Eq. 1"
text = "a toy claim"
provenance = ""
expected = "verified"
tests = "{tests}"

[[claim.statement]]
name = "{statement}"
text = "a toy statement"
expected = "holds"
false_alarm = 1e-4
false_alarm_basis = "Ville's inequality, anytime-valid"
mutants_waived = "a toy"
{decision}
"""
