"""The README and the documentation pages run as written: each fenced block is a file of a throwaway project, the
commands run in it (each printing what its comment says), or a block marked as not runnable, with the reason.

A block's mark is the HTML comment on the line before its fence: `<!-- file: NAME -->` (the block is that file;
blocks of one name are concatenated, so a page can append to the registry it builds on), `<!-- commands -->`
(each line run in order, its `# comment` a text the output must contain) or `<!-- not run: REASON -->`. A page
with `<!-- builds on: PAGE -->` starts from that page's project: its files written and its commands run first.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy  # noqa: F401  (imported before pytester's in-process runs, which cannot load NumPy a second time)
import pytest

pytestmark = pytest.mark.smoke

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCS = ROOT / "docs"
PAGES = [README, *sorted(DOCS.rglob("*.md"))]
FENCE = re.compile(r"^(?P<indent> *)```(?P<lang>\w*)\n(?P<body>.*?)^(?P=indent)```", re.MULTILINE | re.DOTALL)
MARK = re.compile(r"<!-- (?:file: (?P<file>[\w./-]+)|(?P<commands>commands)|not run: (?P<reason>[^>]*\w[^>]*)) -->\s*$")
BUILDS_ON = re.compile(r"^<!-- builds on: (?P<page>[\w./-]+) -->\s*$", re.MULTILINE)
COMMANDS = {
    "pytest": ["-m", "pytest"],
    "pytest-claims-compare": ["-m", "pytest_claims.cli.compare"],
    "pytest-claims-merge": ["-m", "pytest_claims.merge.command"],
    "pytest-claims-schedule": ["-m", "pytest_claims.cli.schedule"],
}


def page_id(page: Path) -> str:
    return page.relative_to(ROOT).as_posix()


@dataclass
class Block:
    mark: str  # "file", "commands", "not run", or "" (unmarked)
    value: str  # the file name, or the reason it is not run
    body: str
    first_line: str


@dataclass
class Project:
    """A page's project in stages: the page it builds on first (its files written, its commands run), then its own
    files (added to those before, a file of the same name appended to) and commands."""

    stages: list[tuple[dict[str, str], list[str]]] = field(default_factory=list)

    @property
    def files(self) -> dict[str, str]:
        return self.stages[-1][0] if self.stages else {}

    @property
    def commands(self) -> list[str]:
        return [line for _, commands in self.stages for line in commands]


def blocks(page: Path) -> list[Block]:
    """Each fenced block of the page, with its mark (the HTML comment on the line before the fence)."""
    text = page.read_text(encoding="utf-8")
    found = []
    for match in FENCE.finditer(text):
        before = text[: match.start()].rstrip("\n").rsplit("\n", 1)[-1]
        mark = MARK.search(before)
        indent = len(match["indent"])
        body = "".join(line[indent:] for line in match["body"].splitlines(keepends=True))
        kind, value = "", ""
        if mark and mark["file"]:
            kind, value = "file", mark["file"]
        elif mark and mark["commands"]:
            kind = "commands"
        elif mark:
            kind, value = "not run", mark["reason"]
        found.append(Block(kind, value, body, (body.strip().splitlines() or [""])[0]))
    return found


def project(page: Path) -> Project:
    """The files and commands of a page, after those of the page it builds on (recursively)."""
    built = Project()
    base = BUILDS_ON.search(page.read_text(encoding="utf-8"))
    if base:
        built = project((page.parent / base["page"]).resolve())
    files, commands = dict(built.files), []
    for block in blocks(page):
        if block.mark == "file":
            files[block.value] = files.get(block.value, "") + block.body
        elif block.mark == "commands":
            commands += [line for line in block.body.splitlines() if line.strip()]
    built.stages.append((files, commands))
    return built


def own_runnable(page: Path) -> bool:
    return any(block.mark in ("file", "commands") for block in blocks(page))


def command(line: str) -> tuple[list[str], str]:
    """A command line of a page as argv for this interpreter, and the text its comment says it prints."""
    text, _, says = line.partition("#")
    words = shlex.split(text)
    assert words[0] in COMMANDS, f"{line}: the docs' tests run only {sorted(COMMANDS)}"
    return [sys.executable, *COMMANDS[words[0]], *words[1:]], " ".join(says.split())


def run_project(built: Project, where: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "CLAIMS_"))}
    for files, commands in built.stages:
        for name, text in files.items():
            (where / name).parent.mkdir(parents=True, exist_ok=True)
            (where / name).write_text(text, encoding="utf-8")
        for line in commands:
            run_command(line, where, env)


def run_command(line: str, where: Path, env: dict[str, str]) -> None:
    argv, says = command(line)
    done = subprocess.run(argv, cwd=where, env=env, capture_output=True, text=True, timeout=300, check=False)
    printed = " ".join((done.stdout + done.stderr).split())
    assert done.returncode == 0, f"{line}\n{done.stdout}\n{done.stderr}"
    assert says in printed, f"{line}: the page says it prints {says!r}\n{done.stdout}"


def verdicts(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def claim_verdicts(payload: dict) -> dict[str, str]:
    return {c["id"]: c["verdict"] for c in payload["claims"]}


def _seed_two_saved_and_merged_with_seed_three(where: Path) -> None:
    last = verdicts(where / "reports" / "verdicts.json")
    assert last["seed"] == 2 and last["environment"]["master_seed"] == 2
    merged = verdicts(where / "merged" / "verdicts.json")
    assert sorted(merged["seed"]) == [2, 3] and claim_verdicts(merged)["demo/triangle"] == "falsified"


def _the_seeded_reference_test_held(where: Path) -> None:
    last = verdicts(where / "reports" / "verdicts.json")
    assert last["seed"] == 2 and claim_verdicts(last)["demo/triangle"] == "falsified"
    assert {r["test"]: r["outcome"] for r in last["reference_tests"]}[
        "test_seeded.py::test_a_draw_depends_on_its_key_and_the_master_seed"
    ] == "held"


def _the_hooks_lines_are_in_the_report(where: Path) -> None:
    environment = verdicts(where / "reports" / "verdicts.json")["environment"]
    assert environment["master_seed"] == 1 and environment["machine"], environment


def _the_readmes_claim_falsified_by_its_statement(where: Path) -> None:
    last = verdicts(where / "reports" / "verdicts.json")
    (triangle,) = [c for c in last["claims"] if c["id"] == "demo/triangle"]
    ends = {s["statement"]: (s["outcome"], s["as_registered"]) for s in triangle["statements"]}
    assert triangle["verdict"] == "falsified" and ends == {"as-printed": ("refuted", True)}, (triangle["verdict"], ends)


def _the_tutorials_verdict_and_power(where: Path) -> None:
    last = verdicts(where / "reports" / "verdicts.json")
    (triangle,) = [c for c in last["claims"] if c["id"] == "demo/triangle"]
    assert triangle["verdict"] == "falsified" and (triangle["power"]["killed"], triangle["power"]["of"]) == (2, 2)


# What a page's run must leave behind, beyond each command's printed line.
AFTER: dict[str, Callable[[Path], None]] = {
    "README.md": _the_readmes_claim_falsified_by_its_statement,
    "docs/tutorial.md": _the_tutorials_verdict_and_power,
    "docs/how-to/merge-machines.md": _seed_two_saved_and_merged_with_seed_three,
    "docs/explanation/master-seed.md": _the_seeded_reference_test_held,
    "docs/reference/api.md": _the_hooks_lines_are_in_the_report,
}


@pytest.mark.parametrize("page", PAGES, ids=page_id)
def test_every_fenced_block_is_a_file_commands_or_marked_not_run(page):
    unmarked = [block.first_line for block in blocks(page) if not block.mark]
    assert not unmarked, (
        f"{page_id(page)}: blocks with no <!-- file: NAME -->, <!-- commands --> or <!-- not run: REASON --> mark: "
        f"{unmarked}"
    )
    base = BUILDS_ON.search(page.read_text(encoding="utf-8"))
    assert base is None or (page.parent / base["page"]).is_file(), f"{page_id(page)} builds on a missing page"


RUNNABLE = [page for page in PAGES if own_runnable(page)]


@pytest.mark.parametrize("page", RUNNABLE, ids=page_id)
def test_the_page_runs_as_written(page, tmp_path):
    built = project(page)
    assert built.commands, f"{page_id(page)} shows files but runs no command"
    run_project(built, tmp_path)
    after = AFTER.get(page_id(page))
    if after:
        after(tmp_path)


def test_the_pages_that_must_run_do():
    """The README, the tutorial and the how-tos are projects; the checks above cover each of them."""
    names = {page_id(page) for page in RUNNABLE}
    assert {"README.md", "docs/tutorial.md"} <= names and set(AFTER) <= names, names
    assert len([name for name in names if name.startswith("docs/how-to/")]) >= 6, names


README_LINES = 60  # one screen: what it is, how to install, an example that runs, where the documentation is


def test_the_readme_is_one_screen_and_its_example_starts_the_tutorial():
    """The README is a front door: its example is the tutorial's claim cut to one statement, so its files are files
    of the tutorial, its command is the tutorial's first (the same verdict line), and the rest lives in the docs."""
    lines = README.read_text(encoding="utf-8").count("\n")
    assert lines <= README_LINES, f"README.md has {lines} lines (> {README_LINES}): move the depth into docs/"
    readme, tutorial = project(README), project(DOCS / "tutorial.md")
    assert set(readme.files) < set(tutorial.files), (sorted(readme.files), sorted(tutorial.files))
    assert readme.commands and readme.commands == tutorial.commands[: len(readme.commands)], tutorial.commands
    assert "docs/tutorial.md" in README.read_text(encoding="utf-8"), "the README does not link to the tutorial"


def test_a_block_without_a_mark_is_found(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("<!-- not run: shown only -->\n```bash\nls\n```\n\ntext\n```python\nx = 1\n```\n", encoding="utf-8")
    assert [(b.mark, b.value, b.first_line) for b in blocks(page)] == [
        ("not run", "shown only", "ls"),
        ("", "", "x = 1"),
    ]
