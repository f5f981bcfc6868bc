"""The suite's rooms import downward only (docs/layout.md, "Which room imports which"): a kernel imports nothing
of the suite, a workload neither the suite's plugin nor its tools (claims.ids aside: the registry's ids), a tool
not the plugin nor the claims. Tests folders are outside the rule (kernels/tests take `options` from the plugin),
and so are imports for type checking only."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
ROOMS = ("kernels", "workloads", "suite_plugin", "tools", "claims")
# What each room must not import (a module name, or a package and everything under it), with what it may
FORBIDDEN = {
    "kernels": ("workloads", "suite_plugin", "tools", "claims"),
    "workloads": ("suite_plugin", "tools", "claims"),
    "tools": ("suite_plugin", "claims"),
    "suite_plugin": ("claims",),
}
ALLOWED = {"workloads": ("claims.ids",)}
pytestmark = pytest.mark.smoke


def _type_checking_only(tree: ast.AST) -> set[int]:
    """Line numbers of the statements under `if TYPE_CHECKING:` (annotations, never run)."""
    lines = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and getattr(node.test, "id", getattr(node.test, "attr", None)) == "TYPE_CHECKING":
            lines |= {n.lineno for stmt in node.body for n in ast.walk(stmt) if hasattr(n, "lineno")}
    return lines


def imported(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, module) of every import that runs (absolute imports; a `from X import y` counts as X.y and X)."""
    skip, found = _type_checking_only(tree), []
    for node in ast.walk(tree):
        if getattr(node, "lineno", None) in skip:
            continue
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found += [(node.lineno, f"{node.module}.{a.name}") for a in node.names]
    return found


def upward(room: str, tree: ast.AST) -> list[str]:
    """The imports of a module of `room` that go up (or sideways) against FORBIDDEN."""

    def under(name: str, package: str) -> bool:
        return name == package or name.startswith(package + ".")

    out = []
    for line, name in imported(tree):
        if any(under(name, p) for p in FORBIDDEN.get(room, ())) and not any(
            under(name, a) for a in ALLOWED.get(room, ())
        ):
            out.append(f"line {line}: {name}")
    return out


def test_every_room_imports_downward_only():
    found = {}
    for room in FORBIDDEN:
        for path in sorted((ROOT / room).rglob("*.py")):
            if "tests" in path.relative_to(ROOT).parts:
                continue
            if bad := upward(room, ast.parse(path.read_text(encoding="utf-8"))):
                found[str(path.relative_to(ROOT))] = bad
    assert not found, f"imports against the rooms' order (docs/layout.md): {found}"


def test_a_planted_upward_import_is_found():
    source = (
        "from typing import TYPE_CHECKING\n"
        "from claims.ids import L5\n"
        "from kernels import seeding\n"
        "if TYPE_CHECKING:\n"
        "    from suite_plugin.options import SuiteOptions\n"
        "def f():\n"
        "    from tools import l6_evidence\n"
        "    import suite_plugin.schedule\n"
    )
    tree = ast.parse(source)
    assert upward("workloads", tree) == ["line 7: tools.l6_evidence", "line 8: suite_plugin.schedule"]
    assert upward("kernels", tree) == [
        "line 2: claims.ids.L5",
        "line 7: tools.l6_evidence",
        "line 8: suite_plugin.schedule",
    ]
