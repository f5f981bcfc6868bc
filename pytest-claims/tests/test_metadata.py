"""What a package index shows (issue 50 item 1): the README's links absolute under the one repository URL of
pyproject.toml, no install line naming the unpublished package, the licence beside the package, `py.typed`, and a
classifier for each Python the CI matrix tests. The built sdist and wheel are checked in CI (.ci/steps/plugin.sh)."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

pytestmark = pytest.mark.smoke

ROOT = Path(__file__).resolve().parent.parent
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
REPOSITORY = PROJECT["urls"]["Repository"]
README = (ROOT / "README.md").read_text(encoding="utf-8")
INLINE = re.compile(r"\]\(([^)\s]+)\)")
DEFINED = re.compile(r"^\[[^\]]+\]:\s*(\S+)", re.MULTILINE)


def link_targets(markdown: str) -> list[str]:
    return INLINE.findall(markdown) + DEFINED.findall(markdown)


def test_the_link_reader_sees_inline_and_reference_links():
    text = "see [a](docs/a.md) and [b][b]\n\n[b]: https://example.org/b\n"
    assert link_targets(text) == ["docs/a.md", "https://example.org/b"]


def test_every_readme_link_is_absolute_and_the_projects_are_under_its_repository():
    targets = link_targets(README)
    assert targets, "the README links nowhere"
    relative = [t for t in targets if not t.startswith("https://")]
    assert not relative, f"relative links in the README (a package index cannot follow them): {relative}"
    foreign = [t for t in targets if "pytest-claims" in t and not t.startswith(REPOSITORY + "/")]
    assert not foreign, f"links to the project not under [project.urls] Repository {REPOSITORY}: {foreign}"
    assert all(url.startswith(REPOSITORY) for url in PROJECT["urls"].values()), PROJECT["urls"]


def test_the_readmes_links_name_files_that_exist():
    """A link to a file of the repository names one that this checkout has (so a renamed page breaks here)."""
    prefixes = (f"{REPOSITORY}/blob/main/pytest-claims/", f"{REPOSITORY}/tree/main/pytest-claims/")
    missing = [
        target
        for target in link_targets(README)
        for prefix in prefixes
        if target.startswith(prefix) and not (ROOT / target[len(prefix) :].split("#")[0]).exists()
    ]
    assert not missing, f"README links to files this checkout lacks: {missing}"


def test_no_install_line_names_the_unpublished_package():
    published = re.compile(r"pip install\s+['\"]?pytest-claims\b")
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    found = [f"{p.relative_to(ROOT)}" for p in pages if published.search(p.read_text(encoding="utf-8"))]
    assert not found, f"`pip install pytest-claims` (not on a package index) in {found}"


def test_the_licence_is_declared_shipped_and_the_suites_own():
    assert PROJECT["license"] == "MIT" and PROJECT["license-files"] == ["LICENSE"]
    text = (ROOT / "LICENSE").read_text(encoding="utf-8")
    assert text.startswith("MIT License"), "pytest-claims/LICENSE is not the MIT licence"
    suite = ROOT.parent / "LICENSE"
    if suite.exists():  # in the suite's checkout: one licence for both
        assert suite.read_text(encoding="utf-8") == text, "LICENSE and pytest-claims/LICENSE differ"


def test_the_package_says_it_is_typed():
    assert (ROOT / "src" / "pytest_claims" / "py.typed").is_file()
    assert "Typing :: Typed" in PROJECT["classifiers"]


def test_a_python_classifier_for_each_version_the_ci_matrix_tests():
    versions = {c.rsplit(" ", 1)[1] for c in PROJECT["classifiers"] if re.fullmatch(r".*Python :: 3\.\d+", c)}
    assert versions == {"3.11", "3.12", "3.13"}, versions
    assert PROJECT["requires-python"] == ">=3.11"
