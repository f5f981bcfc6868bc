"""Fail if two verdicts.json differ in anything but timings, or if any claim is broken."""
import json
import sys


def load(path):
    with open(path, encoding="utf-8") as handle:
        payload = json.load(handle)
    payload.pop("timings", None)
    return payload


first, second = (load(p) for p in sys.argv[1:3])
broken = [c["id"] for c in second["claims"] + first["claims"] if c["verdict"] == "broken"]
if broken:
    sys.exit(f"broken claims: {sorted(set(broken))}")
if first != second:
    a, b = json.dumps(first, indent=1).splitlines(), json.dumps(second, indent=1).splitlines()
    import difflib

    print("\n".join(list(difflib.unified_diff(a, b, "serial", "-n 2", lineterm=""))[:80]))
    sys.exit("verdicts.json differs between the serial run and -n 2")
verdicts = {c["key"]: c["verdict"] for c in second["claims"]}
print(f"verdicts.json identical apart from timings; {verdicts}")
