"""Collection: markers checked against the registry, refuted statements as strict xfail, work units first."""

from __future__ import annotations

import os
from typing import Any

import pytest

from pytest_claims.model.evidence import reserved_name_problem, reserved_names_used
from pytest_claims.outcomes import ClaimRefuted, Expected
from pytest_claims.roles.state import (
    DECLARED_TIER,
    EXERCISED_OUTPUT,
    REGISTRY_PROBLEMS,
    SELECTED_OUTPUT,
    STATEMENT,
    STATEMENT_OF_OUTPUT,
    Collected,
    State,
    is_worker,
)
from pytest_claims.model.registry import Registry


def registry_check_message(problems: list[str]) -> str:
    return "claim registry check failed:\n  " + "\n  ".join(problems)


def reserved_evidence_names(items: list[pytest.Item]) -> list[str]:
    """One line per place a claim test module records evidence under a name the report uses itself."""
    problems: list[str] = []
    seen: set[Any] = set()
    for item in items:
        path = getattr(item, "path", None)
        if STATEMENT not in item.stash or path is None or path in seen:
            continue
        seen.add(path)
        try:
            used = reserved_names_used(path.read_text(encoding="utf-8"))
        except (OSError, SyntaxError, ValueError):  # not Python source: nothing to check
            continue
        relative = item.nodeid.split("::", 1)[0]
        problems.extend(f"{relative}:{line}: {reserved_name_problem(name)}" for line, name in used)
    return problems


class Collection:
    """Checks every collected test's markers against the registry and records what the run selected."""

    def __init__(self, state: State) -> None:
        self.state = state

    @pytest.hookimpl(tryfirst=True)
    def pytest_collection_modifyitems(
        self, session: pytest.Session, config: pytest.Config, items: list[pytest.Item]
    ) -> None:
        state = self.state
        # pytest calls this only once every module is collected (pytest_collection_finish comes even after a signal)
        state.collection.collected = not is_worker(config)
        problems = []
        for item in items:
            tiers = [t for t in state.registry.tiers if item.get_closest_marker(t)]
            if len(tiers) != 1:
                problems.append(
                    f"{item.nodeid}: needs exactly one scale marker of {state.registry.tiers}, has {tiers or 'none'}"
                )
                continue
            item.stash[DECLARED_TIER] = tiers[0]
            markers = list(item.iter_markers("claim"))
            if len(markers) > 1:
                named = ", ".join(f"{m.args[0] if m.args else '?'}:{m.kwargs.get('statement')}" for m in markers)
                problems.append(
                    f"{item.nodeid}: {len(markers)} claim markers ({named}); a test asserts one statement of one claim"
                )
                continue
            marker = markers[0] if markers else None
            if marker is None:
                continue
            cid: Any = marker.args[0] if marker.args else None  # checked against the registry next
            name: Any = marker.kwargs.get("statement")
            claim = state.registry.claims.get(cid)
            if claim is None:
                problems.append(f"{item.nodeid}: unknown claim {cid!r} (not in the registry)")
                continue
            statement = claim.statements.get(name)
            if statement is None:
                problems.append(f"{item.nodeid}: claim {cid!r} has no statement {name!r} in the registry")
                continue
            item.stash[STATEMENT] = (claim, statement)
            state.collection.exercised.setdefault(cid, set()).add(name)
            if statement.scale_free:
                for other in state.registry.tiers:
                    if other != tiers[0]:
                        item.add_marker(other)
            if statement.expected == Expected.REFUTED:
                item.add_marker(
                    pytest.mark.xfail(strict=True, raises=ClaimRefuted, reason=f"registered as refuted: {cid} / {name}")
                )
        problems += reserved_evidence_names(items)
        if problems:
            state.collection.registry_check_failed = "; ".join(problems)
            if is_worker(config):  # xdist turns a worker's UsageError into an INTERNALERROR: collect nothing and
                getattr(config, "workeroutput")[REGISTRY_PROBLEMS] = (
                    problems  # let the controller fail with the same lines
                )
                items[:] = []
                return
            raise pytest.UsageError(registry_check_message(problems))

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        state = self.state
        state.collection.selected = {item.stash[STATEMENT][0].id for item in session.items if STATEMENT in item.stash}
        state.collection.statement_of = {
            item.nodeid: (item.stash[STATEMENT][0].id, item.stash[STATEMENT][1].name)
            for item in session.items
            if STATEMENT in item.stash
        }
        if is_worker(session.config):
            output: dict[str, Any] = getattr(session.config, "workeroutput")  # xdist's, on a worker only
            output[EXERCISED_OUTPUT] = {c: sorted(s) for c, s in state.collection.exercised.items()}
            output[SELECTED_OUTPUT] = sorted(state.collection.selected)
            output[STATEMENT_OF_OUTPUT] = state.collection.statement_of
        else:
            state.collection.scheduled = {test: {cid} for test, (cid, _) in state.collection.statement_of.items()}


def block_starts(count: int, workers: int) -> list[int]:
    """Where each worker's first block of tests begins: xdist's worksteal (and load) schedulers hand the
    pending tests out in contiguous blocks, remaining // workers left, in worker order."""
    starts, position, remaining = [], 0, count
    for i in range(workers):
        starts.append(position)
        block = remaining // (workers - i)
        position, remaining = position + block, remaining - block
    return starts


def units_first(items: list[Any], is_unit: Any, workers: int) -> list[Any]:
    """`items` with the work units moved so that each worker's first block starts with one (unit j at
    the start of block j mod workers, in the order collected); one process: every unit first."""
    units = [item for item in items if is_unit(item)]
    if not units:
        return list(items)
    out = [item for item in items if not is_unit(item)]
    starts = block_starts(len(items), max(1, workers))
    places = sorted((starts[j % len(starts)] + j // len(starts), j) for j in range(len(units)))
    for place, j in places:
        out.insert(min(place, len(out)), units[j])
    return out


class WorkUnitsFirst:
    """Runs after selection (-m, -k), so the positions are those of the tests that will run."""

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(
        self, session: pytest.Session, config: pytest.Config, items: list[pytest.Item]
    ) -> None:
        workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1") or 1) if is_worker(config) else 1
        items[:] = units_first(items, lambda item: item.get_closest_marker("work_unit") is not None, workers)


def worker_collected(facts: Collected, registry: Registry, worker: str, workers: int, ids: list[str]) -> None:
    """On the controller: an xdist `worker` (of `workers`) collected the tests `ids`; collection ends once every
    worker has reported its own. A test's claim is found by its module (the worker says which statement later)."""
    facts.workers_collected.add(worker)
    facts.collected = len(facts.workers_collected) >= workers
    for module in {nodeid.split("::", 1)[0] for nodeid in ids}:
        facts.selected.update(claim.id for claim in registry.claims_of_module(module))
    for nodeid in ids:
        claims = {claim.id for claim in registry.claims_of_module(nodeid.split("::", 1)[0])}
        if claims:
            facts.scheduled.setdefault(nodeid, set()).update(claims)


def worker_finished(facts: Collected, output: dict[str, Any]) -> None:
    """On the controller: what an xdist worker's collection handed back at its end (`workeroutput`)."""
    if output.get(REGISTRY_PROBLEMS) and not facts.workers_registry_problems:
        facts.workers_registry_problems = list(output[REGISTRY_PROBLEMS])
        facts.registry_check_failed = "; ".join(facts.workers_registry_problems)
    for cid, names in output.get(EXERCISED_OUTPUT, {}).items():
        facts.exercised.setdefault(cid, set()).update(names)
    facts.selected.update(output.get(SELECTED_OUTPUT, []))
    facts.statement_of.update({test: (pair[0], pair[1]) for test, pair in output.get(STATEMENT_OF_OUTPUT, {}).items()})
