"""The package's layout: every module says what it is and lives in a room of a layer; a room imports only its own
modules and rooms of lower layers (no upward import, no cycle); the pure rooms never import pytest; nothing imports
the plugin (the switchboard imports its roles, never the other way round)."""

from __future__ import annotations

import ast
import shutil
from pathlib import Path

import pytest

import pytest_claims

PACKAGE = Path(pytest_claims.__file__).parent
MODULES = sorted(PACKAGE.rglob("*.py"))

# The rooms of the package, bottom layer first: a module imports modules of its own room and of rooms in lower
# layers only (docs/reference/architecture.md draws them). A room is a sub-package or one of the top-level modules.
LAYERS: list[set[str]] = [
    {"outcomes", "compat", "hookspecs", "stats"},  # the vocabulary, pytest's internals, the hooks, pure arithmetic
    {"store", "anytime"},  # files; anytime-valid maths
    {"model"},  # registry, evidence, verdict rules, verdicts.json
    {"context"},  # the running session and test, as the library sees them
    {"statements", "report"},  # the helpers a test calls; the outputs, rendered from the payload
    {"roles", "merge", "cli"},  # pytest's roles; the commands
    {"plugin", "__init__"},  # the switchboard; the public API
]
LAYER_OF = {room: level for level, rooms in enumerate(LAYERS) for room in rooms}
# Rooms importable and testable without pytest: they never import it (nor pytest's internals or pluggy).
WITHOUT_PYTEST = {"stats", "anytime", "model"}
PYTEST_MODULES = ("pytest", "_pytest", "pluggy")


def room_of_path(path: Path, package: Path = PACKAGE) -> str:
    """The room of a module file: its sub-package, or its own name for a top-level module."""
    parts = path.relative_to(package).parts
    return parts[0] if len(parts) > 1 else Path(parts[0]).stem


def room_of_import(name: str) -> str | None:
    """The room an imported dotted name lies in (`pytest_claims.model.registry` -> model); the package itself
    (`from pytest_claims import statement_holds`) is the public API's room, `__init__`; None outside the package."""
    parts = name.split(".")
    if parts[0] != "pytest_claims":
        return None
    if len(parts) == 1 or parts[1] not in LAYER_OF:
        return "__init__"
    return parts[1]


def room_imports(tree: ast.AST) -> set[str]:
    """The modules a module imports, by the name it writes; a relative import is named as such (the checks read
    absolute names only, so a relative one is refused rather than left unread)."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                found.add("." * node.level + (node.module or ""))
            elif node.module == "pytest_claims":  # `from pytest_claims import roles` names a room, not the API
                found.update(f"pytest_claims.{a.name}" if a.name in LAYER_OF else "pytest_claims" for a in node.names)
            elif node.module:
                found.add(node.module)
    return found


def layer_problems(path: Path, package: Path = PACKAGE) -> list[str]:
    """What breaks the layer contract in one module: an import of a higher layer or of a room of its own layer, a
    relative import, pytest imported by a pure room, the package imported by `stats`, a module outside the rooms."""
    room = room_of_path(path, package)
    if room not in LAYER_OF:
        return [f"{room} is in no room of LAYERS: put it in a sub-package (docs/reference/architecture.md)"]
    problems = []
    for name in sorted(room_imports(ast.parse(path.read_text(encoding="utf-8")))):
        if name.startswith("."):
            problems.append(f"relative import {name}: write it absolute")
            continue
        if room in WITHOUT_PYTEST and name.split(".")[0] in PYTEST_MODULES:
            problems.append(f"{room} imports {name}: it stays importable without pytest")
        target = room_of_import(name)
        if target is None or target == room:
            continue
        if room == "stats":
            problems.append(f"stats imports {name}: it imports nothing of the package")
        elif LAYER_OF[target] >= LAYER_OF[room]:
            problems.append(f"{room} (layer {LAYER_OF[room]}) imports {name} (layer {LAYER_OF[target]})")
    return problems


def room_arrows(package: Path = PACKAGE) -> dict[str, set[str]]:
    """Which rooms each room imports (its own room left out)."""
    arrows: dict[str, set[str]] = {}
    for path in sorted(package.rglob("*.py")):
        room = room_of_path(path, package)
        targets = {room_of_import(n) for n in room_imports(ast.parse(path.read_text(encoding="utf-8")))}
        arrows.setdefault(room, set()).update(t for t in targets if t and t != room)
    return arrows


def cycle(arrows: dict[str, set[str]]) -> list[str]:
    """One cycle among the rooms (a list of rooms that ends where it starts), or [] when there is none."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done

    def visit(room: str, path: list[str]) -> list[str]:
        state[room] = 1
        for target in sorted(arrows.get(room, ())):
            if state.get(target) == 1:
                return [*path[path.index(target) :], target] if target in path else [room, target]
            if target not in state and (found := visit(target, [*path, target])):
                return found
        state[room] = 2
        return []

    for room in sorted(arrows):
        if room not in state and (found := visit(room, [room])):
            return found
    return []


@pytest.mark.smoke
@pytest.mark.parametrize("path", MODULES, ids=lambda p: p.relative_to(PACKAGE).as_posix())
def test_each_module_keeps_the_layer_contract(path):
    assert not layer_problems(path), layer_problems(path)


@pytest.mark.smoke
def test_no_cycle_among_the_rooms():
    assert not cycle(room_arrows()), cycle(room_arrows())


@pytest.mark.smoke
def test_every_room_is_drawn_and_every_drawn_room_exists():
    rooms = {room_of_path(p) for p in MODULES}
    assert rooms == set(LAYER_OF), (rooms - set(LAYER_OF), set(LAYER_OF) - rooms)


@pytest.mark.smoke
def test_the_layer_check_fails_on_a_planted_upward_import(tmp_path):
    """A copy of the package with one upward import planted in each of a few rooms: the check names each, and the
    untouched copy passes (so the check reads the files it is given, not the installed package)."""
    copy = tmp_path / "pytest_claims"
    shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__"))
    assert not any(layer_problems(p, copy) for p in copy.rglob("*.py"))
    plants = {
        "model/registry.py": "from pytest_claims.roles.state import State\n",  # the model reads the run's state
        "stats/binomial.py": "def f():\n    from pytest_claims import outcomes\n",  # stats, in a function
        "report/html_report.py": "import pytest_claims.roles.session\n",  # report reads the controller
        "anytime/evalues.py": "import pytest\n",  # pure maths importing pytest
        "store/codec.py": "from . import atomic\n",  # relative: unread, so refused
        "statements/decide.py": "from pytest_claims import report\n",  # a room of the same layer
        "context.py": "from pytest_claims import decide_rate\n",  # the public API, from below it
    }
    for where, line in plants.items():
        (copy / where).write_text((copy / where).read_text(encoding="utf-8") + line, encoding="utf-8")
    (copy / "flat_module.py").write_text('"""A new module outside the rooms."""\n', encoding="utf-8")
    found = {p.relative_to(copy).as_posix(): layer_problems(p, copy) for p in copy.rglob("*.py")}
    assert {where for where, problems in found.items() if problems} == {*plants, "flat_module.py"}, found


@pytest.mark.smoke
def test_the_cycle_check_sees_a_cycle():
    assert cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert cycle({"a": {"b", "c"}, "b": {"c"}, "c": set()}) == []
    planted = {room: set(targets) for room, targets in room_arrows().items()}
    planted["stats"].add("plugin")
    planted["plugin"].add("stats")
    assert cycle(planted)


@pytest.mark.smoke
def test_report_renders_from_the_payload_never_from_the_runs_state():
    """The page and its files are built from verdicts.json's payload: no module of `report` imports the roles (the
    run's `State`, the controller, the worker); the layers say so, this names it."""
    for path in (PACKAGE / "report").rglob("*.py"):
        assert not {n for n in room_imports(ast.parse(path.read_text(encoding="utf-8"))) if ".roles" in n}, path


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
@pytest.mark.parametrize(
    "path", [p for p in MODULES if p != PACKAGE / "plugin.py"], ids=lambda p: p.relative_to(PACKAGE).as_posix()
)
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
@pytest.mark.parametrize("path", MODULES, ids=lambda p: p.relative_to(PACKAGE).as_posix())
def test_each_module_says_what_it_is(path):
    docstring = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8")))
    assert docstring and docstring.strip(), f"{path.relative_to(PACKAGE)} has no module docstring"


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
@pytest.mark.parametrize(
    "path",
    [p for p in MODULES if p != PACKAGE / "store" / "result_store.py"],
    ids=lambda p: p.relative_to(PACKAGE).as_posix(),
)
def test_nothing_sets_the_stores_attributes_from_outside(path):
    assert not store_attribute_assignments(ast.parse(path.read_text(encoding="utf-8")))


@pytest.mark.smoke
def test_the_store_assignment_check_sees_them():
    tree = ast.parse("state.store.namespace = 'm'\nstore.current_test = 't'\na, store.b = 1, 2\nstate.store = s\n")
    assert len(store_attribute_assignments(tree)) == 3  # `state.store = s` sets the state's attribute, not the store's


@pytest.mark.smoke
def test_the_architecture_page_names_every_module():
    """docs/reference/architecture.md is where a newcomer finds a module's room: each room has a section there and
    each module a row (`name`, or `room.name` where two rooms hold a module of that name)."""
    page = (Path(__file__).parent.parent / "docs" / "reference" / "architecture.md").read_text(encoding="utf-8")
    stems = [p.stem for p in MODULES]
    missing = [
        p.relative_to(PACKAGE).as_posix()
        for p in MODULES
        if p.stem not in ("__init__", "plugin")
        and f"`{room_of_path(p)}.{p.stem}`" not in page
        and (stems.count(p.stem) > 1 or f"`{p.stem}`" not in page)
    ]
    assert not missing, f"modules without a row in docs/reference/architecture.md: {missing}"
    rooms = {room_of_path(p) for p in MODULES if p.parent != PACKAGE}
    assert not [r for r in rooms if f"### `{r}`" not in page], "a sub-package without its section"
