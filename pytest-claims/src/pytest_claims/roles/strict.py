"""Strict mode for CI (`--claims-strict`, ini `claims_strict`): a verdict other than the registered one fails the run.

Without it an unexpected verdict (a claim registered `verified` that reads `inconclusive` or `falsified`) is
marked in the summary and exits 0; with it the run exits with STRICT_EXIT_STATUS, a code pytest never uses, so a CI
step can tell "the claims moved" from "a test failed" (1) and "bad input" (4). A claim this run did not select
(`not selected`) says nothing about the claim and is not counted. A run that already fails keeps its status.
"""

from __future__ import annotations

from typing import Any

import pytest

from pytest_claims.outcomes import Verdict

STRICT_EXIT_STATUS = 6
UNCOUNTED = {Verdict.NOT_SELECTED}  # a partial run: the claim was not asked about


def as_registered(record: dict[str, Any]) -> bool:
    """Whether a claim's verdict is its registered `expected` (which may add a reading: "verified under (A1)")."""
    expected = str(record.get("expected", ""))
    verdict = record["verdict"]
    return not expected or expected == verdict or expected.startswith(verdict + " ")


def unexpected(payload: dict[str, Any]) -> list[dict[str, Any]]:
    """The selected claims whose verdict is not the registered one, in the registry's order."""
    return [r for r in payload.get("claims", []) if r["verdict"] not in UNCOUNTED and not as_registered(r)]


class Strict:
    """Registered on the controller when strict mode is on: reads the payload when it is published (the plugin's
    `pytest_claims_payload` hook) and sets the exit status after the verdicts are made."""

    def __init__(self) -> None:
        self.published = False
        self.found: list[dict[str, Any]] = []

    def pytest_claims_payload(self, payload: dict[str, Any]) -> None:
        self.published = True
        self.found = unexpected(payload)

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        if self.found and session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = STRICT_EXIT_STATUS

    @pytest.hookimpl(trylast=True)  # after the verdicts it speaks of
    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if not self.found:
            if self.published:
                terminalreporter.write_line("strict: every selected claim reads as registered")
            return
        terminalreporter.write_sep("=", f"strict: {len(self.found)} claim(s) not as registered", red=True)
        for r in self.found:
            terminalreporter.write_line(f"{r['key']:>4}  {r['verdict']} (registered: {r['expected']})  {r['id']}")
        terminalreporter.write_line(
            f"exit status {STRICT_EXIT_STATUS} unless the run already failed; remedy: fix the code or the test, or "
            "change the claim's `expected` in the registry if the paper's claim is now read differently "
            "(an inconclusive verdict: more samples, or a sharper statement)"
        )
