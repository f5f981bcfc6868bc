"""Mutants: small named changes to a kernel that a statement's tests must notice.

A mutant is data: the function it changes ("package.module:function" or "package.module:Class.method"),
an exact snippet of that function's source and its replacement. Applying it recompiles the changed
source in the function's own module and swaps the function's code object, so every caller sees the
change, whatever name it imported the function under; removing it restores the original code.

Only the function's body is swapped: a change to a default argument value has no effect (mutate the
body, where the default is used). A mutant's snippet must occur exactly once in the function.

A registry statement lists the mutants it must kill (`mutants = ["name", ...]`); a mutants run
(`--mutants`) reruns each such statement's tests under each of its mutants and expects them to fail.
"""

from __future__ import annotations

import contextlib
import importlib
import inspect
import textwrap
import types
from dataclasses import dataclass
from typing import Iterator


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
    for mutant in mutants:
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
