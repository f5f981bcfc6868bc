"""The plugin's per-process state and the stash keys and report properties its roles share."""

from __future__ import annotations

import time
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


class State:
    """Per-process state of an active plugin."""

    def __init__(self, config: pytest.Config, settings: Settings, registry: Registry, store: ResultStore) -> None:
        self.config = config
        self.settings = settings
        self.registry = registry
        self.tiers = registry.tiers
        self.report_dir = settings.report_dir
        self.store = store
        self.running = RunningSession(store=store)  # what the library sees (pytest_claims.context)
        self.mutants: dict[str, Any] = {}
        self.export_formats: list[str] = []  # the claim table's formats written beside verdicts.json (export)
        self.stale_mutants: dict[str, str] = {}  # mutant -> why it no longer applies (checked in every run)
        self.run_mutants = settings.run_mutants
        self.mutant_active = ""
        self.previous: dict[str, Any] | None = None
        # without --previous-verdicts: the newest valid saved runs; the one of this run's selection is the previous
        self.previous_candidates: list[tuple[Path, dict[str, Any]]] = []
        self.registry_check_failed = ""  # collection stopped at the registry check: no verdicts to give
        self.workers_registry_problems: list[str] = []  # the same check on xdist workers, reported by the controller
        self.runs: dict[str, StatementRun] = {}
        self.mutant_results: dict[str, dict[str, dict[str, Any]]] = {}  # statement test -> mutant -> its result
        self.mutant_items: dict[str, str] = {}  # a mutant item this process collected -> its claim id (serial)
        self.mutant_items_reached: set[str] = set()  # the mutant items whose result has come in
        self.reference: dict[str, str] = {}
        self.exercised: dict[str, set[str]] = {}
        self.selected: set[str] = set()
        self.collection_errors: dict[str, str] = {}
        self.scheduled: dict[str, set[str]] = {}  # selected claim test -> its claim id(s) (controller)
        self.statement_of: dict[str, tuple[str, str]] = {}  # claim test -> (claim id, statement name)
        self.crashed: dict[str, str] = {}  # test -> the crash report's first line
        self.interrupted_by = ""  # SIGTERM, SIGINT, or why the session stopped early
        self.collected = False  # collection ended (every xdist worker's, under xdist): else a cut-off ran no test
        self.workers_collected: set[str] = set()  # the xdist workers that have reported their collection
        self.reports_kept = ""  # why this run writes no report pair and saves no run (it ran no test body)
        self.store_events: dict[str, list[dict[str, Any]]] = {}
        self.indivisible: dict[str, str] = {}  # work unit -> why it cannot be split (work_unit(indivisible=...))
        self.durations: dict[str, float] = {}  # test -> seconds over its phases (pytest_claims.cli.schedule reads them)
        self.started = time.time()
        self.payload: dict[str, Any] = {}
        # this run's numbered copy under <report_dir>/runs (pytest_claims.report.history)
        self.saved_run: Path | None = None
        self.report_id = ""  # names this run's report pair (report_files; the controller makes it, workers are told)
        self.report_notes: list[str] = []  # one line each: a report write that failed, a signal deferred
        self.reports_written = False


STATE = pytest.StashKey[State]()


def state_of(config: pytest.Config) -> State | None:
    return config.stash.get(STATE, None)


def declared_tier(item: pytest.Item) -> str:
    """Returns the scale marker the test `item` declares (scale-free tests also carry the other tiers' markers)."""
    return item.stash.get(DECLARED_TIER, "")


def is_worker(config: pytest.Config) -> bool:
    return hasattr(config, "workerinput")
