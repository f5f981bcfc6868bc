# mutants: power: every statement's tests under each of its mutants.
# Sourced by .ci/step (which sets work, compare, needs); run it alone with `.ci/step mutants`.
# Power: every statement's tests rerun under each of its mutants, in the n2 step's run; a survivor fails the run.
needs n2
.venv/bin/python - "$work/n2/verdicts.json" "${CLAIMS_DATA_DIR:-}" <<'PY'
import json, sys
payload, have_data = json.load(open(sys.argv[1])), bool(sys.argv[2])
power = {c["key"]: c["power"] for c in payload["claims"] if c["power"]}
print("mutants per claim (killed/of; how): " + ", ".join(
    f"{k} {p['killed']}/{p['of']} ({', '.join(f'{n} {e}' for e, n in p['kinds'].items() if n)})" for k, p in power.items()))
# Honest power: a survivor, or an errored or undecided end the registry gives no reason for, fails the run.
assert not any(p["survivors"] or p["unexplained"] for p in power.values()), {
    k: (p["survivors"], p["unexplained"]) for k, p in power.items() if p["survivors"] or p["unexplained"]}
# Every listed mutant was tried and ended killed or as its registry reason expects. Without a data directory, a
# claim whose tests all skipped for it ('not run') tried no mutant and is exempt, and says so; with one, no claim is.
def accounted(p):
    return sum(s["killed"] + len(s["expected_ends"]) for s in p["statements"].values())
not_run = {c["key"] for c in payload["claims"] if c["verdict"] == "not run"} if not have_data else set()
short = {k: f"{accounted(p)}/{p['of']}" for k, p in power.items() if accounted(p) != p["of"]}
assert set(short) <= not_run, short
expected = {k: p["expected"] for k, p in power.items() if p["expected"]}
print(f"errored or undecided as the registry expects (not kills): {expected}")
if short:
    print(f"not run without data, so no power shown: {short}")
PY
