"""CI step: pytest-claims against the oldest version of each requirement it admits.

Reads pytest-claims/pyproject.toml, pins every `name>=X` of its dependencies and of its extras to `name==X`,
installs those and the plugin (from this checkout, without
dependencies) into a fresh venv, and runs the plugin's tests that exercise what the pins guarantee: the report lock
and the result store's lock (filelock), saved runs, compare, mutant processes (pytest's hooks), the store's faults.
`--all` runs every plugin test instead (a few of them need torch, which is no requirement of the plugin).
Exit status: that of pytest; 1 when pip moved a pin; 2 when a requirement has no lower bound.

    python3 .ci/minimum_versions.py [--all] [--keep DIR]
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PLUGIN = ROOT / "pytest-claims"
SKIPPED_EXTRAS = {"all"}  # the others again
SUBSET = [
    "tests/test_own_outputs.py",
    "tests/test_mutant_process.py",
    "tests/test_store_faults.py",
    "tests/test_runs.py",
    "tests/test_mutants.py",
]
# What the plugin's tests import beyond its requirements, unpinned but resolved together with the pins: SciPy, the
# oracle of tests/test_inconclusive.py (no requirement of the plugin since the `stats` extra went).
TEST_ONLY = ["scipy"]
_LOWER = re.compile(r"^\s*([A-Za-z0-9_.-]+)\s*>=\s*([0-9][0-9A-Za-z.]*)\s*(?:,.*)?$")


def minimum_pins(pyproject: Path) -> list[str]:
    """`name==X` for each requirement `name>=X` of the plugin and of its extras (but SKIPPED_EXTRAS)."""
    project = tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]
    requirements = list(project.get("dependencies", []))
    for extra, listed in project.get("optional-dependencies", {}).items():
        if extra not in SKIPPED_EXTRAS:
            requirements += listed
    pins: dict[str, str] = {}
    for requirement in requirements:
        match = _LOWER.match(requirement.split(";")[0])
        if match is None:
            print(f"minimum_versions: {requirement!r} has no lower bound (name>=X) to install", file=sys.stderr)
            raise SystemExit(2)
        name, version = match.group(1).lower(), match.group(2)
        if name in pins and pins[name] != version:  # one name in two extras: the higher floor binds both
            version = max(pins[name], version, key=lambda v: [int(p) if p.isdigit() else 0 for p in v.split(".")])
        pins[name] = version
    return [f"{name}=={version}" for name, version in sorted(pins.items())]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--all", action="store_true", help="run every plugin test, not the subset")
    parser.add_argument("--keep", type=Path, help="build the venv here and keep it (default: a temporary folder)")
    args = parser.parse_args(argv)
    pins = minimum_pins(PLUGIN / "pyproject.toml")
    print("minimum versions: " + " ".join(pins), flush=True)
    with tempfile.TemporaryDirectory(prefix="claims-minimum-") as scratch:
        venv = args.keep or Path(scratch) / "venv"
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "-q"]
        subprocess.run([*pip, *pins, *TEST_ONLY], check=True)
        subprocess.run([*pip, "--no-deps", "-e", str(PLUGIN)], check=True)
        found = subprocess.run(
            [str(venv / "bin" / "python"), "-m", "pip", "freeze"], check=True, capture_output=True, text=True
        ).stdout.lower()
        wrong = [pin for pin in pins if pin.lower() not in found]
        if wrong:  # the resolver moved a pin (a constraint file, a conflict): this would not test the minimum
            print(f"minimum_versions: installed versions differ from the pins: {wrong}", file=sys.stderr)
            return 1
        tests = [] if args.all else SUBSET
        # two workers (pytest-xdist at its oldest too): the subset is end-to-end runs, 112 s serially, 68 s so
        command = [str(venv / "bin" / "python"), "-m", "pytest", "-q", "-p", "no:randomly", "-n", "2"]
        return subprocess.run([*command, *tests], cwd=PLUGIN).returncode


if __name__ == "__main__":
    sys.exit(main())
