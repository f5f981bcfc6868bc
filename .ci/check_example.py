"""Fail unless the plugin's example project (pytest-claims/examples/means) reached its registered verdicts with every
mutant killed and wrote both reports: what a fresh install of the plugin must give (.ci/steps/plugin.sh, matrix.sh).

    python .ci/check_example.py REPORTS_DIR
"""

from __future__ import annotations

import json
import pathlib
import sys

VERDICTS = {"M1": "verified", "M2": "falsified", "M3": "verified"}
KILLED = {"M1": (2, 2), "M3": (2, 2)}


def main() -> int:
    if len(sys.argv) != 2:
        print(__doc__.strip().splitlines()[-1].strip())
        return 2
    reports = pathlib.Path(sys.argv[1])
    claims = {c["key"]: c for c in json.loads((reports / "verdicts.json").read_text(encoding="utf-8"))["claims"]}
    found = {key: c["verdict"] for key, c in claims.items()}
    power = {key: c["power"] for key, c in claims.items() if c.get("power")}
    killed = {key: (p["killed"], p["of"]) for key, p in power.items()}
    problems = []
    if found != VERDICTS:
        problems.append(f"example verdicts {found}, registered {VERDICTS}")
    if killed != KILLED:
        problems.append(f"example mutants killed {killed}, expected {KILLED}")
    html = reports / "verdict.html"
    if not html.is_file() or html.stat().st_size <= 10_000:
        problems.append(f"the example's HTML report {html} is missing or nearly empty")
    for problem in problems:
        print(f"check_example: {problem}")
    if not problems:
        print(f"example project: {found}, mutants killed " + ", ".join(f"{k} {a}/{b}" for k, (a, b) in killed.items()))
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
