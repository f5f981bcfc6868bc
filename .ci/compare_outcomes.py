"""Fail unless every run gives the reference run's claim verdicts and statement outcomes (a verdict must
not depend on the master seed or on the CPU's rounding), naming the run, the claim and the statement.

    python .ci/compare_outcomes.py REFERENCE.json LABEL=RUN.json [LABEL=RUN.json ...]
"""

import json
import sys


def outcomes(payload):
    verdicts = {c["key"]: c["verdict"] for c in payload["claims"]}
    tests = {s["test"]: (c["key"], s["statement"], s["outcome"]) for c in payload["claims"] for s in c["statements"]}
    return verdicts, tests


reference_path, runs = sys.argv[1], sys.argv[2:]
ref_verdicts, ref_tests = outcomes(json.load(open(reference_path, encoding="utf-8")))
problems = []
for entry in runs:
    label, _, path = entry.rpartition("=")
    verdicts, tests = outcomes(json.load(open(path, encoding="utf-8")))
    for key, verdict in ref_verdicts.items():
        if verdicts.get(key) != verdict:
            problems.append(f"{label}: claim {key} is {verdicts.get(key)!r}, {verdict!r} in the reference run")
    for test, (key, statement, outcome) in ref_tests.items():
        found = tests.get(test, (key, statement, "absent"))[2]
        if found != outcome:
            problems.append(f"{label}: {key} / {statement} ({test}) is {found!r}, {outcome!r} in the reference run")
    for test in sorted(set(tests) - set(ref_tests)):
        problems.append(f"{label}: {test} ran here but not in the reference run")
if problems:
    print("\n".join(problems))
    sys.exit(f"{len(problems)} verdicts or statement outcomes differ from the reference run {reference_path}")
print(
    f"{len(runs)} runs: the reference run's {len(ref_verdicts)} claim verdicts and {len(ref_tests)} statement "
    f"outcomes, every one"
)
