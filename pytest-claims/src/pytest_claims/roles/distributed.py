"""The controller's pytest-xdist hooks: what workers collected, which crashed, what they report at their end.

Registered only where pytest-xdist is present, and only on the controller.
"""

from __future__ import annotations

from typing import Any

import pytest

from pytest_claims.roles.state import (
    EXERCISED_OUTPUT,
    REGISTRY_PROBLEMS,
    RUN_ID_INPUT,
    SELECTED_OUTPUT,
    STATEMENT_OF_OUTPUT,
    State,
)


class XdistHooks:
    """Feeds the controller's state from its workers."""

    def __init__(self, state: State) -> None:
        self.state = state

    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node: Any) -> None:
        """Each worker learns the run's report id, so what it records (an anytime ledger's batches) names the run."""
        node.workerinput[RUN_ID_INPUT] = self.state.report_id

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node: Any, ids: list[str]) -> None:
        """The controller learns what each worker collected as soon as it has, so a run interrupted before
        its workers report back still calls a collected claim `not run`, not `not selected` (the claim of a
        collected test is found through the registry's `tests` module)."""
        state = self.state
        # collection ends once every worker xdist starts (one per --tx, which -n makes) has reported its own
        state.workers_collected.add(str(getattr(getattr(node, "gateway", None), "id", id(node))))
        state.collected = len(state.workers_collected) >= len(getattr(state.config.option, "tx", None) or [None])
        for module in {nodeid.split("::", 1)[0] for nodeid in ids}:
            state.selected.update(claim.id for claim in state.registry.claims_of_module(module))
        for nodeid in ids:  # which claim a test belongs to, by its module (the worker says which statement later)
            claims = {claim.id for claim in state.registry.claims_of_module(nodeid.split("::", 1)[0])}
            if claims:
                state.scheduled.setdefault(nodeid, set()).update(claims)

    @pytest.hookimpl(optionalhook=True)
    def pytest_handlecrashitem(self, crashitem: str, report: Any, sched: Any) -> None:
        """A worker died while running `crashitem`; its statement is `crashed`, not missing."""
        lines = [line for line in str(getattr(report, "longrepr", "") or "").splitlines() if line.strip()]
        self.state.crashed[crashitem] = (lines[0] if lines else "worker crashed")[:300]

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: Any) -> None:
        state = self.state
        output = getattr(node, "workeroutput", {})
        if output.get(REGISTRY_PROBLEMS) and not state.workers_registry_problems:
            state.workers_registry_problems = list(output[REGISTRY_PROBLEMS])
            state.registry_check_failed = "; ".join(state.workers_registry_problems)
        for cid, names in output.get(EXERCISED_OUTPUT, {}).items():
            state.exercised.setdefault(cid, set()).update(names)
        state.selected.update(output.get(SELECTED_OUTPUT, []))
        state.statement_of.update({test: tuple(pair) for test, pair in output.get(STATEMENT_OF_OUTPUT, {}).items()})
