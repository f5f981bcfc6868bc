"""The run that decides L6 at the paper's scale from the committed units, summarised: how many units it read,
that it computed none (the first 50 and the continuation's), and each paper-scale statement's outcome with its
p-values against its levels or its chain.

    python .ci/l6_paper_summary.py VERDICTS.json
"""

import json
import sys

payload = json.load(open(sys.argv[1], encoding="utf-8"))
events = [e for es in payload["timings"]["store"].values() for e in es]
units = {e["name"] for e in events if " gpu " in e["name"]}
computed = sorted({e["name"] for e in events if e["status"] not in ("from store", "in memory")})
print(f"L6 at the paper's scale: {len(units)} of 50 units read from the committed evidence, computed {len(computed)}")
assert not computed, f"the deciding run computed units: {computed}"
(l6,) = [c for c in payload["claims"] if c["key"] == "L6"]
for statement in l6["statements"]:
    if statement["tier"] != "gpu":
        continue
    tests = [v for v in statement["evidence"].values() if isinstance(v, dict) and "p_for" in v]
    levels = "; ".join(
        f"p = {t['p_for']:.3g} for (shown below {t['held_alpha']:g}), {t['p_against']:.3g} against (refuted below "
        f"{t['refute_alpha']:g})"
        for t in tests
    )
    chain = statement["evidence"].get("chain")
    if isinstance(chain, dict):  # a continued statement: its registered chain, look by look, read and never computed
        read, made = statement["evidence"].get("units_read"), statement["evidence"].get("units_computed")
        print(
            f"  {statement['statement']}: {statement['outcome']} ({chain['end']}; seeds {chain['seeds']}, cap seed "
            f"{chain['cap_last_seed']}; ln E for {chain['ln_e_for']} (needs {chain['ln_e_for_needed']}), against "
            f"{chain['ln_e_against']} (needs {chain['ln_e_against_needed']}); units read {read}, "
            f"computed {made})"
        )
        assert made == 0, f"the deciding run computed continuation units for {statement['statement']}: {made}"
        continue
    # an undecided statement's reason whole, or where its p-values follow, its first clause (what it tested): a cut
    # at a fixed length had left "(p = 1 again (p = 0.0433 ..." mid-word
    said = statement["reason"].split(": neither")[0] if levels else statement["reason"]
    reason = "" if statement["outcome"] not in ("skipped", "inconclusive") else f": {said}"
    print(f"  {statement['statement']}: {statement['outcome']}{reason}" + (f" ({levels})" if levels else ""))
    assert statement["outcome"] in ("held", "refuted", "skipped", "inconclusive"), statement
# the claim's reason names each inconclusive statement with its own reason (printed above): here only the names
named = [s["statement"] for s in l6["statements"] if s["tier"] == "gpu" and f"{s['statement']} (" in l6["reason"]]
print(f"  L6: {l6['verdict']} ({'inconclusive and required: ' + ', '.join(named) if named else l6['reason'][:200]})")
assert l6["verdict"] != "broken", l6["reason"]
