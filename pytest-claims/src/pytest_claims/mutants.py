"""Mutants: small named changes to a kernel that a statement's tests must notice, their catalogue and their runner.

A mutant is data: the function it changes ("package.module:function" or "package.module:Class.method"),
an exact snippet of that function's source and its replacement. Applying it recompiles the changed
source in the function's own module and swaps the function's code object, so every caller sees the
change, whatever name it imported the function under; removing it restores the original code.

Only the function's body is swapped: a change to a default argument value has no effect (mutate the
body, where the default is used). A mutant's snippet must occur exactly once in the function.

A registry statement lists the mutants it must kill (`mutants = ["name", ...]`); a mutants run
(`--mutants`) reruns each such statement's tests under each of its mutants and expects them to fail:
`MutantRunner` (registered by the plugin for such a run) does so before each test's real run.
"""

from __future__ import annotations

import contextlib
import importlib
import inspect
import sys
import textwrap
import types
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import pytest

from pytest_claims.outcomes import ERROR, FAILED, HELD, INCONCLUSIVE, REFUTED, SKIPPED
from pytest_claims.state import MUTANT_RESULTS, STATEMENT, State
from pytest_claims.verdicts import MutantResult


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
    obj = module
    for part in attribute.split("."):
        obj = getattr(obj, part, None)
        if obj is None:
            raise MutantError(f"mutant target {target!r}: no attribute {part!r}")
    function = inspect.unwrap(obj)
    if not isinstance(function, types.FunctionType):
        raise MutantError(f"mutant target {target!r} is not a Python function")
    return module, function


def mutated_code(mutant: Mutant) -> tuple[types.FunctionType, types.CodeType]:
    """(the target function, the code object of its mutated source); MutantError if it cannot apply."""
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
    changed = "\n".join(changed.split("\n")[decorators:])  # decorators were applied already
    namespace: dict = {}
    filename = inspect.getsourcefile(function) or "<mutant>"
    first_line = function.__code__.co_firstlineno + decorators
    code = compile("\n" * (first_line - 1) + changed, filename, "exec")
    exec(code, dict(module.__dict__), namespace)
    replacement = namespace.get(function.__name__)
    if not isinstance(replacement, types.FunctionType):
        raise MutantError(f"mutant {mutant.name!r}: the changed source does not define {function.__name__}")
    if replacement.__code__.co_freevars != function.__code__.co_freevars:
        raise MutantError(f"mutant {mutant.name!r}: {mutant.target} is a closure; mutate a module-level function")
    return function, replacement.__code__


@contextlib.contextmanager
def applied(mutant: Mutant) -> Iterator[None]:
    """Apply a mutant for the duration of the block."""
    function, code = mutated_code(mutant)
    original = function.__code__
    function.__code__ = code
    try:
        yield
    finally:
        function.__code__ = original


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
            mutated_code(mutant)
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


def classify(name: str, reports: list[pytest.TestReport]) -> MutantResult:
    """A mutant's result from the reports of one test run under it (their outcomes and the attributes the worker
    side sets: `claims_inconclusive`, and `claims_assertion` for a failure by an AssertionError or ClaimRefuted)."""
    undecided = [r for r in reports if getattr(r, "claims_inconclusive", "")]
    if undecided:  # the statement no longer holds (nor stays refuted) under the mutant: told apart from the kernel
        return MutantResult(name, True, INCONCLUSIVE, undecided[0].claims_inconclusive[:200])
    failed = [r for r in reports if r.failed]
    if failed:
        report = failed[0]
        crash = getattr(report.longrepr, "reprcrash", None)
        detail = crash.message.splitlines()[0][:200] if crash is not None and crash.message else report.when
        kind = FAILED if getattr(report, "claims_assertion", False) or report.when == "call" else ERROR
        return MutantResult(name, True, kind, detail)
    if any(hasattr(r, "wasxfail") for r in reports):
        return MutantResult(name, False, REFUTED, "still refuted as registered under the mutant")
    if any(r.skipped for r in reports):
        return MutantResult(name, False, SKIPPED, "the test skipped under the mutant")
    return MutantResult(name, False, HELD, "every check passed under the mutant")


class MutantRunner:
    """With --mutants: before a statement test's real run, runs it under each mutant its statement must kill (a
    holds statement must fail under it; a refuted one must stop being refuted, which strict xfail reports as a
    failure)."""

    def __init__(self, state: State) -> None:
        self.state = state

    def try_mutant(self, item: pytest.Item, name: str) -> MutantResult:
        from _pytest.runner import runtestprotocol

        state = self.state
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
        return classify(name, reports)

    def pytest_runtest_protocol(self, item: pytest.Item, nextitem: pytest.Item | None) -> None:
        if STATEMENT not in item.stash:
            return None
        statement = item.stash[STATEMENT][1]
        if statement.mutants:
            item.stash[MUTANT_RESULTS] = [self.try_mutant(item, name) for name in statement.mutants]
        return None  # the default protocol runs the real test
