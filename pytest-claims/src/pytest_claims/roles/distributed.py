"""The controller's pytest-xdist hooks: what workers collected, which crashed, what they report at their end.

Registered only where pytest-xdist is present, and only on the controller.
"""

from __future__ import annotations

from typing import Any

import pytest

from pytest_claims.roles.collection import worker_collected, worker_finished
from pytest_claims.roles.session import crashed
from pytest_claims.roles.state import RUN_ID_INPUT, State


class XdistHooks:
    """Feeds the controller's state from its workers."""

    def __init__(self, state: State) -> None:
        self.state = state

    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node: Any) -> None:
        """Each worker learns the run's report id, so what it records (an anytime ledger's batches) names the run."""
        node.workerinput[RUN_ID_INPUT] = self.state.inputs.report_id

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node: Any, ids: list[str]) -> None:
        """The controller learns what each worker collected as soon as it has, so a run interrupted before
        its workers report back still calls a collected claim `not run`, not `not selected` (the claim of a
        collected test is found through the registry's `tests` module)."""
        state = self.state
        worker = str(getattr(getattr(node, "gateway", None), "id", id(node)))
        workers = len(getattr(state.config.option, "tx", None) or [None])  # one per --tx, which -n makes
        worker_collected(state.collection, state.registry, worker, workers, ids)

    @pytest.hookimpl(optionalhook=True)
    def pytest_handlecrashitem(self, crashitem: str, report: Any, sched: Any) -> None:
        """A worker died while running `crashitem`; its statement is `crashed`, not missing."""
        lines = [line for line in str(getattr(report, "longrepr", "") or "").splitlines() if line.strip()]
        crashed(self.state.results, crashitem, (lines[0] if lines else "worker crashed")[:300])

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: Any) -> None:
        worker_finished(self.state.collection, getattr(node, "workeroutput", {}))
