"""Fail unless two verdicts.json agree in everything but the run's own description (runs, timings,
changes), no claim is broken and every reference test held.

    python .ci/compare_verdicts.py FIRST.json SECOND.json LABEL
"""

import difflib
import json
import sys

from pytest_claims.merge import comparable


def load(path):
    with open(path, encoding="utf-8") as handle:
        return json.load(handle)


first_path, second_path, label = sys.argv[1:4]
first, second = load(first_path), load(second_path)
broken = sorted({c["key"] for c in first["claims"] + second["claims"] if c["verdict"] == "broken"})
if broken:
    sys.exit(f"{label}: broken claims {broken}")
failed = sorted(
    {r["test"] for r in first["reference_tests"] + second["reference_tests"] if r["outcome"] not in ("held", "skipped")}
)
if failed:
    sys.exit(f"{label}: reference tests did not pass: {failed}")
a, b = comparable(first), comparable(second)
if a != b:
    lines = difflib.unified_diff(
        json.dumps(a, indent=1).splitlines(), json.dumps(b, indent=1).splitlines(), first_path, second_path, lineterm=""
    )
    print("\n".join(list(lines)[:80]))
    sys.exit(f"{label}: verdicts.json differ")
print(f"{label}: identical verdicts apart from runs and timings; {dict((c['key'], c['verdict']) for c in b['claims'])}")
