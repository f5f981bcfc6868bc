"""Fail unless every statement's mutants were all tried and each ended killed or as its registry reason expects
(honest power): a survivor, or an errored or undecided end the registry gives no reason for, fails. Without a data
directory, a claim whose tests all skipped for it ('not run') tried no mutant and is exempt, and says so; with
one, no claim is.

    python .ci/mutant_power.py VERDICTS.json [DATA_DIR]   (an empty DATA_DIR: no data directory)
"""

import json
import sys

payload = json.load(open(sys.argv[1], encoding="utf-8"))
have_data = len(sys.argv) > 2 and bool(sys.argv[2])
power = {c["key"]: c["power"] for c in payload["claims"] if c["power"]}
print(
    "mutants per claim (killed/of; how): "
    + ", ".join(
        f"{k} {p['killed']}/{p['of']} ({', '.join(f'{n} {e}' for e, n in p['kinds'].items() if n)})"
        for k, p in power.items()
    )
)
assert not any(p["survivors"] or p["unexplained"] for p in power.values()), {
    k: (p["survivors"], p["unexplained"]) for k, p in power.items() if p["survivors"] or p["unexplained"]
}


def accounted(p):
    return sum(s["killed"] + len(s["expected_ends"]) for s in p["statements"].values())


not_run = {c["key"] for c in payload["claims"] if c["verdict"] == "not run"} if not have_data else set()
short = {k: f"{accounted(p)}/{p['of']}" for k, p in power.items() if accounted(p) != p["of"]}
assert set(short) <= not_run, short
expected = {k: p["expected"] for k, p in power.items() if p["expected"]}
print(f"errored or undecided as the registry expects (not kills): {expected}")
if short:
    print(f"not run without data, so no power shown: {short}")
