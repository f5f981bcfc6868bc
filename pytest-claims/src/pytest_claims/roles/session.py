"""The session on the controller (or the single process): gathers what the tests report and decides the claims into
the payload of verdicts.json (registered only there, as pytest's junitxml registers LogXML; report_files writes it)."""

from __future__ import annotations

import datetime as dt
import platform
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from pytest_claims.model import verdicts_json
from pytest_claims.roles.collection import registry_check_message
from pytest_claims.model.key_numbers import unknown_key_numbers
from pytest_claims.outcomes import ANY_TIER, BROKEN, CRASHED, ERROR
from pytest_claims.model.registry import Registry, false_alarm_budget
from pytest_claims.report.history import same_selection, selected_claims
from pytest_claims.roles.seeding import master_seed
from pytest_claims.roles.state import (
    INDIVISIBLE_PROPERTY,
    MUTANT_PROPERTY,
    REFERENCE_PROPERTY,
    RUN_PROPERTY,
    STORE_PROPERTY,
    Results,
    State,
    tier_of,
)
from pytest_claims.model.verdicts import ClaimInputs, MutantResult, StatementRun, changes


def git_commit(root: Path) -> str:
    try:
        head = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, timeout=10
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=root,
            capture_output=True,
            text=True,
            timeout=10,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return (head or "unknown") + ("+uncommitted" if dirty else "")


def false_alarm_table(registry: Registry, tier: str, budget: Any) -> dict[str, Any]:
    """The registered false-alarm probabilities of the tiers this run selected (all tiers when the
    marker expression names none), with their sums."""
    table = false_alarm_budget(registry)
    chosen = [t for t in registry.tiers if t in tier.split()] or list(registry.tiers)
    return {"budget": float(budget), "tiers": {t: table[t] for t in chosen}}


def first_error_line(longrepr: Any) -> str:
    """The `E ` line pytest puts last in a failure's text (or its last line)."""
    lines = [line.strip() for line in str(longrepr).splitlines() if line.strip()]
    return next(
        (line[1:].strip() for line in reversed(lines) if line.startswith("E ")),
        lines[-1] if lines else "collection failed",
    )


def crashed(results: Results, test: str, line: str) -> None:
    """A worker died while running `test` (`line`: its crash report's first line); its statement is `crashed`."""
    results.crashed[test] = line


def interrupted(results: Results, by: str, *, keep_first: bool = True) -> None:
    """The session is ending early, `by` a signal or a stop; `keep_first`: a reason already given stays."""
    if not (keep_first and results.interrupted_by):
        results.interrupted_by = by


class Controller:
    """Collects statement runs from the reports and writes verdicts.json."""

    def __init__(self, state: State) -> None:
        self.state = state
        self.config = state.config

    def pytest_keyboard_interrupt(self, excinfo: Any) -> None:
        interrupted(self.state.results, "SIGINT (KeyboardInterrupt)")

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        """A module that fails to collect breaks the claims whose tests it holds."""
        if report.failed:
            self.state.results.collection_errors[report.nodeid or "<session>"] = first_error_line(report.longrepr)[:300]

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        state = self.state
        state.results.durations[report.nodeid] = state.results.durations.get(report.nodeid, 0.0) + float(
            getattr(report, "duration", 0.0) or 0.0
        )
        value: Any
        for name, value in report.user_properties:
            if name == RUN_PROPERTY:
                if report.nodeid not in state.results.runs or value["outcome"] == ERROR:
                    state.results.runs[report.nodeid] = StatementRun.from_dict(value)
            elif name == REFERENCE_PROPERTY:
                if report.nodeid not in state.results.reference or value == ERROR:
                    state.results.reference[report.nodeid] = value
            elif name == STORE_PROPERTY:
                state.results.store_events.setdefault(report.nodeid, []).extend(value)
            elif name == INDIVISIBLE_PROPERTY:
                state.results.indivisible[report.nodeid] = value
            elif name == MUTANT_PROPERTY:
                state.results.mutant_results.setdefault(value["test"], {})[value["mutant"]] = value
                state.results.mutant_items_reached.add(report.nodeid)

    def environment(self) -> dict[str, Any]:
        env: dict[str, Any] = {
            "python": platform.python_version(),
            "platform": platform.platform(),
            "pytest": pytest.__version__,
            "git_commit": git_commit(Path(self.config.rootpath)),
        }
        for part in self.config.hook.pytest_claims_environment(config=self.config):
            env.update(part or {})
        env["master_seed"] = master_seed(self.config)  # the plugin's --seed / claims_seed is the run's seed
        return env

    def claim_inputs(self) -> dict[str, ClaimInputs]:
        state = self.state
        root = Path(self.config.rootpath)
        inputs = {
            cid: ClaimInputs(
                exercised=set(state.collection.exercised.get(cid, set())),
                selected=cid in state.collection.selected,
                has_tests=bool(claim.tests) and (root / claim.tests).is_file(),
            )
            for cid, claim in state.registry.claims.items()
        }
        for test, line in sorted(state.results.crashed.items()):
            if test in state.results.runs:
                continue
            if test in state.collection.statement_of:
                cid, name = state.collection.statement_of[test]
                claim = state.registry.claims[cid]
                tier = ANY_TIER if claim.statements[name].scale_free else tier_of(self.config)
                state.results.runs[test] = StatementRun(
                    test=test, claim=cid, statement=name, tier=tier, outcome=CRASHED, reason=line
                )
            else:
                for cid in state.collection.scheduled.get(test, ()):
                    inputs[cid].problems.append(f"the process running {test} crashed ({line})")
        for run in state.results.runs.values():
            self.attach_mutants(run)
            inputs[run.claim].runs.append(run)
        if (
            state.results.interrupted_by and not state.collection.collected
        ):  # cut off before its tests were known: none was reached
            for cid, claim in state.registry.claims.items():
                if inputs[cid].has_tests:
                    inputs[cid].not_reached.add(claim.tests)
                    inputs[cid].interrupted_by = f"{state.results.interrupted_by}, before collection ended"
        if state.results.interrupted_by:  # a test, or a mutant item, with no end: not reached (never also counted)
            scheduled = {test: set(cids) for test, cids in state.collection.scheduled.items()}
            for test, cid in state.mutants.items.items():
                scheduled.setdefault(test, set()).add(cid)
            ended = {
                *state.results.runs,
                *state.results.reference,
                *state.results.crashed,
                *state.results.mutant_items_reached,
            }
            for test, cids in scheduled.items():
                if test not in ended:
                    for cid in cids:
                        inputs[cid].not_reached.add(test)
                        inputs[cid].interrupted_by = state.results.interrupted_by
        for cid, claim in state.registry.claims.items():  # a stale mutant cannot show its statement's power
            if cid not in state.collection.selected:
                continue
            for statement in claim.statements.values():
                for name in statement.mutants:
                    if name in state.mutants.stale:
                        inputs[cid].problems.append(
                            f"mutant {name!r} of {statement.name} no longer applies ({state.mutants.stale[name]}); "
                            "remedy: update its snippet in the catalogue to the code as it now reads"
                        )
        for cid, claim in state.registry.claims.items():  # a key number that names nothing recorded is registry drift
            inputs[cid].problems.extend(unknown_key_numbers(claim, inputs[cid].runs))
        for module, message in sorted(state.results.collection_errors.items()):
            for claim in state.registry.claims_of_module(module):
                inputs[claim.id].problems.append(f"collection error in {module}: {message}")
        return inputs

    def attach_mutants(self, run: StatementRun) -> None:
        """The results of the statement test's mutant items (run wherever xdist placed them), in the registry's
        order of its mutants."""
        found = self.state.results.mutant_results.get(run.test, {})
        order = self.state.registry.claims[run.claim].statements[run.statement].mutants
        fields = MutantResult.__dataclass_fields__
        run.mutants = [{k: v for k, v in found[m].items() if k in fields} for m in order if m in found]

    def build_payload(self) -> dict[str, Any]:
        state, config = self.state, self.config
        environment = self.environment()
        now = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
        payload = verdicts_json.build(
            state.registry,
            self.claim_inputs(),
            suite=state.settings.title,
            tier=tier_of(config),
            seed=environment["master_seed"],
            mutants_run=state.settings.run_mutants,
            environment=environment,
            false_alarm=false_alarm_table(state.registry, tier_of(config), state.settings.false_alarm_budget),
            reference=state.results.reference,
            collection_errors=[{"module": m, "message": e} for m, e in sorted(state.results.collection_errors.items())],
            runs=[
                {
                    "run": state.inputs.report_id or None,  # tells apart two runs of one second (merge)
                    "tier": tier_of(config),
                    "host": platform.node(),
                    "device": environment.get("device_name", environment.get("device", "cpu")),
                    "commit": environment["git_commit"],
                    "date": now,
                    "store": state.store.mode,
                    "source": "this run",
                    "tests": sorted(state.results.runs),
                    "interrupted": state.results.interrupted_by,
                }
            ],
            timings={
                "generated_at": now,
                "session_seconds": round(time.time() - state.started, 3),
                "store": {test: events for test, events in sorted(state.results.store_events.items())},
                "tests": {test: round(seconds, 3) for test, seconds in sorted(state.results.durations.items())},
                "indivisible": dict(sorted(state.results.indivisible.items())),
            },
        )
        previous = state.inputs.previous  # --claims-previous-verdicts
        if previous is None:
            # the newest saved run of this run's kind (mutants or not) that selected the claims this one did, else
            # the newest of its kind (its changes then name the claims only one of the two selected)
            candidates = state.inputs.previous_candidates
            chosen = same_selection(candidates, selected_claims(payload), state.settings.run_mutants)
            previous = chosen[1] if chosen is not None else None
        if previous is not None:  # the one place a run's changes are computed
            payload["changes"] = changes(previous, payload)
        return payload

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        state = self.state
        # a registry check failed, so no test ran: verdicts of "not run" would mislead (and overwrite the last)
        if state.collection.registry_check_failed:
            if state.collection.workers_registry_problems:  # serially, pytest has printed the UsageError already
                sys.stderr.write(f"ERROR: {registry_check_message(state.collection.workers_registry_problems)}\n")
                session.exitstatus = pytest.ExitCode.USAGE_ERROR
            return
        if not state.results.interrupted_by and (
            exitstatus == pytest.ExitCode.INTERRUPTED or session.shouldstop or session.shouldfail
        ):
            why = session.shouldstop or session.shouldfail
            state.results.interrupted_by = f"stopped early: {why}" if isinstance(why, str) and why else "interrupted"
        payload = self.build_payload()
        payload["report_id"] = state.inputs.report_id  # the pair written by report_files.ReportWriter carries it
        if self.config.option.collectonly:  # IDE discovery: no test ran, so there is no verdict to show or keep
            state.results.reports_kept = "--collect-only ran no test"
            return
        if state.results.interrupted_by and not state.collection.collected:
            state.results.reports_kept = f"the run was cut off ({state.results.interrupted_by}) before collection ended"
        # published once: terminal, strict, export, the HTML hooks and the report files react to it
        self.config.hook.pytest_claims_payload(config=self.config, payload=payload)
        if any(r["verdict"] == BROKEN for r in payload["claims"]) and session.exitstatus == 0:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED
