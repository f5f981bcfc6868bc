"""The plugin's per-process state and the stash keys and report properties its roles share."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from pytest_claims.context import RunningSession
from pytest_claims.model.evidence import Evidence
from pytest_claims.model.registry import Claim, Registry, Statement
from pytest_claims.store.result_store import ResultStore
from pytest_claims.model.verdicts import StatementRun
from pytest_claims.roles.options import Settings

# What a worker puts on a test's report (user_properties: plain types, so they survive pytest-xdist).
RUN_PROPERTY = "claims_statement_run"
REFERENCE_PROPERTY = "claims_reference_outcome"
STORE_PROPERTY = "claims_store_events"
MUTANT_PROPERTY = "claims_mutant_result"  # a mutant item's result, with the statement test it belongs to
INDIVISIBLE_PROPERTY = "claims_indivisible"  # a work unit's reason it cannot be split further
# What a worker hands the controller when it finishes (workeroutput).
REGISTRY_PROBLEMS = "claims_registry_problems"
RUN_ID_INPUT = "claims_report_id"  # the controller's report id, handed to each worker (workerinput)
EXERCISED_OUTPUT = "claims_exercised"
SELECTED_OUTPUT = "claims_selected"
STATEMENT_OF_OUTPUT = "claims_statement_of"

DECLARED_TIER = pytest.StashKey[str]()
STATEMENT = pytest.StashKey[tuple[Claim, Statement]]()
EVIDENCE = pytest.StashKey[Evidence]()


@dataclass
class Inputs:
    """What the run was configured with beyond its settings (written by `plugin` in pytest_configure only)."""

    export_formats: list[str] = field(default_factory=list)  # the claim table's formats beside verdicts.json
    previous: dict[str, Any] | None = None  # --claims-previous-verdicts, checked
    # without --claims-previous-verdicts: the newest valid saved runs; the one of this run's selection is the previous
    previous_candidates: list[tuple[Path, dict[str, Any]]] = field(default_factory=list)
    report_id: str = ""  # names this run's report pair (the controller makes it, workers are told)


@dataclass
class Collected:
    """What collection found (written by `roles.collection` only; under xdist the controller's `distributed` hands
    the workers' outputs to its functions)."""

    selected: set[str] = field(default_factory=set)
    exercised: dict[str, set[str]] = field(default_factory=dict)
    scheduled: dict[str, set[str]] = field(default_factory=dict)  # selected claim test -> its claim id(s) (controller)
    statement_of: dict[str, tuple[str, str]] = field(default_factory=dict)  # claim test -> (claim id, statement name)
    collected: bool = False  # collection ended (every xdist worker's, under xdist): else a cut-off ran no test
    workers_collected: set[str] = field(default_factory=set)  # the xdist workers that have reported their collection
    registry_check_failed: str = ""  # collection stopped at the registry check: no verdicts to give
    workers_registry_problems: list[str] = field(default_factory=list)  # the same check on xdist workers


@dataclass
class Results:
    """What the tests' reports brought (written by `roles.session` only; the payload decided from them is published
    through the hook `pytest_claims_payload`, not kept here)."""

    runs: dict[str, StatementRun] = field(default_factory=dict)
    reference: dict[str, str] = field(default_factory=dict)
    store_events: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    indivisible: dict[str, str] = field(default_factory=dict)  # work unit -> why it cannot be split
    mutant_results: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)  # test -> mutant -> result
    mutant_items_reached: set[str] = field(default_factory=set)  # the mutant items whose result has come in
    collection_errors: dict[str, str] = field(default_factory=dict)
    crashed: dict[str, str] = field(default_factory=dict)  # test -> the crash report's first line
    durations: dict[str, float] = field(default_factory=dict)  # test -> seconds over its phases (cli.schedule)
    interrupted_by: str = ""  # SIGTERM, SIGINT, or why the session stopped early
    reports_kept: str = ""  # why this run writes no report pair and saves no run (it ran no test body)


@dataclass
class Mutants:
    """The mutant catalogue and the mutant running now (written by `roles.mutants` only)."""

    catalogue: dict[str, Any] = field(default_factory=dict)
    stale: dict[str, str] = field(default_factory=dict)  # mutant -> why it no longer applies (checked in every run)
    active: str = ""
    items: dict[str, str] = field(default_factory=dict)  # a mutant item this process collected -> its claim id


@dataclass
class Reports:
    """The report pair's bookkeeping (written by `report.files` only)."""

    saved_run: Path | None = None  # this run's numbered copy under <report_dir>/runs (report.history)
    notes: list[str] = field(default_factory=list)  # one line each: a report write that failed, a signal deferred
    written: bool = False


# Each part of State and the one module that writes it (tests/test_state.py checks this by reading the source).
OWNERS = {
    "inputs": "plugin.py",
    "collection": "roles/collection.py",
    "results": "roles/session.py",
    "mutants": "roles/mutants.py",
    "reports": "report/files.py",
}


class State:
    """Per-process state of an active plugin: set once here, then only its owned parts change, each by its owner."""

    def __init__(self, config: pytest.Config, settings: Settings, registry: Registry, store: ResultStore) -> None:
        self.config = config
        self.settings = settings
        self.registry = registry
        self.report_dir = settings.report_dir
        self.store = store
        self.running = RunningSession(store=store)  # what the library sees (pytest_claims.context)
        self.started = time.time()
        self.inputs = Inputs()
        self.collection = Collected()
        self.results = Results()
        self.mutants = Mutants()
        self.reports = Reports()


STATE = pytest.StashKey[State]()


def state_of(config: pytest.Config) -> State | None:
    return config.stash.get(STATE, None)


def declared_tier(item: pytest.Item) -> str:
    """Returns the scale marker the test `item` declares (scale-free tests also carry the other tiers' markers)."""
    return item.stash.get(DECLARED_TIER, "")


def tier_of(config: pytest.Config) -> str:
    """The run's tier as the report names it: its `-m` expression, or "all"."""
    return config.option.markexpr or "all"


def is_worker(config: pytest.Config) -> bool:
    return hasattr(config, "workerinput")
