"""Fail unless pytest-claims' sdist and wheel are publishable: LICENSE inside both, and the wheel's METADATA with
the licence, the project URLs, one classifier per Python of the matrix and `Typing :: Typed`, and `py.typed` in the
package. Prints the METADATA lines it checked (the release rehearsal's record).

    python .ci/check_dist.py DIST_DIR
"""

from __future__ import annotations

import sys
import tarfile
import tomllib
import zipfile
from email.parser import HeaderParser
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PROJECT = tomllib.loads((ROOT / "pytest-claims" / "pyproject.toml").read_text(encoding="utf-8"))["project"]


def one(dist: Path, pattern: str) -> Path:
    found = sorted(dist.glob(pattern))
    if len(found) != 1:
        raise SystemExit(f"check_dist: {len(found)} files {pattern} in {dist}, expected one")
    return found[0]


def problems_of(dist: Path) -> list[str]:
    problems = []
    licence = (ROOT / "LICENSE").read_text(encoding="utf-8")
    sdist, wheel = one(dist, "pytest_claims-*.tar.gz"), one(dist, "pytest_claims-*.whl")
    with tarfile.open(sdist) as tar:
        names = {member.name.split("/", 1)[1]: member for member in tar.getmembers() if "/" in member.name}
        if "LICENSE" not in names:
            problems.append(f"{sdist.name} has no LICENSE")
        elif tar.extractfile(names["LICENSE"]).read().decode("utf-8") != licence:  # type: ignore[union-attr]
            problems.append(f"{sdist.name}'s LICENSE is not the repository's")
    with zipfile.ZipFile(wheel) as whl:
        names = whl.namelist()
        info = next(n.split("/")[0] for n in names if n.endswith(".dist-info/METADATA"))
        if f"{info}/licenses/LICENSE" not in names:
            problems.append(f"{wheel.name} has no {info}/licenses/LICENSE")
        elif whl.read(f"{info}/licenses/LICENSE").decode("utf-8") != licence:
            problems.append(f"{wheel.name}'s LICENSE is not the repository's")
        if "pytest_claims/py.typed" not in names:
            problems.append(f"{wheel.name} has no pytest_claims/py.typed")
        metadata = HeaderParser().parsestr(whl.read(f"{info}/METADATA").decode("utf-8"))
    expected = {
        "License-Expression": [PROJECT["license"]],
        "License-File": ["LICENSE"],
        "Classifier": PROJECT["classifiers"],
        "Project-URL": [f"{name}, {url}" for name, url in PROJECT["urls"].items()],
    }
    for field, values in expected.items():
        found = metadata.get_all(field) or []
        for value in found:
            print(f"METADATA {field}: {value}")
        missing = [v for v in values if v not in found]
        if missing:
            problems.append(f"{wheel.name} METADATA lacks {field}: {missing}")
    for needed in ("Typing :: Typed", "Programming Language :: Python :: 3.13"):
        if needed not in (metadata.get_all("Classifier") or []):
            problems.append(f"{wheel.name} METADATA lacks the classifier {needed}")
    return problems


def main() -> int:
    if len(sys.argv) != 2:
        print(__doc__.strip().splitlines()[-1].strip())
        return 2
    problems = problems_of(Path(sys.argv[1]))
    for problem in problems:
        print(f"check_dist: {problem}")
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
