"""Mutants: small named changes to a kernel that a statement's tests must notice, their catalogue and their runner.

A mutant is data: the function it changes ("package.module:function" or "package.module:Class.method"),
an exact snippet of that function's source and its replacement. Applying it recompiles the changed
source in the function's own module and swaps the function's code object, so every caller sees the
change, whatever name it imported the function under; removing it restores the original code.

Only the function's body is swapped: a change to a default argument value has no effect (mutate the
body, where the default is used). A mutant's snippet must occur exactly once in the function.

A registry statement lists the mutants it must kill (`mutants = ["name", ...]`); a mutants run
(`--mutants`) reruns each such statement's tests under each of its mutants and expects them to fail:
`MutantRunner` (registered by the plugin for such a run) adds one item per (statement test, mutant) pair,
so xdist spreads them over its workers, and records how each ended (`classify`).
"""

from __future__ import annotations

import ast
import contextlib
import importlib
import inspect
import sys
import textwrap
import time
import types
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Iterator, Literal, cast

import pytest

from pytest_claims import compat
from pytest_claims.roles import mutant_process, options, progress
from pytest_claims.outcomes import ERROR, FAILED, HELD, INCONCLUSIVE, REFUTED, SKIPPED
from pytest_claims.roles.state import DECLARED_TIER, MUTANT_PROPERTY, STATEMENT, Mutants, State
from pytest_claims.model.verdicts import (
    END_ERRORED,
    END_NOT_TRIED,
    END_SURVIVED,
    END_UNDECIDED,
    KILL_GUARD,
    KILL_REFUTED,
    MutantResult,
    verbose_word,
)
from pytest_claims.roles.worker import running


class MutantError(ValueError):
    """A mutant that no longer applies (its target or snippet has changed): fix the catalogue."""


@dataclass(frozen=True)
class Mutant:
    name: str
    target: str  # "package.module:function" or "package.module:Class.method"
    old: str  # an exact snippet of the target's source, found exactly once
    new: str  # what replaces it
    why: str = ""  # the kind of error the mutant stands for


def _resolve(target: str) -> tuple[types.ModuleType, types.FunctionType]:
    module_name, _, attribute = target.partition(":")
    if not attribute:
        raise MutantError(f"mutant target {target!r} must be 'module:function'")
    try:
        module = importlib.import_module(module_name)
    except ImportError as error:
        raise MutantError(f"mutant target {target!r}: {error}") from None
    obj: Any = module  # a module, then whatever its attributes are
    for part in attribute.split("."):
        obj = getattr(obj, part, None)
        if obj is None:
            raise MutantError(f"mutant target {target!r}: no attribute {part!r}")
    function = inspect.unwrap(obj)
    if not isinstance(function, types.FunctionType):
        raise MutantError(f"mutant target {target!r} is not a Python function")
    return module, function


def _changed_source(mutant: Mutant) -> tuple[types.ModuleType, types.FunctionType, str, str, types.CodeType]:
    """(module, target function, its source, the changed source, the changed source compiled): nothing evaluated, so
    checking that a mutant applies runs none of the project's code (its default arguments included)."""
    module, function = _resolve(mutant.target)
    source = textwrap.dedent(inspect.getsource(function))
    count = source.count(mutant.old)
    if count != 1:
        raise MutantError(
            f"mutant {mutant.name!r}: snippet {mutant.old!r} occurs {count} times in {mutant.target} (needs exactly 1)"
        )
    changed = source.replace(mutant.old, mutant.new)
    lines = source.split("\n")
    decorators = 0
    while lines[decorators].lstrip().startswith("@"):
        decorators += 1
    source = "\n".join(lines[decorators:])
    changed = "\n".join(changed.split("\n")[decorators:])  # decorators were applied already
    filename = inspect.getsourcefile(function) or "<mutant>"
    first_line = function.__code__.co_firstlineno + decorators
    code = compile("\n" * (first_line - 1) + changed, filename, "exec")
    defined = [c for c in code.co_consts if isinstance(c, types.CodeType) and c.co_name == function.__name__]
    if not defined:
        raise MutantError(f"mutant {mutant.name!r}: the changed source does not define {function.__name__}")
    if defined[0].co_freevars != function.__code__.co_freevars:
        raise MutantError(f"mutant {mutant.name!r}: {mutant.target} is a closure; mutate a module-level function")
    return module, function, source, changed, code


def _defaults_of(source: str) -> str:
    """The default-argument expressions of the function a source defines, as text to compare ("" if none is found)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return ""
    node = next((n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))), None)
    # kw_defaults holds None for a keyword-only argument without a default: kept, so that ast.dump marks its place
    kw_defaults = cast(list[ast.expr], node.args.kw_defaults) if node is not None else []
    return "" if node is None else ast.dump(ast.Tuple([*node.args.defaults, *kw_defaults], ast.Load()))


def mutated_code(mutant: Mutant) -> tuple[types.FunctionType, types.FunctionType]:
    """(the target function, the function its mutated source defines); MutantError if it cannot apply. The
    replacement's code and its default arguments are what `applied` swaps in (a snippet in the signature, such
    as `days=365`, changes a default: a default lives on the function object, not in its code). A mutant that
    leaves the defaults' expressions as they were keeps the target's defaults as they are now (a project may set
    them at run time): re-evaluating them from the source would change the code under test beyond the mutant.
    Defining the changed function runs its default expressions; whatever they raise (a NameError) is MutantError."""
    module, function, source, changed, code = _changed_source(mutant)
    namespace: dict = {}
    try:
        exec(code, dict(module.__dict__), namespace)
    except Exception as error:  # the project's expressions: whatever they raise is one line naming the mutant
        raise MutantError(
            f"mutant {mutant.name!r}: defining the changed {mutant.target} raised {type(error).__name__}: {error}"
        ) from None
    replacement = namespace.get(function.__name__)
    if not isinstance(replacement, types.FunctionType):
        raise MutantError(f"mutant {mutant.name!r}: the changed source does not define {function.__name__}")
    if _defaults_of(source) == _defaults_of(changed):
        replacement.__defaults__, replacement.__kwdefaults__ = function.__defaults__, function.__kwdefaults__
    return function, replacement


SWAPPED = ("__code__", "__defaults__", "__kwdefaults__")  # what a mutant changes on the target function object


@contextlib.contextmanager
def applied(mutant: Mutant) -> Iterator[None]:
    """Apply a mutant for the duration of the block: the target keeps its identity (every reference to it sees
    the mutant) and gets the replacement's code and defaults; all three are put back when the block ends."""
    function, replacement = mutated_code(mutant)
    original = {name: getattr(function, name) for name in SWAPPED}
    for name in SWAPPED:
        setattr(function, name, getattr(replacement, name))
    try:
        yield
    finally:
        for name in SWAPPED:
            setattr(function, name, original[name])


def catalogue(module_name: str) -> dict[str, Mutant]:
    """The mutants a project lists: `MUTANTS` (a list) in the module named by the ini key."""
    module = importlib.import_module(module_name)
    mutants = getattr(module, "MUTANTS", None)
    if mutants is None:
        raise MutantError(f"{module_name} has no MUTANTS list")
    out: dict[str, Mutant] = {}
    for index, mutant in enumerate(mutants):
        if not isinstance(mutant, Mutant):
            raise MutantError(f"{module_name}: MUTANTS[{index}] is a {type(mutant).__name__}, not a Mutant")
        if mutant.name in out:
            raise MutantError(f"duplicate mutant name {mutant.name!r} in {module_name}")
        out[mutant.name] = mutant
    return out


def stale_mutants(module_name: str, names: list[str] | None = None) -> list[str]:
    """One line per mutant of the catalogue that no longer applies (its target gone, its snippet not
    found exactly once in the target's source, or the change not valid Python): cheap, for a smoke test
    that keeps the catalogue in step with the code between `--mutants` runs."""
    problems = []
    found = catalogue(module_name)
    for mutant in found.values() if names is None else [found[name] for name in names]:
        try:
            _changed_source(mutant)  # compiled, never run: a plain run's check evaluates none of the project's code
        except MutantError as error:
            problems.append(f"{module_name}: {error}")
        except SyntaxError as error:
            problems.append(
                f"{module_name}: mutant {mutant.name!r}: the changed {mutant.target} is not Python ({error.msg})"
            )
    return problems


# ------------------------------------------------------------------------------------------------
# The runner


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


def _lines(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if line.strip()]


def shortened(text: str, limit: int = 1000) -> str:
    """At most `limit` characters, cut at a space (never mid-word, so a reproduce command stays whole up to
    there), with an ellipsis when cut."""
    if len(text) <= limit:
        return text
    cut = text.rfind(" ", 0, limit)
    return text[: cut if cut > limit // 2 else limit].rstrip() + " …"


def _first_line(text: str) -> str:
    return shortened(next(iter(_lines(text)), ""))


def classify(name: str, reports: list[pytest.TestReport]) -> MutantResult:
    """A mutant's result from the reports of one test run under it, by how the run ended (their outcomes and
    the attributes the worker side sets under a mutant: `claims_inconclusive`, `claims_refuted` for ClaimRefuted,
    `claims_assertion` for any AssertionError, `claims_raised_at` for the line of the test it passed):

    - refuted: through the statement (ClaimRefuted, or a statement registered refuted that held: strict XPASS);
    - guard: an assertion in the test body (a reference check inside the statement test), with its message;
    - errored: any other exception, or a failed setup or teardown (the mutant broke the code, not the mathematics);
    - undecided: the statement ended inconclusive;
    - survived: every check passed, or a refuted statement stayed refuted;
    - not tried: the test skipped."""
    undecided = [r for r in reports if getattr(r, "claims_inconclusive", "")]
    if undecided:  # neither killed nor survived: not a kill unless the registry says why it is expected
        return MutantResult(name, False, INCONCLUSIVE, _first_line(undecided[0].claims_inconclusive), END_UNDECIDED)
    failed = [r for r in reports if r.failed]
    if failed:
        report = failed[0]
        crash = getattr(report.longrepr, "reprcrash", None)
        message = _first_line(crash.message) if crash is not None and crash.message else ""
        where = getattr(report, "claims_raised_at", "")
        if report.when != "call":
            return MutantResult(name, False, ERROR, f"{report.when} failed: {message}", END_ERRORED)
        if getattr(report, "claims_refuted", False):
            return MutantResult(name, True, REFUTED, message, KILL_REFUTED)
        if isinstance(report.longrepr, str) and report.longrepr.startswith("[XPASS(strict)]"):
            return MutantResult(name, True, HELD, "held under the mutant although registered refuted", KILL_REFUTED)
        if getattr(report, "claims_assertion", False):
            lines = _lines(crash.message.removeprefix("AssertionError:")) if crash is not None else []
            text = lines[0] if lines else ""
            if text.startswith("Not equal to tolerance") and len(lines) > 1:  # numpy's: its err_msg comes second
                text = f"{lines[1]} ({text})"
            text = shortened(text)
            if text in ("", "AssertionError") or text.startswith("assert "):  # a bare assert: say so
                text = f"(no message) {text}".strip()
            return MutantResult(name, True, FAILED, f"{where}: {text}" if where else text, KILL_GUARD)
        at = f" (at {where})" if where else ""
        return MutantResult(name, False, ERROR, f"{message}{at}", END_ERRORED)
    if any(hasattr(r, "wasxfail") for r in reports):
        return MutantResult(name, False, REFUTED, "still refuted as registered under the mutant", END_SURVIVED)
    if any(r.skipped for r in reports):
        return MutantResult(name, False, SKIPPED, "the test skipped under the mutant", END_NOT_TRIED)
    return MutantResult(name, False, HELD, "every check passed under the mutant", END_SURVIVED)


class MutantItem(pytest.Item):
    """One (statement test, mutant) pair, an item of its own (`test_x[smoke]@mutant-name`), so that xdist spreads
    a statement's mutants over its workers; `MutantRunner` runs the statement test under the mutant in its place
    and reports how it ended (on a passed report: the statement's verdict, not one test, decides whether the
    mutant was killed; skipped: not tried)."""

    def __init__(self, *, target: pytest.Item, mutant: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.target = target
        self.mutant = mutant

    def runtest(self) -> None:  # never called: MutantRunner.pytest_runtest_protocol runs the pair
        raise RuntimeError("a mutant item runs through MutantRunner")

    def reportinfo(self) -> tuple[Any, int | None, str]:
        path, line, domain = self.target.reportinfo()
        return path, line, f"{domain}@{self.mutant}"


def expected_end(statement: Any, result: MutantResult) -> str:
    """The registry's reason for this errored or undecided end of the mutant, or ""."""
    text = statement.mutants_expected_end.get(result.mutant, "")
    return text if text.partition(":")[0].strip() == result.kind else ""


def mutant_reports(item: MutantItem, result: MutantResult, start: float, stop: float) -> list[pytest.TestReport]:
    """The setup, call and teardown reports of a mutant item; the call carries the result for the controller."""
    claim, statement = item.target.stash[STATEMENT]
    expected = expected_end(statement, result)
    found = {
        "test": item.target.nodeid,
        "claim": claim.id,
        "statement": statement.name,
        "of": len(statement.mutants),
        "expected": expected,
        "registered": str(statement.expected),  # read with the outcome: "held (registered refuted): killed"
        **asdict(result),
    }
    # A test's mutant that survives may be killed by another test of the statement: the verdict, not the item,
    # decides (a broken claim fails the run), so the item passes whatever the end, and says which.
    longrepr: Any = None
    outcome: Literal["passed", "skipped"] = "passed"
    if result.kind == END_NOT_TRIED:
        outcome, longrepr = "skipped", (str(item.target.path), (item.location[1] or 0) + 1, result.detail)

    def report(when: Literal["setup", "call", "teardown"], **fields: Any) -> pytest.TestReport:
        fields.setdefault("longrepr", None)
        return pytest.TestReport(
            nodeid=item.nodeid, location=item.location, keywords={item.name: 1}, when=when, **fields
        )

    return [
        report("setup", outcome="passed", start=start, stop=start),
        report(
            "call",
            longrepr=longrepr,
            outcome=outcome,
            duration=stop - start,
            start=start,
            stop=stop,
            user_properties=[(MUTANT_PROPERTY, found)],
        ),
        report("teardown", outcome="passed", start=stop, stop=stop),
    ]


def mutant_of(report: Any) -> dict[str, Any] | None:
    """The mutant result a report carries (a mutant item's call), or None."""
    return next((value for name, value in getattr(report, "user_properties", ()) if name == MUTANT_PROPERTY), None)


def loaded_catalogue(mutants: Mutants, found: dict[str, Any], stale: dict[str, str]) -> None:
    """The run's mutant catalogue as loaded and checked (`stale`: mutant -> why it no longer applies)."""
    mutants.catalogue = found
    mutants.stale = stale


class MutantRunner:
    """With --mutants: each statement test is followed by one item per mutant its statement must kill (a holds
    statement must fail under it; a refuted one must stop being refuted, which strict xfail reports as a
    failure); each such item runs the statement test under its mutant."""

    def __init__(self, state: State) -> None:
        self.state = state
        self._committed_longest: float | None = None
        # Bad time-limit keys: one line now (registered at configure), not after every real test has run
        mutant_process.time_limit(options.settings_of(state.config), 0.0, 0.0)

    def committed_longest(self) -> float:
        """The longest time the rootdir's committed .test_durations gives any of this run's statement tests (0 where
        it gives none): the stand-in on a worker that ran none of them, or not the mutant's own test."""
        if self._committed_longest is None:
            committed = progress.committed_durations(Path(self.state.config.rootpath))
            statement_tests = self.state.collection.statement_of
            self._committed_longest = max((s for test, s in committed.items() if test in statement_tests), default=0.0)
        return self._committed_longest

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(
        self, session: pytest.Session, config: pytest.Config, items: list[pytest.Item]
    ) -> None:
        """After selection (-m, -k): the selected statement tests' mutant items, after every test, taken in turns
        (each test's first mutant, then each one's second, ...): xdist hands out consecutive items in blocks, so
        a statement's mutants land in different blocks and so on different workers."""
        per_test: list[list[pytest.Item]] = []
        for item in items:
            if STATEMENT in item.stash and not isinstance(item, MutantItem):
                parent = cast(pytest.Collector, item.parent)  # a collected test item always has its collector
                found: list[pytest.Item] = []
                only = options.settings_of(config).only_mutants  # --claims-mutant NAME (a reproduce line's)
                for name in [m for m in item.stash[STATEMENT][1].mutants if not only or m in only]:
                    mutant = MutantItem.from_parent(parent, name=f"{item.name}@{name}", target=item, mutant=name)
                    mutant.stash[DECLARED_TIER] = item.stash.get(DECLARED_TIER, "")
                    found.append(mutant)
                    self.state.mutants.items[mutant.nodeid] = item.stash[STATEMENT][0].id
                per_test.append(found)
        rounds = max((len(found) for found in per_test), default=0)
        items.extend(found[i] for i in range(rounds) for found in per_test if i < len(found))

    def try_mutant(self, item: pytest.Item, name: str, nextitem: pytest.Item | None) -> MutantResult:
        runtestprotocol = compat.runtestprotocol()

        state = self.state
        mutant = state.mutants.catalogue[name]
        state.mutants.active = name
        clear_function_caches(Path(state.config.rootpath))
        try:
            with state.store.under_mutant(name, mutant.target.partition(":")[0]), running(state, item):
                with applied(mutant):
                    reports = runtestprotocol(item, log=False, nextitem=nextitem)
        except MutantError as error:  # it cannot be applied (its changed defaults raise): an errored end, named
            return MutantResult(name, False, ERROR, str(error), END_ERRORED)
        finally:
            state.mutants.active = ""
            clear_function_caches(Path(state.config.rootpath))
            state.store.take_events(item.nodeid)
        return classify(name, reports)

    def try_contained(self, item: MutantItem, nextitem: pytest.Item | None) -> MutantResult:
        """The mutant's test run in a child process (mutant_process), with a time limit from the real test's time;
        then this process tears down what `nextitem` does not need, as the test's own teardown would have."""
        durations, store = self.state.results.durations, self.state.store
        # A test's cost counts what it read ready-made (a result another test computed, or a stored entry): under
        # the mutant that result is keyed apart and recomputed, so the limit must allow for it.
        cost = {test: seconds + store.reused_seconds(test) for test, seconds in durations.items()}
        known = [seconds for test, seconds in cost.items() if test in self.state.collection.statement_of]
        real = durations.get(item.target.nodeid)
        limit, derived = mutant_process.time_limit(
            options.settings_of(item.config),
            real,
            max([*known, self.committed_longest() if real is None else 0.0]),
            store.reused_seconds(item.target.nodeid),
        )
        result = mutant_process.run_forked(
            item.mutant, lambda: self.try_mutant(item.target, item.mutant, nextitem), limit, derived
        )
        item.session._setupstate.teardown_exact(nextitem)
        return result

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """On an xdist worker (no Controller there) the times of the statement tests it ran, from which its mutants'
        time limits are derived (mutant_process.time_limit)."""
        if hasattr(self.state.config, "workerinput") and report.nodeid in self.state.collection.statement_of:
            durations = self.state.results.durations
            durations[report.nodeid] = durations.get(report.nodeid, 0.0) + float(getattr(report, "duration", 0) or 0)

    def pytest_runtest_protocol(self, item: pytest.Item, nextitem: pytest.Item | None) -> bool | None:
        if not isinstance(item, MutantItem):
            return None  # the default protocol runs the real test
        item.ihook.pytest_runtest_logstart(nodeid=item.nodeid, location=item.location)
        start = time.time()
        if mutant_process.can_fork():  # in a process of its own, serially and on an xdist worker: bounded in time
            result = self.try_contained(item, nextitem)
        else:  # no fork (Windows): in this process, unbounded; under xdist the controller names a worker that crashes
            result = self.try_mutant(item.target, item.mutant, nextitem)
        for report in mutant_reports(item, result, start, time.time()):
            item.ihook.pytest_runtest_logreport(report=report)
        item.ihook.pytest_runtest_logfinish(nodeid=item.nodeid, location=item.location)
        return True

    def pytest_report_teststatus(self, report: pytest.TestReport, config: pytest.Config) -> Any:
        found = mutant_of(report) if report.when == "call" else None
        if found is None:
            return None
        if report.skipped:
            return "skipped", "s", "NOT TRIED"
        if found["killed"]:
            return "mutants killed", "k", (verbose_word(found), {"green": True})
        if found["expected"]:
            return "mutant ends expected", "e", (verbose_word(found), {"yellow": True})
        return "mutants not killed", "S", (verbose_word(found), {"red": True})
