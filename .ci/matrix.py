"""CI step helper: pytest-claims' wheel on every Python its classifiers claim, each with the newest pytest.

For each `Programming Language :: Python :: 3.X` classifier of pytest-claims/pyproject.toml: find that interpreter
(pyenv's newest 3.X build under `pyenv root`, $PYENV_ROOT or ~/.pyenv, else python3.X on PATH), make a fresh venv
with the wheel and its xdist, html and figures extras (the plugin's tests import matplotlib) and the newest pytest,
run the example project (pytest-claims/examples/means: its registered verdicts, every mutant killed) and a fast
subset of the plugin's own tests with -n 2 (--workers), and print one line per Python with its seconds. The Python
this script runs under is CI's own (python3): the plugin step already ran every plugin test on it, in .venv with the
newest pytest, so it is named, not repeated. A claimed Python that is not installed fails the step in one line.

    python .ci/matrix.py --wheel DIST/pytest_claims-X-py3-none-any.whl --work DIR [--workers 2]
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import time
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PLUGIN = ROOT / "pytest-claims"
# Fast and end to end: options, strict mode, `init`, exports (pytester projects); the verdict rules; the exact
# binomial bounds (the math module's lgamma and log1p on each Python) at 1e9 trials and on their side.
BINOMIAL = "tests/test_binomial.py::test_"
SUBSET = [
    "tests/test_conventions.py",
    "tests/test_verdict_rules.py",
    f"{BINOMIAL}the_99_percent_lower_bound_of_1000_in_1e9_is_the_exact_root_and_below_the_observed_rate",
    f"{BINOMIAL}a_bound_on_the_wrong_side_of_the_observed_rate_is_refused",
    f"{BINOMIAL}bounds_lie_in_their_intervals_and_are_monotone",
    f"{BINOMIAL}conventions_are_the_replaced_bisection_s",
]
EXTRAS = "xdist,html,figures"
TEST_NEEDS = ["mpmath"]  # what the plugin's tests import beyond the plugin and its extras


def claimed_versions(pyproject: Path = PLUGIN / "pyproject.toml") -> list[str]:
    classifiers = tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]["classifiers"]
    found = [m.group(1) for c in classifiers if (m := re.fullmatch(r"Programming Language :: Python :: (3\.\d+)", c))]
    return sorted(found, key=lambda v: int(v.split(".")[1]))


def pyenv_root() -> Path:
    if os.environ.get("PYENV_ROOT"):
        return Path(os.environ["PYENV_ROOT"])
    if shutil.which("pyenv"):
        done = subprocess.run(["pyenv", "root"], capture_output=True, text=True, check=False)
        if done.returncode == 0 and done.stdout.strip():
            return Path(done.stdout.strip())
    return Path.home() / ".pyenv"


def is_version(python: Path, version: str) -> bool:
    """Whether `python` runs and is 3.X (a pyenv shim for a version not selected fails)."""
    code = "import sys; print('%d.%d' % sys.version_info[:2])"
    try:
        done = subprocess.run([str(python), "-c", code], capture_output=True, text=True, timeout=30, check=False)
    except OSError:
        return False
    return done.returncode == 0 and done.stdout.strip() == version


def interpreter(version: str) -> Path | None:
    """The newest pyenv build of 3.X (versions/3.X.*/bin/python3.X), else python3.X on PATH."""
    builds = sorted(
        pyenv_root().glob(f"versions/{version}.*/bin/python{version}"),
        key=lambda p: [int(x) if x.isdigit() else -1 for x in p.parts[-3].split(".")],
        reverse=True,
    )
    on_path = [Path(d) / f"python{version}" for d in os.environ.get("PATH", "").split(os.pathsep) if d]
    return next((p for p in [*builds, *on_path] if p.is_file() and is_version(p, version)), None)


def run(command: list[str], log: Path, cwd: Path | None = None) -> None:
    with log.open("a", encoding="utf-8") as out:
        out.write(f"$ {' '.join(map(str, command))}\n")
        out.flush()
        done = subprocess.run(command, cwd=cwd, stdout=out, stderr=subprocess.STDOUT, check=False)
    if done.returncode != 0:
        tail = log.read_text(encoding="utf-8").splitlines()[-30:]
        raise RuntimeError("\n".join(tail) + f"\nfailed ({done.returncode}): {' '.join(map(str, command))}")


def one_python(version: str, python: Path, wheel: Path, work: Path, workers: int) -> str:
    home = work / f"py{version}"
    shutil.rmtree(home, ignore_errors=True)
    home.mkdir(parents=True)
    log = home / "log.txt"
    venv = home / "venv"
    run([str(python), "-m", "venv", str(venv)], log)
    bin_ = venv / "bin"
    run([str(bin_ / "pip"), "install", "-q", "--upgrade", f"{wheel}[{EXTRAS}]", "pytest", *TEST_NEEDS], log)
    versions = subprocess.run(
        [str(bin_ / "python"), "-c", "import sys, pytest; print(sys.version.split()[0], pytest.__version__)"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    means = home / "means"
    shutil.copytree(PLUGIN / "examples" / "means", means, ignore=shutil.ignore_patterns("reports", ".pytest_cache"))
    run([str(bin_ / "pytest"), "-q", "-p", "no:cacheprovider"], log, cwd=means)
    mutants = ["--claims-mutants", "--claims-seed", "2"]
    run([str(bin_ / "pytest"), "-q", "-p", "no:cacheprovider", *mutants], log, cwd=means)
    run([str(bin_ / "python"), str(ROOT / ".ci" / "check_example.py"), str(means / "reports")], log)
    # the plugin's tests against the installed wheel, from a copy of their folder: no src/ beside them to shadow it
    copy = home / "plugin"
    shutil.copytree(PLUGIN / "tests", copy / "tests")
    shutil.copy2(PLUGIN / "pyproject.toml", copy / "pyproject.toml")  # the tests' ini: -p pytester
    run([str(bin_ / "pytest"), "-q", "-n", str(workers), "-p", "no:cacheprovider", *SUBSET], log, cwd=copy)
    summary = log.read_text(encoding="utf-8").strip().splitlines()[-1].strip("= ")
    return f"Python {versions[0]}, pytest {versions[1]}: example as registered; plugin tests {summary}"


def venv_pytest() -> str:
    """The pytest of CI's .venv (requirements.txt: pytest>=8, the newest at install), as `pytest X`."""
    python = ROOT / ".venv" / "bin" / "python"
    if not python.is_file():
        return "no .venv here"
    code = "import pytest; print(pytest.__version__)"
    done = subprocess.run([str(python), "-c", code], capture_output=True, text=True, check=False)
    return f"pytest {done.stdout.strip()}" if done.returncode == 0 else "no pytest in .venv"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--wheel", type=Path, required=True)
    parser.add_argument("--work", type=Path, required=True)
    parser.add_argument("--workers", type=int, default=2, help="pytest-xdist workers of the plugin tests (-n)")
    args = parser.parse_args(argv)
    versions = claimed_versions()
    found = {v: interpreter(v) for v in versions}
    missing = [v for v, path in found.items() if path is None]
    if missing:
        print(
            f"matrix: no Python {', '.join(missing)} (pytest-claims claims {', '.join(versions)}): looked for "
            f"python3.X on PATH and under {pyenv_root()}/versions; install it (pyenv install {missing[0]})"
        )
        return 1
    own = "%d.%d" % sys.version_info[:2]
    if own in found:
        del found[own]
        own_line = f"CI's own, every plugin test in the plugin step ({venv_pytest()})"
        print(f"matrix: Python {sys.version.split()[0]}: {own_line}")
    total = time.monotonic()
    for version, python in found.items():
        start = time.monotonic()
        try:
            line = one_python(version, python, args.wheel.resolve(), args.work.resolve(), args.workers)
        except RuntimeError as error:
            print(f"{error}\nmatrix: Python {version} ({python}) failed; log: {args.work / f'py{version}' / 'log.txt'}")
            return 1
        print(f"matrix: {line} ({time.monotonic() - start:.0f} s)", flush=True)
    print(f"matrix: {len(found)} more Python(s) in {time.monotonic() - total:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
