"""The package's layout: every module says what it is, none is over about 500 lines, and nothing imports the plugin
(the switchboard imports its roles, never the other way round)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import pytest_claims

PACKAGE = Path(pytest_claims.__file__).parent
MODULES = sorted(PACKAGE.glob("*.py"))


def imported_modules(tree: ast.AST) -> set[str]:
    """Every module an `import` or `from ... import` names, at any depth (function-local imports too)."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return found


@pytest.mark.smoke
@pytest.mark.parametrize("path", [p for p in MODULES if p.name != "plugin.py"], ids=lambda p: p.name)
def test_no_module_imports_the_plugin(path):
    assert "pytest_claims.plugin" not in imported_modules(ast.parse(path.read_text(encoding="utf-8")))


@pytest.mark.smoke
def test_the_import_check_sees_a_function_local_import_of_the_plugin():
    tree = ast.parse("def f():\n    from pytest_claims import plugin\n    from pytest_claims.plugin import x\n")
    assert "pytest_claims.plugin" in imported_modules(tree)


@pytest.mark.smoke
def test_the_vocabulary_module_imports_nothing_of_the_package():
    tree = ast.parse((PACKAGE / "outcomes.py").read_text(encoding="utf-8"))
    assert not {m for m in imported_modules(tree) if m.startswith("pytest_claims")}


@pytest.mark.smoke
@pytest.mark.parametrize("path", MODULES, ids=lambda p: p.name)
def test_each_module_says_what_it_is_and_stays_small(path):
    text = path.read_text(encoding="utf-8")
    docstring = ast.get_docstring(ast.parse(text))
    assert docstring and docstring.strip(), f"{path.name} has no module docstring"
    assert len(text.splitlines()) <= 500, f"{path.name} has {len(text.splitlines())} lines"


def store_attribute_assignments(tree: ast.AST) -> list[str]:
    """Assignments to an attribute of something named `store` (`x.store.a = ...`, `store.a = ...`, augmented too):
    the store is told about a mutant or the running test by its scoped calls, never by attributes set from outside."""
    found = []
    for node in ast.walk(tree):
        targets = (
            node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AugAssign) else []
        )
        for target in (t for group in targets for t in (group.elts if isinstance(group, ast.Tuple) else [group])):
            if isinstance(target, ast.Attribute):
                owner = target.value
                name = owner.attr if isinstance(owner, ast.Attribute) else getattr(owner, "id", "")
                if name == "store":
                    found.append(f"line {target.lineno}: {ast.unparse(target)}")
    return found


@pytest.mark.smoke
@pytest.mark.parametrize("path", [p for p in MODULES if p.name != "store.py"], ids=lambda p: p.name)
def test_nothing_sets_the_stores_attributes_from_outside(path):
    assert not store_attribute_assignments(ast.parse(path.read_text(encoding="utf-8")))


@pytest.mark.smoke
def test_the_store_assignment_check_sees_them():
    tree = ast.parse("state.store.namespace = 'm'\nstore.current_test = 't'\na, store.b = 1, 2\nstate.store = s\n")
    assert len(store_attribute_assignments(tree)) == 3  # `state.store = s` sets the state's attribute, not the store's


@pytest.mark.smoke
def test_the_architecture_page_names_every_module():
    """docs/reference/architecture.md is where a newcomer finds a module's room: each module has a row there."""
    page = (Path(__file__).parent.parent / "docs" / "reference" / "architecture.md").read_text(encoding="utf-8")
    missing = [p.stem for p in MODULES if p.stem not in ("__init__", "plugin") and f"`{p.stem}`" not in page]
    assert not missing, f"modules without a row in docs/reference/architecture.md: {missing}"
