"""The pytest-claims plugin (entry point `pytest11: claims`).

Inactive unless the ini key `claims_registry` names a registry. Then:

- collection: every test carries exactly one scale marker (ini `claims_tiers`); a statement test's
  `claim(id, statement=...)` marker must name a registered claim and statement; statements registered
  as refuted become strict expected failures that only `ClaimRefuted` satisfies; scale-free statements
  are selected in every tier;
- worker side: the statement outcome, its evidence, its mutant results and the result store's events
  travel on the test reports (plain types, so they survive pytest-xdist);
- controller side: claim verdicts, `verdicts.json` and the pytest-html report (ini `claims_report_dir`),
  what changed since a previous run (`--previous-verdicts`), a terminal summary.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import platform
import signal
import subprocess
import sys
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

import pytest

from pytest_claims import report as html_report
from pytest_claims.decide import StatementInconclusive
from pytest_claims.evidence import Evidence
from pytest_claims.mutants import MutantError, applied, catalogue, stale_mutants
from pytest_claims.registry import (
    DEFAULT_TIERS,
    Claim,
    ClaimRefuted,
    Registry,
    RegistryError,
    Statement,
    check_against_project,
    false_alarm_budget,
    load_registry,
)
from pytest_claims.store import ResultStore, StoreUnusable, set_current_store
from pytest_claims.verdicts import (
    CRASHED,
    ERROR,
    FAILED,
    HELD,
    INCONCLUSIVE,
    REFUTED,
    SCHEMA_VERSION,
    SKIPPED,
    ClaimInputs,
    MutantResult,
    StatementRun,
    changes,
    summarise,
)

RUN_PROPERTY = "claims_statement_run"
REFERENCE_PROPERTY = "claims_reference_outcome"
STORE_PROPERTY = "claims_store_events"
INDIVISIBLE_PROPERTY = "claims_indivisible"  # a work unit's reason it cannot be split further
DECLARED_TIER = pytest.StashKey[str]()
STATEMENT = pytest.StashKey[tuple[Claim, Statement]]()
EVIDENCE = pytest.StashKey[Evidence]()
MUTANT_RESULTS = pytest.StashKey[list[MutantResult]]()


class State:
    """Per-process state of an active plugin."""

    def __init__(self, config: pytest.Config, registry: Registry, store: ResultStore) -> None:
        self.config = config
        self.registry = registry
        self.tiers = registry.tiers
        self.report_dir = Path(config.rootpath) / config.getini("claims_report_dir")
        self.store = store
        self.mutants: dict[str, Any] = {}
        self.run_mutants = bool(config.getoption("claims_mutants"))
        self.mutant_active = ""
        self.previous: dict[str, Any] | None = None
        self.registry_check_failed = ""  # collection stopped at the registry check: no verdicts to give
        self.workers_registry_problems: list[str] = []  # the same check on xdist workers, reported by the controller
        self.runs: dict[str, StatementRun] = {}
        self.reference: dict[str, str] = {}
        self.exercised: dict[str, set[str]] = {}
        self.selected: set[str] = set()
        self.collection_errors: dict[str, str] = {}
        self.scheduled: dict[str, set[str]] = {}  # selected claim test -> its claim id(s) (controller)
        self.statement_of: dict[str, tuple[str, str]] = {}  # claim test -> (claim id, statement name)
        self.crashed: dict[str, str] = {}  # test -> the crash report's first line
        self.interrupted_by = ""  # SIGTERM, SIGINT, or why the session stopped early
        self.store_events: dict[str, list[dict[str, Any]]] = {}
        self.indivisible: dict[str, str] = {}  # work unit -> why it cannot be split (work_unit(indivisible=...))
        self.durations: dict[str, float] = {}  # test -> seconds over its phases (pytest_claims.schedule reads them)
        self.current_item: pytest.Item | None = None
        self.started = time.time()
        self.payload: dict[str, Any] = {}


STATE = pytest.StashKey[State]()


def state_of(config: pytest.Config) -> State | None:
    return config.stash.get(STATE, None)


def declared_tier(item: pytest.Item) -> str:
    """The scale marker a test declares (scale-free tests also carry the other tiers' markers)."""
    return item.stash.get(DECLARED_TIER, "")


def _is_worker(config: pytest.Config) -> bool:
    return hasattr(config, "workerinput")


# ------------------------------------------------------------------------------------------------
# Options, configuration


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    from pytest_claims import hookspecs

    pluginmanager.add_hookspecs(hookspecs)


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addini(
        "claims_registry",
        "claim registry TOML file(s), relative to the rootdir (the plugin is inactive without one)",
        type="args",
        default=[],
    )
    parser.addini(
        "claims_tiers", "scale markers, one per test, smallest first", type="args", default=list(DEFAULT_TIERS)
    )
    parser.addini(
        "claims_min_mutants",
        "least number of mutants a holds statement lists (or it says why in mutants_waived)",
        default="0",
    )
    parser.addini(
        "claims_report_dir", "directory of verdicts.json and the figures, relative to the rootdir", default="reports"
    )
    parser.addini(
        "claims_mutants", "importable module with the MUTANTS list (pytest_claims.mutants.Mutant)", default=""
    )
    parser.addini("claims_store_dir", "result store directory (default: the pytest cache's d/claims-store)", default="")
    parser.addini("claims_title", "title of the verdict report", default="Claim verification suite")
    parser.addini(
        "claims_false_alarm_budget", "the most a tier's registered false-alarm probabilities may sum to", default="1e-3"
    )
    group = parser.getgroup("claims", "claim verification (pytest-claims)")
    group.addoption(
        "--store-dir",
        dest="claims_store_dir",
        default=None,
        help="result store directory (overrides the ini key claims_store_dir)",
    )
    group.addoption(
        "--no-store",
        dest="claims_no_store",
        action="store_true",
        help="compute every stored result fresh and write nothing to the store",
    )
    group.addoption(
        "--previous-verdicts",
        dest="claims_previous",
        default=None,
        metavar="PATH",
        help="a previous verdicts.json: report what changed since",
    )
    group.addoption(
        "--mutants",
        dest="claims_mutants",
        action="store_true",
        help="rerun each statement's tests under each mutant it lists; a surviving mutant breaks the claim",
    )


def _store_for(config: pytest.Config) -> ResultStore:
    if config.getoption("claims_no_store"):
        return ResultStore(None)
    chosen = config.getoption("claims_store_dir") or config.getini("claims_store_dir")
    if chosen:
        return ResultStore((Path(config.invocation_params.dir) / chosen).resolve())
    cache = getattr(config, "cache", None)
    if cache is not None:
        return ResultStore(Path(cache.mkdir("claims-store")))
    return ResultStore(Path(config.rootpath) / ".pytest_cache" / "d" / "claims-store")


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config: pytest.Config) -> int | None:
    """A bad --html path in one line, before pytest-html's own configure (which would fail with a traceback on a bad
    path)."""
    html = getattr(config.option, "htmlpath", None)
    if html and config.getini("claims_registry") and not _is_worker(config):
        try:
            _check_writable(
                Path(html).expanduser().resolve().parent, f"the directory of the HTML report (--html {html})"
            )
        except pytest.UsageError as error:
            sys.stderr.write(f"ERROR: {error}\n")
            return pytest.ExitCode.USAGE_ERROR
    return None


def pytest_configure(config: pytest.Config) -> None:
    paths = config.getini("claims_registry")
    if not paths:
        asked = [
            o
            for o, dest in (
                ("--previous-verdicts", "claims_previous"),
                ("--store-dir", "claims_store_dir"),
                ("--mutants", "claims_mutants"),
            )
            if config.getoption(dest)
        ]
        if asked:  # pytest took an option's value for a test path and found no ini file beside it
            raise pytest.UsageError(
                f"{', '.join(asked)} given but no claims_registry in an ini file (rootdir {config.rootpath}, "
                f"inifile {config.inipath}); write path options as --option=PATH, "
                "so pytest does not take PATH for the rootdir"
            )
        return
    tiers = tuple(config.getini("claims_tiers"))
    files = [Path(config.rootpath) / p for p in paths]
    try:
        registry = load_registry(files, tiers)
        check_against_project(registry, Path(config.rootpath), _min_mutants(config))
    except RegistryError as error:
        raise pytest.UsageError(f"{error} [claims_registry: {', '.join(str(f) for f in files)}]") from None
    _check_false_alarm_budget(config, registry)
    for tier in tiers:
        config.addinivalue_line("markers", f"{tier}: a scale tier of the claim suite")
    config.addinivalue_line(
        "markers", 'claim(id, statement="name"): the claim and registry statement this test asserts'
    )
    config.addinivalue_line(
        "markers",
        "work_unit(indivisible=None): an expensive computation that statement tests read through the store; "
        "placed so that each xdist worker starts with one; indivisible: why it cannot be split further",
    )
    config.pluginmanager.register(WorkUnitsFirst(), "claims-work-units")
    try:
        store = _store_for(config)
    except StoreUnusable as error:
        raise pytest.UsageError(str(error)) from None
    state = State(config, registry, store)
    _load_mutants(config, state)
    previous = config.getoption("claims_previous")
    if previous:
        try:
            state.previous = json.loads(Path(previous).read_text(encoding="utf-8"))
        except (OSError, ValueError) as error:
            raise pytest.UsageError(f"--previous-verdicts {previous}: cannot read a verdicts.json ({error})") from None
        if not isinstance(state.previous, dict) or not isinstance(state.previous.get("claims"), list):
            raise pytest.UsageError(f"--previous-verdicts {previous}: not a verdicts.json (no list of claims)")
    if not _is_worker(config):
        _check_writable(state.report_dir, "the report directory (ini key claims_report_dir)")
    config.stash[STATE] = state
    _ACTIVE.append(state)
    _catch_sigterm(state)
    # A module that fails to collect breaks its claims; the others run, serially as under xdist (which
    # runs them anyway), so a collection error gives the same verdicts however the run is made.
    config.option.continue_on_collection_errors = True
    set_current_store(store)
    if not _is_worker(config):
        config.pluginmanager.register(Controller(state), "claims-controller")


def _min_mutants(config: pytest.Config) -> int:
    raw = config.getini("claims_min_mutants")
    try:
        value = int(raw)
    except ValueError:
        value = -1
    if value < 0:
        raise pytest.UsageError(f"ini claims_min_mutants must be a non-negative integer, got {raw!r}")
    return value


def _check_writable(directory: Path, what: str) -> None:
    """A usage error before any test runs, rather than a traceback after all of them."""
    if directory.exists() and not directory.is_dir():
        raise pytest.UsageError(f"{what}: {directory} is a file, not a directory")
    try:
        directory.mkdir(parents=True, exist_ok=True)
        probe = directory / f".claims-probe-{os.getpid()}"
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as error:
        raise pytest.UsageError(f"{what}: {directory} cannot be written ({error.strerror or error})") from None


def _check_false_alarm_budget(config: pytest.Config, registry: Registry) -> None:
    raw = config.getini("claims_false_alarm_budget")
    try:
        budget = float(raw)
    except ValueError:
        raise pytest.UsageError(f"ini claims_false_alarm_budget must be a probability, got {raw!r}") from None
    table = false_alarm_budget(registry)
    over = {tier: found for tier, found in table.items() if found["sum"] > budget}
    if over:
        tier, found = next(iter(over.items()))
        largest = sorted(found["statements"], key=lambda r: -r["probability"])[:3]
        named = ", ".join(f"{r['claim']}:{r['statement']} {r['probability']:g}" for r in largest)
        sums = ", ".join(f"{t} ({f['sum']:g})" for t, f in over.items())
        raise pytest.UsageError(
            f"registry: the false-alarm probabilities of tier(s) {sums} "
            f"sum past the budget {budget:g} (ini claims_false_alarm_budget); largest in {tier}: {named} "
            "(a single false_alarm number counts in every tier the statement runs in)"
        )


_ACTIVE: list[State] = []  # a stack: pytester runs an inner session inside a test
_SIGTERM_BEFORE = pytest.StashKey[Any]()


def _catch_sigterm(state: State) -> None:
    """A scheduler's SIGTERM (a time limit) ends the session as Ctrl-C does, so both reports are written
    and the claims cut off say `interrupted` (workers too: they finish their reports, not crash)."""

    def on_sigterm(signum: int, frame: Any) -> None:
        state.interrupted_by = "SIGTERM"
        raise KeyboardInterrupt("SIGTERM")

    try:
        state.config.stash[_SIGTERM_BEFORE] = signal.signal(signal.SIGTERM, on_sigterm)
    except (ValueError, OSError, AttributeError):  # not the main thread, or no SIGTERM on this platform
        pass


def pytest_unconfigure(config: pytest.Config) -> None:
    state = state_of(config)
    if _SIGTERM_BEFORE in config.stash:
        try:
            signal.signal(signal.SIGTERM, config.stash[_SIGTERM_BEFORE])
        except (ValueError, OSError, TypeError):
            pass
    if state is not None and state in _ACTIVE:
        _ACTIVE.remove(state)
        set_current_store(_ACTIVE[-1].store if _ACTIVE else None)


def _load_mutants(config: pytest.Config, state: State) -> None:
    module = config.getini("claims_mutants")
    named = {m for c in state.registry.claims.values() for s in c.statements.values() for m in s.mutants}
    if not module:
        if state.run_mutants:
            raise pytest.UsageError("--mutants needs the ini key claims_mutants (the module listing MUTANTS)")
        return
    try:
        state.mutants = catalogue(module)
    except (ImportError, MutantError) as error:
        raise pytest.UsageError(f"claims_mutants = {module}: {error}") from None
    loaded = getattr(sys.modules.get(module), "__file__", None) or "?"
    unknown = sorted(named - set(state.mutants))
    if unknown:
        where = sorted(
            f"{c.id}:{s.name} ({', '.join(m for m in s.mutants if m in unknown)})"
            for c in state.registry.claims.values()
            for s in c.statements.values()
            if set(s.mutants) & set(unknown)
        )
        raise pytest.UsageError(
            f"registry names mutants that {module} (loaded from {loaded}) does not define: {'; '.join(where)}"
        )
    if state.run_mutants:
        broken = stale_mutants(module, sorted(named))
        if broken:
            raise pytest.UsageError("mutants that no longer apply:\n  " + "\n  ".join(broken))


# ------------------------------------------------------------------------------------------------
# Collection


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    state = state_of(config)
    if state is None:
        return
    problems = []
    for item in items:
        tiers = [t for t in state.tiers if item.get_closest_marker(t)]
        if len(tiers) != 1:
            problems.append(f"{item.nodeid}: needs exactly one scale marker of {state.tiers}, has {tiers or 'none'}")
            continue
        item.stash[DECLARED_TIER] = tiers[0]
        marker = item.get_closest_marker("claim")
        if marker is None:
            continue
        cid = marker.args[0] if marker.args else None
        name = marker.kwargs.get("statement")
        claim = state.registry.claims.get(cid)
        if claim is None:
            problems.append(f"{item.nodeid}: unknown claim {cid!r} (not in the registry)")
            continue
        statement = claim.statements.get(name)
        if statement is None:
            problems.append(f"{item.nodeid}: claim {cid!r} has no statement {name!r} in the registry")
            continue
        item.stash[STATEMENT] = (claim, statement)
        state.exercised.setdefault(cid, set()).add(name)
        if statement.scale_free:
            for other in state.tiers:
                if other != tiers[0]:
                    item.add_marker(other)
        if statement.expected == "refuted":
            item.add_marker(
                pytest.mark.xfail(strict=True, raises=ClaimRefuted, reason=f"registered as refuted: {cid} / {name}")
            )
    if problems:
        state.registry_check_failed = "; ".join(problems)
        if _is_worker(config):  # xdist turns a worker's UsageError into an INTERNALERROR: collect nothing and
            config.workeroutput[REGISTRY_PROBLEMS] = problems  # let the controller fail with the same lines
            items[:] = []
            return
        raise pytest.UsageError(registry_check_message(problems))


REGISTRY_PROBLEMS = "claims_registry_problems"


def registry_check_message(problems: list[str]) -> str:
    return "claim registry check failed:\n  " + "\n  ".join(problems)


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
        workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1") or 1) if _is_worker(config) else 1
        items[:] = units_first(items, lambda item: item.get_closest_marker("work_unit") is not None, workers)


def pytest_collection_finish(session: pytest.Session) -> None:
    state = state_of(session.config)
    if state is None:
        return
    state.selected = {item.stash[STATEMENT][0].id for item in session.items if STATEMENT in item.stash}
    state.statement_of = {
        item.nodeid: (item.stash[STATEMENT][0].id, item.stash[STATEMENT][1].name)
        for item in session.items
        if STATEMENT in item.stash
    }
    if _is_worker(session.config):
        session.config.workeroutput["claims_exercised"] = {c: sorted(s) for c, s in state.exercised.items()}
        session.config.workeroutput["claims_selected"] = sorted(state.selected)
        session.config.workeroutput["claims_statement_of"] = state.statement_of
    else:
        state.scheduled = {test: {cid} for test, (cid, _) in state.statement_of.items()}


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_node_collection_finished(node: Any, ids: list[str]) -> None:
    """The controller learns what each worker collected as soon as it has, so a run interrupted before
    its workers report back still calls a collected claim `not run`, not `not selected` (the claim of a
    collected test is found through the registry's `tests` module)."""
    state = state_of(node.config)
    if state is None:
        return
    for module in {nodeid.split("::", 1)[0] for nodeid in ids}:
        state.selected.update(claim.id for claim in state.registry.claims_of_module(module))
    for nodeid in ids:  # which claim a test belongs to, by its module (the worker says which statement later)
        claims = {claim.id for claim in state.registry.claims_of_module(nodeid.split("::", 1)[0])}
        if claims:
            state.scheduled.setdefault(nodeid, set()).update(claims)


@pytest.hookimpl(optionalhook=True)
def pytest_handlecrashitem(crashitem: str, report: Any, sched: Any) -> None:
    """xdist: a worker died while running `crashitem`; its statement is `crashed`, not missing."""
    state = state_of(sched.config) if hasattr(sched, "config") else (_ACTIVE[-1] if _ACTIVE else None)
    if state is not None:
        lines = [line for line in str(getattr(report, "longrepr", "") or "").splitlines() if line.strip()]
        state.crashed[crashitem] = (lines[0] if lines else "worker crashed")[:300]


@pytest.hookimpl(optionalhook=True)  # an xdist hook: without xdist the plugin must still load
def pytest_testnodedown(node: Any, error: Any) -> None:
    state = state_of(node.config)
    if state is None:
        return
    output = getattr(node, "workeroutput", {})
    if output.get(REGISTRY_PROBLEMS) and not state.workers_registry_problems:
        state.workers_registry_problems = list(output[REGISTRY_PROBLEMS])
        state.registry_check_failed = "; ".join(state.workers_registry_problems)
    for cid, names in output.get("claims_exercised", {}).items():
        state.exercised.setdefault(cid, set()).update(names)
    state.selected.update(output.get("claims_selected", []))
    state.statement_of.update({test: tuple(pair) for test, pair in output.get("claims_statement_of", {}).items()})


# ------------------------------------------------------------------------------------------------
# Worker side: mutants, evidence, statement outcomes


def clear_function_caches(root: Path) -> None:
    """Empty every functools cache of the project's modules (nothing computed under a mutant may be
    reused by the real run, nor the other way round)."""
    root = root.resolve()
    for module in list(sys.modules.values()):
        path = getattr(module, "__file__", None)
        if not path or ".venv" in path or not str(Path(path).resolve()).startswith(str(root)):
            continue
        for value in list(vars(module).values()):
            clear = getattr(value, "cache_clear", None)
            if callable(clear):
                clear()


def _try_mutant(item: pytest.Item, state: State, name: str) -> MutantResult:
    from _pytest.runner import runtestprotocol

    mutant = state.mutants[name]
    state.mutant_active = state.store.namespace = name
    state.store.mutated_module = mutant.target.partition(":")[0]
    clear_function_caches(Path(state.config.rootpath))
    try:
        with applied(mutant):
            reports = runtestprotocol(item, log=False, nextitem=item.parent)  # tears down only the item
    finally:
        state.mutant_active = state.store.namespace = state.store.mutated_module = ""
        clear_function_caches(Path(state.config.rootpath))
        state.store.take_events(item.nodeid)
    undecided = [r for r in reports if getattr(r, "claims_inconclusive", "")]
    if undecided:  # the statement no longer holds (nor stays refuted) under the mutant: told apart from the kernel
        return MutantResult(name, True, INCONCLUSIVE, undecided[0].claims_inconclusive[:200])
    failed = [r for r in reports if r.failed]
    if failed:
        report = failed[0]
        crash = getattr(report.longrepr, "reprcrash", None)
        detail = crash.message.splitlines()[0][:200] if crash is not None and crash.message else report.when
        kind = FAILED if "ClaimRefuted" in detail or "AssertionError" in detail or report.when == "call" else ERROR
        return MutantResult(name, True, kind, detail)
    if any(hasattr(r, "wasxfail") for r in reports):
        return MutantResult(name, False, REFUTED, "still refuted as registered under the mutant")
    if any(r.skipped for r in reports):
        return MutantResult(name, False, SKIPPED, "the test skipped under the mutant")
    return MutantResult(name, False, HELD, "every check passed under the mutant")


def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> None:
    """With --mutants: before the real run, run a statement test under each mutant it must kill (a holds
    statement must fail under it; a refuted one must stop being refuted, which strict xfail reports as a
    failure)."""
    state = state_of(item.config)
    if state is None or not state.run_mutants or STATEMENT not in item.stash:
        return None
    statement = item.stash[STATEMENT][1]
    if statement.mutants:
        item.stash[MUTANT_RESULTS] = [_try_mutant(item, state, name) for name in statement.mutants]
    return None  # the default protocol runs the real test


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    state = state_of(item.config)
    if state is not None:
        state.current_item = item
        state.store.current_test = item.nodeid


def new_evidence(item: pytest.Item) -> Evidence:
    state = state_of(item.config)
    report_dir = state.report_dir if state is not None else Path(item.config.rootpath) / "reports"
    evidence = Evidence(report_dir, item.nodeid, draw_figures=not (state and state.mutant_active))
    item.stash[EVIDENCE] = evidence
    return evidence


@pytest.fixture
def evidence(request: pytest.FixtureRequest) -> Evidence:
    """Records a statement test's numbers and figures onto its report."""
    return new_evidence(request.node)


def registered_false_alarm() -> float:
    """The running statement test's registered false-alarm probability at its tier (the level its
    decisions use, so the number the registry states is the number the test spends)."""
    state = _ACTIVE[-1] if _ACTIVE else None
    item = state.current_item if state is not None else None
    if item is None or STATEMENT not in item.stash:
        raise RuntimeError("registered_false_alarm() is for a statement test while it runs")
    claim, statement = item.stash[STATEMENT]
    tier = declared_tier(item)
    if tier not in statement.false_alarm:
        pytest.fail(  # one line, no traceback: the fix is in the registry, not in the test
            f"registry: {claim.id}:{statement.name} decides by a confidence level but states no false_alarm "
            f"for tier {tier!r} (add false_alarm, with its false_alarm_basis, to the statement's record)",
            pytrace=False,
        )
    return statement.false_alarm[tier]


def current_evidence() -> tuple[Evidence, pytest.Item] | None:
    """The running test's evidence recorder (created on first use) and the test item."""
    state = _ACTIVE[-1] if _ACTIVE else None
    if state is None or state.current_item is None:
        return None
    item = state.current_item
    return item.stash.get(EVIDENCE, None) or new_evidence(item), item


def reproduce_command(item: pytest.Item) -> str:
    args = item.config.hook.pytest_claims_reproduce_args(config=item.config) or []
    return " ".join(["pytest", item.nodeid, "-p", "no:randomly", *args])


def _statement_outcome(report: pytest.TestReport, call: pytest.CallInfo[Any]) -> tuple[str, str] | None:
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
    report.claims_inconclusive = message  # an attribute: xdist serialises the report's __dict__


def pytest_report_teststatus(report: pytest.TestReport, config: pytest.Config) -> tuple[str, str, str] | None:
    if report.when == "call" and getattr(report, "claims_inconclusive", ""):
        return "inconclusive", "i", "INCONCLUSIVE"
    return None


def item_path(report: pytest.TestReport) -> str:
    return report.location[0] if report.location else report.nodeid.split("::", 1)[0]


@pytest.hookimpl(hookwrapper=True, tryfirst=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[Any]):
    outcome = yield
    report = outcome.get_result()
    _as_inconclusive(report, call)
    state = state_of(item.config)
    if state is None or state.mutant_active:
        return
    if report.when == "teardown":
        events = state.store.take_events(item.nodeid)
        if events:
            report.user_properties.append((STORE_PROPERTY, events))
        unit = item.get_closest_marker("work_unit")
        if unit is not None and unit.kwargs.get("indivisible"):
            report.user_properties.append((INDIVISIBLE_PROPERTY, str(unit.kwargs["indivisible"])))
        state.current_item = None
    decided = _statement_outcome(report, call)
    if decided is None:
        return
    info = item.stash.get(STATEMENT, None)
    if info is None:
        report.user_properties.append((REFERENCE_PROPERTY, decided[0]))
        return
    claim, statement = info
    evidence = item.stash.get(EVIDENCE, None)
    run = StatementRun(
        test=item.nodeid,
        claim=claim.id,
        statement=statement.name,
        tier="any" if statement.scale_free else declared_tier(item),
        outcome=decided[0],
        reason=decided[1],
        evidence=evidence.as_dict() if evidence else {},
        figures=list(evidence.figures) if evidence else [],
        mutants=[asdict(m) for m in item.stash.get(MUTANT_RESULTS, [])],
    )
    report.user_properties.append((RUN_PROPERTY, asdict(run)))
    if report.when == "call":
        report.extras = getattr(report, "extras", []) + html_report.row_extras(asdict(run))


# ------------------------------------------------------------------------------------------------
# Controller side (or the single process): aggregate, decide, write


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


def tier_of(config: pytest.Config) -> str:
    return config.option.markexpr or "all"


def false_alarm_table(registry: Registry, tier: str, budget: Any) -> dict[str, Any]:
    """The registered false-alarm probabilities of the tiers this run selected (all tiers when the
    marker expression names none), with their sums."""
    table = false_alarm_budget(registry)
    chosen = [t for t in registry.tiers if t in tier.split()] or list(registry.tiers)
    return {"budget": float(budget), "tiers": {t: table[t] for t in chosen}}


FIGURES_KEPT_SECONDS = 24 * 3600


def _prune_figures(report_dir: Path, payload: dict[str, Any]) -> None:
    """Delete figures this run does not name that are over a day old. Each run names its own (figure
    files carry a content hash), so a run in progress beside this one loses nothing, and an earlier
    run's figures cannot pass for this run's."""
    named = {f["path"] for c in payload["claims"] for s in c["statements"] for f in s["figures"]}
    cutoff = time.time() - FIGURES_KEPT_SECONDS
    for path in (report_dir / "figures").glob("*.png"):
        try:
            if path.relative_to(report_dir).as_posix() not in named and path.stat().st_mtime < cutoff:
                path.unlink()
        except OSError:
            pass


class Controller:
    """Collects statement runs from the reports and writes verdicts.json and the html summary."""

    def __init__(self, state: State) -> None:
        self.state = state
        self.config = state.config

    def pytest_keyboard_interrupt(self, excinfo: Any) -> None:
        if not self.state.interrupted_by:
            self.state.interrupted_by = "SIGINT (KeyboardInterrupt)"

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        """A module that fails to collect breaks the claims whose tests it holds."""
        if not report.failed:
            return
        lines = [line.strip() for line in str(report.longrepr).splitlines() if line.strip()]
        message = next(
            (line[1:].strip() for line in reversed(lines) if line.startswith("E ")),
            lines[-1] if lines else "collection failed",
        )
        self.state.collection_errors[report.nodeid or "<session>"] = message[:300]

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        state = self.state
        state.durations[report.nodeid] = state.durations.get(report.nodeid, 0.0) + float(
            getattr(report, "duration", 0.0) or 0.0
        )
        for name, value in report.user_properties:
            if name == RUN_PROPERTY:
                if report.nodeid not in state.runs or value["outcome"] == ERROR:
                    state.runs[report.nodeid] = StatementRun.from_dict(value)
            elif name == REFERENCE_PROPERTY:
                if report.nodeid not in state.reference or value == ERROR:
                    state.reference[report.nodeid] = value
            elif name == STORE_PROPERTY:
                state.store_events.setdefault(report.nodeid, []).extend(value)
            elif name == INDIVISIBLE_PROPERTY:
                state.indivisible[report.nodeid] = value

    def environment(self) -> dict[str, Any]:
        env: dict[str, Any] = {
            "python": platform.python_version(),
            "platform": platform.platform(),
            "pytest": pytest.__version__,
            "git_commit": git_commit(Path(self.config.rootpath)),
        }
        for part in self.config.hook.pytest_claims_environment(config=self.config):
            env.update(part or {})
        return env

    def claim_inputs(self) -> dict[str, ClaimInputs]:
        state = self.state
        root = Path(self.config.rootpath)
        inputs = {
            cid: ClaimInputs(
                exercised=set(state.exercised.get(cid, set())),
                selected=cid in state.selected,
                has_tests=bool(claim.tests) and (root / claim.tests).is_file(),
            )
            for cid, claim in state.registry.claims.items()
        }
        for test, line in sorted(state.crashed.items()):
            if test in state.runs:
                continue
            if test in state.statement_of:
                cid, name = state.statement_of[test]
                claim = state.registry.claims[cid]
                tier = "any" if claim.statements[name].scale_free else tier_of(self.config)
                state.runs[test] = StatementRun(
                    test=test, claim=cid, statement=name, tier=tier, outcome=CRASHED, reason=line
                )
            else:
                for cid in state.scheduled.get(test, ()):
                    inputs[cid].problems.append(f"the process running {test} crashed ({line})")
        for run in state.runs.values():
            inputs[run.claim].runs.append(run)
        if state.interrupted_by:
            for test, cids in state.scheduled.items():
                if test not in state.runs and test not in state.reference and test not in state.crashed:
                    for cid in cids:
                        inputs[cid].not_reached.add(test)
                        inputs[cid].interrupted_by = state.interrupted_by
        for module, message in sorted(state.collection_errors.items()):
            for claim in state.registry.claims_of_module(module):
                inputs[claim.id].problems.append(f"collection error in {module}: {message}")
        return inputs

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        state, config = self.state, self.config
        if state.registry_check_failed:  # no test ran: verdicts of "not run" would mislead (and overwrite the last)
            if state.workers_registry_problems:  # serially, pytest has printed the UsageError already
                sys.stderr.write(f"ERROR: {registry_check_message(state.workers_registry_problems)}\n")
                session.exitstatus = pytest.ExitCode.USAGE_ERROR
            return
        if not state.interrupted_by and (
            exitstatus == pytest.ExitCode.INTERRUPTED or session.shouldstop or session.shouldfail
        ):
            why = session.shouldstop or session.shouldfail
            state.interrupted_by = f"stopped early: {why}" if isinstance(why, str) and why else "interrupted"
        environment = self.environment()
        now = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
        payload: dict[str, Any] = {
            "schema_version": SCHEMA_VERSION,
            "suite": config.getini("claims_title"),
            "tier": tier_of(config),
            "seed": environment.get("master_seed"),
            "mutants_run": state.run_mutants,
            "environment": environment,
            "papers": state.registry.papers,
            "claims": summarise(state.registry, self.claim_inputs()),
            "false_alarm": false_alarm_table(
                state.registry, tier_of(config), config.getini("claims_false_alarm_budget")
            ),
            "reference_tests": [{"test": t, "outcome": o} for t, o in sorted(state.reference.items())],
            "collection_errors": [{"module": m, "message": e} for m, e in sorted(state.collection_errors.items())],
            "runs": [
                {
                    "tier": tier_of(config),
                    "host": platform.node(),
                    "device": environment.get("device_name", environment.get("device", "cpu")),
                    "commit": environment["git_commit"],
                    "date": now,
                    "store": state.store.mode,
                    "source": "this run",
                    "tests": sorted(state.runs),
                    "interrupted": state.interrupted_by,
                }
            ],
            "timings": {
                "generated_at": now,
                "session_seconds": round(time.time() - state.started, 3),
                "store": {test: events for test, events in sorted(state.store_events.items())},
                "tests": {test: round(seconds, 3) for test, seconds in sorted(state.durations.items())},
                "indivisible": dict(sorted(state.indivisible.items())),
            },
        }
        if state.previous is not None:
            payload["changes"] = changes(state.previous, payload)
        state.payload = payload
        state.report_dir.mkdir(parents=True, exist_ok=True)
        (state.report_dir / "verdicts.json").write_text(json.dumps(payload, indent=1) + "\n", encoding="utf-8")
        _prune_figures(state.report_dir, payload)
        if any(r["verdict"] == "broken" for r in payload["claims"]) and session.exitstatus == 0:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        payload = self.state.payload
        if not payload:
            return
        found = payload.get("changes")
        if found is not None:
            terminalreporter.write_sep("=", "changed since the previous run")
            if not found["claims"] and not found["statements"]:
                terminalreporter.write_line("nothing")
            for c in found["claims"]:
                terminalreporter.write_line(f"{c['key']:>4}  {c['before']} -> {c['after']}  {c['id']}")
            for s in found["statements"]:
                terminalreporter.write_line(
                    f"      {s['claim']} / {s['statement']}: {s['before']} -> {s['after']}  ({s['test']})"
                )
        terminalreporter.write_sep("=", "claim verdicts")
        for record in payload["claims"]:
            strength = record.get("power")
            power = f"  [mutants killed {strength['killed']}/{strength['of']}]" if strength else ""
            expected = str(record.get("expected", ""))
            if expected and not (expected == record["verdict"] or expected.startswith(record["verdict"] + " ")):
                power += f"  [registered expected: {expected}]"
            terminalreporter.write_line(
                f"{record['key']:>4}  {record['verdict']:<14} {record['id']}{power}  ({record['reason']})"
            )
        table = payload.get("false_alarm", {})
        if table.get("tiers"):
            sums = ", ".join(
                f"{tier} {found['sum']:.3g} over {len(found['statements'])} statements"
                for tier, found in table["tiers"].items()
            )
            terminalreporter.write_line(
                f"false-alarm probability (registered, summed per tier; budget {table['budget']:g}): {sums}"
            )
        hits = sum(1 for events in payload["timings"]["store"].values() for e in events if e["status"] == "from store")
        terminalreporter.write_line(f"result store: {self.state.store.mode}; {hits} results read from it")
        for note in sorted(
            {e["note"] for events in payload["timings"]["store"].values() for e in events if e.get("note")}
        ):
            terminalreporter.write_line(f"result store: {note}")
        html = getattr(self.config.option, "htmlpath", None)
        if html:
            where = "and the html report"
        elif self.config.pluginmanager.hasplugin("html"):
            where = "(no HTML: give --html=PATH)"
        else:
            where = "(no HTML: it needs pytest-html, pip install 'pytest-claims[html]')"
        terminalreporter.write_line(f"report: {self.state.report_dir / 'verdicts.json'} {where}")

    # pytest-html hooks (they run where the report is written: here)

    @pytest.hookimpl(optionalhook=True)
    def pytest_html_report_title(self, report: Any) -> None:
        report.title = (
            f"{self.config.getini('claims_title')}: tier {tier_of(self.config)}, run {dt.date.today().isoformat()}"
        )

    @pytest.hookimpl(optionalhook=True)
    def pytest_html_results_summary(self, prefix: list, summary: list, postfix: list, session: pytest.Session) -> None:
        prefix.append(html_report.summary_html(self.state.payload, self.state.report_dir))

    @pytest.hookimpl(optionalhook=True)
    def pytest_html_results_table_header(self, cells: list) -> None:
        cells.insert(2, '<th class="sortable" data-column-type="claim">Claim / statement</th>')
        cells.insert(3, '<th class="sortable" data-column-type="statement_outcome">Statement outcome</th>')

    @pytest.hookimpl(optionalhook=True)
    def pytest_html_results_table_row(self, report: Any, cells: list) -> None:
        props = dict(getattr(report, "user_properties", None) or [])  # collect reports carry none
        run = props.get(RUN_PROPERTY)
        if run is None:
            label = "reference test (no claim)" if REFERENCE_PROPERTY in props else "collection"
            cells.insert(2, f'<td class="col-claim">{label}</td>')
            cells.insert(3, f'<td class="col-statement_outcome">{props.get(REFERENCE_PROPERTY, "")}</td>')
            return
        expected = self.state.registry.claims[run["claim"]].statements[run["statement"]].expected
        label = f"{run['outcome']} (registered: {expected})"
        cells.insert(
            2, f'<td class="col-claim">{html_report.esc(run["claim"])} / {html_report.esc(run["statement"])}</td>'
        )
        cells.insert(
            3,
            f'<td class="col-statement_outcome">'
            f"{html_report.badge(label, html_report.OUTCOME_COLOURS.get(run['outcome'], '#6e7781'))}</td>",
        )
