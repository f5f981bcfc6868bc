"""The project `pytest-claims init` writes: two claims of a toy paper, their tests, two mutants, ready to run.

Each file is a working example of one piece (the registry, a statement test, the mutant catalogue, the ini keys);
`pytest` in the new directory gives the registered verdicts (one `verified`, one `falsified`), `pytest
--claims-mutants` kills both mutants. The plugin's own tests run it, so the skeleton cannot rot.
"""

from __future__ import annotations

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

from pytest_claims.mutants import Mutant

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


def write_skeleton(directory: Path, *, force: bool = False) -> list[Path]:
    """Write the skeleton into `directory` (made if missing); refuse to overwrite a file unless `force`."""
    directory = Path(directory)
    if directory.exists() and not directory.is_dir():
        raise FileExistsError(f"{directory} is a file, not a directory")
    present = sorted(name for name in FILES if (directory / name).exists())
    if present and not force:
        raise FileExistsError(f"{directory} already has {', '.join(present)} (give --force to overwrite them)")
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for name, text in FILES.items():
        (directory / name).write_text(text, encoding="utf-8")
        written.append(directory / name)
    return written
