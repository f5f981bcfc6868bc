"""The worker side: the evidence fixture, the running test for the helpers, and each test's outcome on its report.

Runs wherever tests run (the single process, or each xdist worker). A statement test's definitive outcome,
evidence and mutant results travel on its report as a StatementRun (plain types, so they survive
pytest-xdist); a test without a claim marker travels as a reference outcome.
"""

from __future__ import annotations

import contextlib
import shlex
from dataclasses import asdict
from pathlib import Path
from typing import Any, Iterator

import pytest

from pytest_claims.roles import options
from pytest_claims.statements import ledger
from pytest_claims.context import RunningTest
from pytest_claims.model.evidence import Evidence
from pytest_claims.roles.seeding import master_seed
from pytest_claims.outcomes import (
    ANY_TIER,
    ERROR,
    FAILED,
    HELD,
    INCONCLUSIVE,
    REFUTED,
    SKIPPED,
    ClaimRefuted,
    Expected,
    StatementInconclusive,
)
from pytest_claims.roles.state import (
    EVIDENCE,
    INDIVISIBLE_PROPERTY,
    REFERENCE_PROPERTY,
    RUN_PROPERTY,
    STATEMENT,
    STORE_PROPERTY,
    State,
    declared_tier,
    state_of,
)
from pytest_claims.model.verdicts import StatementRun


def new_evidence(item: pytest.Item) -> Evidence:
    state = state_of(item.config)
    report_dir = state.report_dir if state is not None else Path(item.config.rootpath) / "reports"
    evidence = Evidence(report_dir, item.nodeid, draw_figures=not (state and state.mutants.active))
    item.stash[EVIDENCE] = evidence
    return evidence


@pytest.fixture
def evidence(request: pytest.FixtureRequest) -> Evidence:
    """Records a statement test's numbers and figures onto its report."""
    return new_evidence(request.node)


def false_alarm_of(item: pytest.Item) -> float:
    """A statement test's registered false-alarm probability at its declared tier."""
    if STATEMENT not in item.stash:
        raise RuntimeError("registered_false_alarm() is for a statement test while it runs")
    claim, statement = item.stash[STATEMENT]
    tier = declared_tier(item)
    if tier not in statement.false_alarm:
        pytest.fail(  # one line, no traceback: the fix is in the registry, not in the test
            f"registry: {claim.id}:{statement.name} decides by a confidence level but states no false_alarm "
            f"for tier {tier!r} (add false_alarm, with its false_alarm_basis, to the statement's record: the "
            "probability its tests end against the registry although the registry is right, "
            + (
                "here that it ends refuted although it holds"
                if statement.expected == Expected.HOLDS
                else "here that it ends not refuted although it is false as registered"
            )
            + "; see docs/explanation/false-alarms.md)",
            pytrace=False,
        )
    return statement.false_alarm[tier]


def reproduce_command(item: pytest.Item) -> str:
    """The command that reruns this test as it ran: its node id, the master seed, the tier expression (-m), the
    mutant it ran under, and what the project's pytest_claims_reproduce_args adds (its scale options)."""
    config = item.config
    project = [str(a) for a in config.hook.pytest_claims_reproduce_args(config=config) or []]
    args = ["-p", "no:randomly"]
    if not set(options.registered(config, "--claims-seed")) & {a.partition("=")[0] for a in project}:
        args += ["--claims-seed", str(master_seed(config))]
    if getattr(config.option, "markexpr", ""):
        args += ["-m", config.option.markexpr]
    state = state_of(config)
    if state is not None and state.mutants.active:
        args += ["--claims-mutants", f"--claims-mutant={state.mutants.active}"]
    return shlex.join(["pytest", item.nodeid, *args, *project])


def family_record(item: pytest.Item) -> dict[str, Any]:
    """The registered family of the item's statement as a dict ({} where it is decided alone)."""
    if STATEMENT not in item.stash:
        return {}
    claim, statement = item.stash[STATEMENT]
    family = claim.family_of(statement.name)
    return asdict(family) if family is not None else {}


@contextlib.contextmanager
def running(state: State, item: pytest.Item) -> Iterator[None]:
    """Inside the block the helpers (pytest_claims.context) see `item` as the running test and the store records
    its events under it; both are reset after, even when the test raises. The one place that sets them: around
    each test's protocol (below) and around a statement test rerun under a mutant (pytest_claims.roles.mutants)."""
    test = RunningTest(
        item=item,
        evidence=lambda: item.stash.get(EVIDENCE, None) or new_evidence(item),
        false_alarm=lambda: false_alarm_of(item),
        reproduce=lambda: reproduce_command(item),
        decision=lambda: item.stash[STATEMENT][1].decision if STATEMENT in item.stash else {},
        continuing=lambda: ledger.continuing(item.config),
        run_id=lambda: state.inputs.report_id,
        statement=lambda: item.stash[STATEMENT][1].name if STATEMENT in item.stash else "",
        family=lambda: family_record(item),
    )
    with state.running.with_test(test), state.store.running_test(item.nodeid):
        yield


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Any:
    state = state_of(item.config)
    if state is None:
        return (yield)
    with running(state, item):
        return (yield)


def statement_outcome(report: pytest.TestReport, call: pytest.CallInfo[Any]) -> tuple[str, str] | None:
    """The definitive outcome of a phase, or None when the phase decides nothing."""
    if report.when == "setup":
        if report.skipped:
            return SKIPPED, str(report.longrepr[2]) if isinstance(report.longrepr, tuple) else "skipped"
        return (ERROR, "setup failed") if report.failed else None
    if report.when == "teardown":
        return (ERROR, "teardown failed") if report.failed else None
    if report.passed and not hasattr(report, "wasxfail"):
        return HELD, ""
    if getattr(report, "claims_inconclusive", ""):
        return INCONCLUSIVE, report.claims_inconclusive
    if report.skipped and hasattr(report, "wasxfail"):
        # xfail(raises=ClaimRefuted): only a recorded refutation gets here; keep its message
        return REFUTED, str(call.excinfo.value)[:800] if call.excinfo is not None else ""
    if report.skipped:
        return SKIPPED, str(report.longrepr[2]) if isinstance(report.longrepr, tuple) else "skipped"
    if call.excinfo is None:
        return HELD, "held although registered as refuted (strict XPASS)"
    if call.excinfo.errisinstance(ClaimRefuted):
        return REFUTED, str(call.excinfo.value)[:800]
    if call.excinfo.errisinstance(AssertionError):
        return FAILED, str(call.excinfo.value)[:800]
    return ERROR, f"{call.excinfo.typename}: {str(call.excinfo.value)[:600]}"


def _as_inconclusive(report: pytest.TestReport, call: pytest.CallInfo[Any]) -> None:
    """A test that raised StatementInconclusive is neither a failure nor a pass: pytest shows it as a
    skip (with its reason), the plugin as the statement outcome `inconclusive` (also for a strict xfail,
    whose raises= it does not match)."""
    if report.when != "call" or call.excinfo is None or not call.excinfo.errisinstance(StatementInconclusive):
        return
    message = str(call.excinfo.value)[:800]
    report.outcome = "skipped"
    report.longrepr = (str(item_path(report)), 0, f"inconclusive: {message}")
    if hasattr(report, "wasxfail"):
        del report.wasxfail
    setattr(report, "claims_inconclusive", message)  # an attribute: xdist serialises the report's __dict__


def pytest_report_teststatus(report: pytest.TestReport, config: pytest.Config) -> tuple[str, str, str] | None:
    if report.when == "call" and getattr(report, "claims_inconclusive", None):
        return INCONCLUSIVE, "i", "INCONCLUSIVE"
    return None


def raised_at(item: pytest.Item, call: pytest.CallInfo[Any]) -> str:
    """Where in the test's own module the exception passed ("test_x.py:42"), or "" (the line of the guard that
    caught a mutant, or of the call that raised)."""
    if call.excinfo is None:
        return ""
    for entry in reversed(call.excinfo.traceback):
        if Path(str(entry.path)) == Path(str(item.path)):
            return f"{Path(str(entry.path)).name}:{entry.lineno + 1}"
    return ""


def item_path(report: pytest.TestReport) -> str:
    return report.location[0] if report.location else report.nodeid.split("::", 1)[0]


@pytest.hookimpl(hookwrapper=True, tryfirst=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[Any]):
    outcome = yield
    report = outcome.get_result()
    _as_inconclusive(report, call)
    state = state_of(item.config)
    if state is None:
        return
    if state.mutants.active:  # what the mutant runner classifies by: the exception's type, not its message
        report.claims_assertion = call.excinfo is not None and call.excinfo.errisinstance(AssertionError)
        report.claims_refuted = call.excinfo is not None and call.excinfo.errisinstance(ClaimRefuted)
        report.claims_raised_at = raised_at(item, call)
        return
    if report.when == "teardown":
        events = state.store.take_events(item.nodeid)
        if events:
            report.user_properties.append((STORE_PROPERTY, events))
        unit = item.get_closest_marker("work_unit")
        if unit is not None and unit.kwargs.get("indivisible"):
            report.user_properties.append((INDIVISIBLE_PROPERTY, str(unit.kwargs["indivisible"])))
    decided = statement_outcome(report, call)
    if decided is None:
        return
    info = item.stash.get(STATEMENT, None)
    if info is None:
        report.user_properties.append((REFERENCE_PROPERTY, str(decided[0])))  # plain: execnet carries it
        return
    claim, statement = info
    evidence = item.stash.get(EVIDENCE, None)
    run = StatementRun(
        test=item.nodeid,
        claim=claim.id,
        statement=statement.name,
        tier=ANY_TIER if statement.scale_free else declared_tier(item),
        outcome=decided[0],
        reason=decided[1],
        evidence=evidence.as_dict() if evidence else {},
        figures=list(evidence.figures) if evidence else [],
    )
    report.user_properties.append((RUN_PROPERTY, asdict(run)))  # data only: the controller renders it (html_hooks)
