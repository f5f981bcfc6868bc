"""Fail unless two verdicts.json agree in everything but the run's own description (runs, timings,
changes), no claim is broken and every reference test held. With --without-power, what a --mutants run adds
(each claim's power, each statement's mutants) is left out too: a run with mutants against one without.

    python .ci/compare_verdicts.py FIRST.json SECOND.json LABEL [--without-power]
"""

import difflib
import json
import sys

from pytest_claims.merge.command import comparable


def load(path):
    with open(path, encoding="utf-8") as handle:
        return json.load(handle)


def without_power(payload):
    """The payload without what a --mutants run adds to it."""
    claims = [
        {**{k: v for k, v in c.items() if k != "power"}, "statements": [{**s, "mutants": []} for s in c["statements"]]}
        for c in payload["claims"]
    ]
    return {**{k: v for k, v in payload.items() if k != "mutants_run"}, "claims": claims}


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
if sys.argv[4:] == ["--without-power"]:
    a, b = without_power(a), without_power(b)
if a != b:
    lines = difflib.unified_diff(
        json.dumps(a, indent=1).splitlines(), json.dumps(b, indent=1).splitlines(), first_path, second_path, lineterm=""
    )
    print("\n".join(list(lines)[:80]))
    sys.exit(f"{label}: verdicts.json differ")
print(f"{label}: identical verdicts apart from runs and timings; {dict((c['key'], c['verdict']) for c in b['claims'])}")
