"""The verdict plugin: registry checks at collection, strict expected failures for refuted statements,
evidence on test reports, claim verdicts, reports/verdicts.json and the pytest-html verdict report.

Worker side (or the single process): collection checks and `pytest_runtest_makereport`, which puts
the statement outcome and its evidence on the report. Controller side: everything that aggregates
(`pytest_runtest_logreport`, `pytest_sessionfinish`, the html hooks), since under pytest-xdist only
reports travel.
"""
from __future__ import annotations

import datetime as dt
import json
import platform
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from pytest_claims import report as html_report
from pytest_claims.evidence import Evidence
from pytest_claims.registry import DEFAULT_TIERS as TIERS, ClaimRefuted, Registry, load_registry
from pytest_claims.verdicts import ERROR, FAILED, HELD, REFUTED, SKIPPED, StatementRun, summarise
from kernels.backend import cuda_available

EVIDENCE_KEY = pytest.StashKey[Evidence]()
RUN_PROPERTY = "statement_run"
REGISTRY: Registry = load_registry(Path(__file__).resolve().parents[1] / "claims" / "registry.toml")


def _import_project_modules() -> None:
    """Import every non-test module of the project up front.

    Hypothesis mixes constants found in the loaded local modules into its generation, so a module
    imported lazily by one test would change what a later, derandomized search draws, and with it
    the evidence, depending on test order and on -n. Loading them all first makes it fixed.
    """
    import importlib
    import pkgutil

    root = Path(__file__).resolve().parents[1]
    for package in ("kernels", "fixtures", "claims"):
        for info in pkgutil.walk_packages([str(root / package)], prefix=f"{package}."):
            if not info.name.rsplit(".", 1)[-1].startswith("test_"):
                importlib.import_module(info.name)


def pytest_configure(config: pytest.Config) -> None:
    _import_project_modules()
    config.addinivalue_line("markers", 'claim(id, statement="name"): the claim and registry statement this test asserts')
    config.stash[_STATE] = _State()
    if not _is_worker(config):
        config.pluginmanager.register(VerdictCollector(config), "claims-verdict-collector")


class _State:
    def __init__(self) -> None:
        self.runs: dict[str, StatementRun] = {}
        self.reference: dict[str, str] = {}
        self.exercised: dict[str, set[str]] = {}
        self.started = time.time()
        self.records: list[dict[str, Any]] = []
        self.payload: dict[str, Any] = {}


_STATE = pytest.StashKey[_State]()


def _is_worker(config: pytest.Config) -> bool:
    return hasattr(config, "workerinput")


# ------------------------------------------------------------------------------------------------
# Collection: one scale marker, a known claim and statement, expected failures from the registry


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    state = config.stash[_STATE]
    problems = []
    for item in items:
        tiers = [t for t in TIERS if item.get_closest_marker(t)]
        if len(tiers) != 1:
            problems.append(f"{item.nodeid}: needs exactly one scale marker of {TIERS}, has {tiers or 'none'}")
            continue
        if tiers[0] == "gpu" and not cuda_available():
            item.add_marker(pytest.mark.skip(reason="no CUDA device: torch.cuda.is_available() is False"))
        marker = item.get_closest_marker("claim")
        if marker is None:
            continue
        cid = marker.args[0] if marker.args else None
        name = marker.kwargs.get("statement")
        claim = REGISTRY.claims.get(cid)
        if claim is None:
            problems.append(f"{item.nodeid}: unknown claim {cid!r} (not in claims/registry.toml)")
            continue
        statement = claim.statements.get(name)
        if statement is None:
            problems.append(f"{item.nodeid}: claim {cid!r} has no statement {name!r} in claims/registry.toml")
            continue
        state.exercised.setdefault(cid, set()).add(name)
        if statement.expected == "refuted":
            item.add_marker(
                pytest.mark.xfail(
                    strict=True,
                    raises=ClaimRefuted,
                    reason=f"registered as refuted: {cid} / {name}",
                )
            )
    if problems:
        raise pytest.UsageError("claim registry check failed:\n  " + "\n  ".join(problems))
    if _is_worker(config):
        config.workeroutput["claims_exercised"] = {c: sorted(s) for c, s in state.exercised.items()}


def pytest_testnodedown(node: Any, error: Any) -> None:
    state = node.config.stash[_STATE]
    for cid, names in getattr(node, "workeroutput", {}).get("claims_exercised", {}).items():
        state.exercised.setdefault(cid, set()).update(names)


# ------------------------------------------------------------------------------------------------
# Worker side: evidence and the statement outcome travel on the report


def new_evidence(item: pytest.Item) -> Evidence:
    figure_dir = Path(item.config.rootpath) / "reports" / "figures"
    evidence = Evidence(figure_dir, item.nodeid)
    item.stash[EVIDENCE_KEY] = evidence
    return evidence


def _statement_outcome(report: pytest.TestReport, call: pytest.CallInfo[Any]) -> tuple[str, str] | None:
    """The definitive outcome of a phase, or None when the phase decides nothing."""
    if report.when == "setup":
        if report.skipped:
            return SKIPPED, str(report.longrepr[2]) if isinstance(report.longrepr, tuple) else "skipped"
        return (ERROR, "setup failed") if report.failed else None
    if report.when == "teardown":
        return (ERROR, "teardown failed") if report.failed else None
    if report.passed:
        return HELD, ""
    if report.skipped and hasattr(report, "wasxfail"):
        return REFUTED, ""  # xfail(raises=ClaimRefuted): only a recorded refutation gets here
    if report.skipped:
        return SKIPPED, str(report.longrepr[2]) if isinstance(report.longrepr, tuple) else "skipped"
    if call.excinfo is None:
        return HELD, "held although registered as refuted (strict XPASS)"
    if call.excinfo.errisinstance(ClaimRefuted):
        return REFUTED, str(call.excinfo.value)[:500]
    if call.excinfo.errisinstance(AssertionError):
        return FAILED, str(call.excinfo.value)[:500]
    return ERROR, f"{call.excinfo.typename}: {str(call.excinfo.value)[:400]}"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[Any]):
    outcome = yield
    report = outcome.get_result()
    decided = _statement_outcome(report, call)
    marker = item.get_closest_marker("claim")
    tier = next((t for t in TIERS if item.get_closest_marker(t)), "")
    evidence = item.stash.get(EVIDENCE_KEY, None)
    if decided is None:
        return
    if marker is None:
        report.user_properties.append(("reference_outcome", decided[0]))
        return
    run = StatementRun(
        test=item.nodeid,
        claim=marker.args[0],
        statement=marker.kwargs["statement"],
        tier=tier,
        outcome=decided[0],
        reason=decided[1],
        evidence=evidence.as_dict() if evidence else {},
        figures=[path for _, path, _ in evidence.figures] if evidence else [],
    )
    report.user_properties.append((RUN_PROPERTY, run.__dict__))
    if report.when == "call" and evidence is not None:
        report.extras = getattr(report, "extras", []) + html_report.evidence_extras(run, evidence)


# ------------------------------------------------------------------------------------------------
# Controller side (or the single process): aggregate, decide, write


class VerdictCollector:
    """Collects statement runs from reports and writes verdicts.json and the html summary."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.state = config.stash[_STATE]

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionstart(self, session: pytest.Session) -> None:
        # Figures of an earlier run must not be mistaken for this run's (workers write them later).
        shutil.rmtree(Path(self.config.rootpath) / "reports" / "figures", ignore_errors=True)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        state = self.state
        for name, value in report.user_properties:
            if name == RUN_PROPERTY:
                if report.nodeid not in state.runs or value["outcome"] == ERROR:
                    state.runs[report.nodeid] = StatementRun(**value)
            elif name == "reference_outcome":
                if report.nodeid not in state.reference or value == ERROR:
                    state.reference[report.nodeid] = value

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        config, state = self.config, self.state
        state.records = summarise(REGISTRY, list(state.runs.values()), state.exercised)
        options = config.stash.get(OPTIONS_KEY, None)
        state.payload = {
            "suite": "claim-verification suite",
            "tier": tier_of(config),
            "seed": getattr(options, "seed", None),
            "environment": environment(config),
            "papers": REGISTRY.papers,
            "claims": state.records,
            "reference_tests": [{"test": t, "outcome": o} for t, o in sorted(state.reference.items())],
            "timings": {
                "generated_at": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
                "session_seconds": round(time.time() - state.started, 3),
            },
        }
        out = Path(config.rootpath) / "reports"
        out.mkdir(parents=True, exist_ok=True)
        (out / "verdicts.json").write_text(json.dumps(state.payload, indent=1) + "\n", encoding="utf-8")
        if any(r["verdict"] == "broken" for r in state.records) and session.exitstatus == 0:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if not self.state.records:
            return
        terminalreporter.write_sep("=", "claim verdicts")
        for record in self.state.records:
            terminalreporter.write_line(
                f"{record['key']:>4}  {record['verdict']:<14} {record['id']}  ({record['reason']})"
            )
        terminalreporter.write_line("report: reports/verdict.html, reports/verdicts.json")

    # pytest-html hooks (they run where the report is written: here)

    @pytest.hookimpl(optionalhook=True)
    def pytest_html_report_title(self, report: Any) -> None:
        report.title = f"Claim verification suite: tier {tier_of(self.config)}, run {dt.date.today().isoformat()}"

    @pytest.hookimpl(optionalhook=True)
    def pytest_html_results_summary(self, prefix: list, summary: list, postfix: list, session: pytest.Session) -> None:
        prefix.append(html_report.summary_html(self.state.payload, REGISTRY))

    @pytest.hookimpl(optionalhook=True)
    def pytest_html_results_table_header(self, cells: list) -> None:
        cells.insert(2, '<th class="sortable" data-column-type="claim">Claim / statement</th>')
        cells.insert(3, '<th class="sortable" data-column-type="statement_outcome">Statement outcome</th>')

    @pytest.hookimpl(optionalhook=True)
    def pytest_html_results_table_row(self, report: pytest.TestReport, cells: list) -> None:
        props = dict(report.user_properties)
        run = props.get(RUN_PROPERTY)
        if run is None:
            cells.insert(2, '<td class="col-claim">reference test (no claim)</td>')
            cells.insert(3, f'<td class="col-statement_outcome">{props.get("reference_outcome", "")}</td>')
            return
        cells.insert(2, f'<td class="col-claim">{run["claim"]} / {run["statement"]}</td>')
        cells.insert(3, f'<td class="col-statement_outcome">{html_report.outcome_badge(run, REGISTRY)}</td>')


def _git_commit(root: Path) -> str:
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, timeout=10)
        return out.stdout.strip() or "unknown"
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def environment(config: pytest.Config) -> dict[str, Any]:
    import numpy
    import scipy

    try:
        import torch

        torch_version = torch.__version__
    except ImportError:
        torch_version = "not installed"
    options = config.stash.get(OPTIONS_KEY, None)
    return {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "numpy": numpy.__version__,
        "scipy": scipy.__version__,
        "torch": torch_version,
        "backend": getattr(options, "backend", "numpy"),
        "device": getattr(options, "device", "cpu"),
        "device_name": getattr(options, "device_name", "cpu"),
        "git_commit": _git_commit(Path(config.rootpath)),
    }


def tier_of(config: pytest.Config) -> str:
    return config.option.markexpr or "all"


# Imported last: the options module registers the stash key this plugin reads.
from fixtures.options import OPTIONS_KEY  # noqa: E402
