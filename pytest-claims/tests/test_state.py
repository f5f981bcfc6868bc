"""State's one-writer rule: each owned part of `State` is written by its one module, read from the source."""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

from pytest_claims.roles import state as state_module

PACKAGE = Path(state_module.__file__).resolve().parents[1]
MUTATING = {"append", "add", "update", "extend", "pop", "clear", "setdefault", "remove", "discard", "insert", "popitem"}
MOST_ATTRIBUTES = 15


def _state_attributes() -> list[str]:
    tree = ast.parse(Path(state_module.__file__).read_text(encoding="utf-8"))
    init = next(
        node
        for cls in tree.body
        if isinstance(cls, ast.ClassDef) and cls.name == "State"
        for node in cls.body
        if isinstance(node, ast.FunctionDef) and node.name == "__init__"
    )
    return [
        target.attr
        for node in ast.walk(init)
        if isinstance(node, ast.Assign)
        for target in node.targets
        if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id == "self"
    ]


def _written(target: ast.expr) -> ast.expr:
    """What a write changes: `a.b[k]` and `a.b[k][j]` change `a.b`."""
    while isinstance(target, ast.Subscript):
        target = target.value
    return target


def _writes(tree: ast.AST) -> list[ast.expr]:
    found: list[ast.expr] = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.Assign, ast.Delete)):
            targets = node.targets
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
            targets = [node.target]
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in MUTATING:
            targets = [node.func.value]
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "setattr":
            targets = [node.args[0]] if node.args else []
        else:
            continue
        for target in targets:
            found += [_written(t) for t in (target.elts if isinstance(target, ast.Tuple) else [target])]
    return found


def _is_state(node: ast.expr) -> bool:
    """`state`, `self.state`, `state_of(config)`: the names the plugin gives its State."""
    if isinstance(node, ast.Call):
        return isinstance(node.func, ast.Name) and node.func.id == "state_of"
    return (isinstance(node, ast.Name) and node.id == "state") or (
        isinstance(node, ast.Attribute) and node.attr == "state"
    )


def writers(source: dict[str, str]) -> dict[str, set[str]]:
    """Part attribute ("results.runs"), or a part itself ("results"), -> the modules that write it; an alias of a part
    bound to a name outside its owner counts as a write of the part, as the scan cannot follow it."""
    parts = set(state_module.OWNERS)
    found: dict[str, set[str]] = defaultdict(set)
    for module, text in source.items():
        tree = ast.parse(text)
        for target in _writes(tree):
            if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Attribute):
                if target.value.attr in parts:
                    found[f"{target.value.attr}.{target.attr}"].add(module)
            if isinstance(target, ast.Attribute) and target.attr in parts and _is_state(target.value):
                found[target.attr].add(module)
        for node in ast.walk(tree):
            value = node.value if isinstance(node, ast.Assign) else None
            if isinstance(value, ast.Attribute) and value.attr in parts and _is_state(value.value):
                found[node.value.attr].add(module)
    return found


def _package_source() -> dict[str, str]:
    return {
        str(path.relative_to(PACKAGE)): path.read_text(encoding="utf-8")
        for path in sorted(PACKAGE.rglob("*.py"))
        if path.name != "state.py" or path.parent.name != "roles"
    }


def test_state_has_fewer_than_fifteen_attributes():
    attributes = _state_attributes()
    assert len(attributes) < MOST_ATTRIBUTES, attributes
    assert set(state_module.OWNERS) <= set(attributes)


def test_each_part_of_state_has_its_one_writer():
    found = writers(_package_source())
    wrong = {
        what: sorted(modules) for what, modules in found.items() if modules != {state_module.OWNERS[what.split(".")[0]]}
    }
    assert not wrong, f"written outside its owner (state.OWNERS): {wrong}"


def test_the_check_names_a_second_writer():
    source = _package_source()
    source["roles/terminal.py"] += "\n\ndef _planted(state):\n    state.results.runs['x'] = None\n"
    source["roles/html_hooks.py"] += "\n\ndef _planted(state):\n    state.mutants.items.update({})\n"
    source["roles/strict.py"] += "\n\ndef _planted(state):\n    mine = state.reports\n"
    found = writers(source)
    assert found["results.runs"] >= {"roles/session.py", "roles/terminal.py"}
    assert "roles/html_hooks.py" in found["mutants.items"]
    assert "roles/strict.py" in found["reports"]
