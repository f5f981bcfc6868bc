"""The project `pytest-claims init` writes: two claims of a toy paper, their tests, two mutants, ready to run.

Each file is a working example of one piece (the registry, a statement test, the mutant catalogue, the ini keys);
`pytest` in the new directory gives the registered verdicts (one `verified`, one `falsified`), `pytest
--claims-mutants` kills both mutants. The plugin's own tests run it, so the skeleton cannot rot.
"""

from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path

FILES: dict[str, str] = {
    "pytest.ini": """\
[pytest]
pythonpath = .
# the claim registry (the plugin does nothing without one) and the scale tiers, smallest first
claims_registry = registry.toml
claims_tiers = smoke full
# the mutant catalogue, and how many mutants each `holds` statement must list
claims_mutants = my_mutants
claims_min_mutants = 2
# the master seed (--claims-seed N overrides it)
claims_seed = 1
""",
    "registry.toml": """\
[paper.demo]
title = "A demo paper"
source = "arXiv:0000.00000"

[[claim]]
id = "demo/triangle"
key = "D1"
paper = "demo"
where = "Eq. (1)"
text = "1 + 2 + ... + n = n (n + 1) / 2 for every natural n."
expected = "verified"
tests = "test_triangle.py"
key_numbers = ["formula: checked"]

[[claim.statement]]
name = "formula"
text = "triangle(n) equals the sum 0 + 1 + ... + n for every n < 50"
expected = "holds"
mutants = ["off-by-one", "wrong-sign"]

[[claim]]
id = "demo/square"
key = "D2"
paper = "demo"
where = "Eq. (2)"
text = "(as printed) 1 + 2 + ... + n = n^2."
expected = "falsified"
tests = "test_triangle.py"

[[claim.statement]]
name = "as-printed"
text = "triangle(3) = 3^2"
expected = "refuted"
refutes_claim = true
""",
    "kernel.py": '''\
"""The code under test."""


def triangle(n):
    return n * (n + 1) // 2
''',
    "my_mutants.py": '''\
"""Wrong versions of the code that the statement tests must tell from the right one."""

from pytest_claims.roles.mutants import Mutant

MUTANTS = [
    Mutant("off-by-one", "kernel:triangle", "n + 1", "n + 2", "a constant off by one"),
    Mutant("wrong-sign", "kernel:triangle", "n * (n + 1)", "n * (n - 1)", "a wrong sign"),
]
''',
    "test_triangle.py": '''\
"""One test per statement, tagged with its claim, its statement and its tier."""

import pytest

import kernel
from pytest_claims import statement_holds


@pytest.mark.smoke
@pytest.mark.claim("demo/triangle", statement="formula")
def test_formula(evidence):
    wrong = [n for n in range(50) if kernel.triangle(n) != sum(range(n + 1))]
    evidence.headline(checked=50, wrong=len(wrong))
    statement_holds(not wrong, f"triangle differs from the sum at n = {wrong[:5]}")


@pytest.mark.smoke
@pytest.mark.claim("demo/square", statement="as-printed")
def test_as_printed(evidence):
    evidence.headline(triangle_3=kernel.triangle(3))
    statement_holds(kernel.triangle(3) == 9, f"triangle(3) = {kernel.triangle(3)}, not 9")
''',
    "README.md": """\
# A claim-verification project (written by `pytest-claims init`)

    pytest                      # D1 verified, D2 falsified (as registered)
    pytest --claims-mutants     # each statement test rerun under its mutants: killed 2/2
    pytest --claims-strict      # CI: exit status 6 when a verdict is not the registered one

Edit `registry.toml` (the paper's claims and their statements), `kernel.py` (your code), `test_triangle.py` (one
test per statement) and `my_mutants.py` (wrong versions of your code the tests must catch). The verdicts are in
`reports/verdicts.json`.
""",
}


# Where pytest finds a configuration besides pytest.ini (which comes first): a pytest.ini written beside one of these
# shadows it, and the project's own tests would run under the skeleton's keys.
OTHER_CONFIGS = {
    ".pytest.ini": ("[pytest]",),
    "pyproject.toml": ("[tool.pytest.ini_options]", "[tool.pytest]"),
    "tox.ini": ("[pytest]",),
    "setup.cfg": ("[tool:pytest]",),
}


def _kind_refused(path: Path) -> str:
    """Why the skeleton may not write `path` even with --force ("" if it may): a symbolic link, dangling or not, is
    never written through (it would write outside the folder), nor is anything but a regular file replaced."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return ""
    if stat.S_ISLNK(info.st_mode):
        return f"{path} is a symbolic link (to {os.readlink(path)}): not written through; remove it first"
    if not stat.S_ISREG(info.st_mode):
        return f"{path} is not a regular file: not replaced"
    return ""


def pytest_configs(directory: Path) -> list[str]:
    """The pytest configurations in `directory` a pytest.ini there would shadow ("pyproject.toml
    [tool.pytest.ini_options]", ...)."""
    found = []
    for name, sections in OTHER_CONFIGS.items():
        path = directory / name
        if _kind_refused(path) or not path.is_file():
            continue
        try:
            lines = {line.strip() for line in path.read_text(encoding="utf-8", errors="replace").splitlines()}
        except OSError:
            continue
        found += [f"{name} {section}" for section in sections if section in lines]
    return found


def write_skeleton(directory: Path, *, force: bool = False) -> list[Path]:
    """Write the skeleton into `directory` (made if missing); refuse to overwrite a file unless `force`, to write
    through a symbolic link ever, and to shadow another pytest configuration there unless `force`. The files are
    written to temporary files first and renamed into place only once all are written, so that a failure leaves
    nothing half-written."""
    directory = Path(directory)
    if directory.exists() and not directory.is_dir():
        raise FileExistsError(f"{directory} is a file, not a directory")
    refused = [why for why in (_kind_refused(directory / name) for name in FILES) if why]
    if refused:
        raise FileExistsError(refused[0])
    present = sorted(name for name in FILES if (directory / name).exists())
    if present and not force:
        raise FileExistsError(f"{directory} already has {', '.join(present)} (give --force to overwrite them)")
    shadowed = pytest_configs(directory)
    if shadowed and not force:
        raise FileExistsError(
            f"{directory} has a pytest configuration in {', '.join(shadowed)}, which the skeleton's pytest.ini would "
            "shadow (pytest reads pytest.ini first): init into a new folder, or give --force"
        )
    directory.mkdir(parents=True, exist_ok=True)
    staged: list[tuple[str, Path]] = []
    try:
        for name, text in FILES.items():
            fd, tmp = tempfile.mkstemp(dir=directory, prefix=f".{name}.", suffix=".tmp")
            staged.append((tmp, directory / name))
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write(text)
        for tmp, path in staged:
            os.replace(tmp, path)
    finally:
        for tmp, _ in staged:
            Path(tmp).unlink(missing_ok=True)
    return [path for _, path in staged]
