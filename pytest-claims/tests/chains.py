"""Anytime chains for the tests: a ledger's batches built from (successes, trials) counts as a run writes them, with
the cumulative counts and the log e-values of 'rate >= threshold' under the uniform prior."""

from __future__ import annotations

from pytest_claims.anytime import UNIFORM, rate_log_evalues_for


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
