"""Fail unless the gpu tier's rehearsal on the CPU ended as a rehearsal must: no failure, every skip one of the
rehearsal's own (held at a slice, skipped for scale, outside the slice; or for want of data without a data
directory), every test function reaching an assertion or its skip for scale, and no gpu-tier statement decided
(with data, L6's paper-scale statements skipped and L6 not run).

    python .ci/rehearsal_ends.py JUNIT.xml VERDICTS.json [DATA_DIR]   (an empty DATA_DIR: no data directory)
"""

import collections
import json
import sys
import xml.etree.ElementTree as ET

cases = ET.parse(sys.argv[1]).getroot().iter("testcase")
payload = json.load(open(sys.argv[2], encoding="utf-8"))
have_data = len(sys.argv) > 3 and bool(sys.argv[3])
ENDS = (  # what a rehearsal's skip message starts with, and what the end is called here
    ("gpu-tier rehearsal:", "held at a slice (rehearsal)"),
    ("needs the paper's scale", "skipped for scale"),
    ("not in this slice", "outside the slice"),
)
ends, bodies, unexpected = collections.Counter(), collections.defaultdict(set), []
for case in cases:
    test = f"{case.get('classname')}::{case.get('name')}"
    function = test.split("[")[0]
    failed, skipped = case.find("failure") is not None or case.find("error") is not None, case.find("skipped")
    message = "" if skipped is None else (skipped.get("message") or "")
    if failed:
        unexpected.append(f"{test}: failed")
        continue
    if skipped is None:
        end = "passed"
    else:
        end = next((name for start, name in ENDS if message.startswith(start)), None)
    if end is None and not (not have_data and "data" in message):
        unexpected.append(f"{test}: skipped: {message}")
    ends[end] += 1
    bodies[function].add(end)
ran = {f for f, e in bodies.items() if e & {"passed", "held at a slice (rehearsal)", "skipped for scale"}}
print(
    f"gpu-tier rehearsal on CPU: {sum(ends.values())} tests of {len(bodies)} functions; "
    + ", ".join(f"{n} {e}" for e, n in ends.items())
    + f"; {len(ran)}/{len(bodies)} functions reached an assertion or their skip for scale"
)
assert not unexpected, unexpected
assert ran == set(bodies), sorted(set(bodies) - ran)
decided = [
    (c["key"], s["statement"], s["outcome"])
    for c in payload["claims"]
    for s in c["statements"]
    if s["tier"] == "gpu" and s["outcome"] != "skipped"
]
assert not decided, f"a rehearsal decided gpu-tier statements: {decided}"
(l6,) = [c for c in payload["claims"] if c["key"] == "L6"]
paper = (
    "proposed-never-overflows",
    "baseline-overflows-at-1e-3",
    "baseline-requires-1e-5",
    "proposed-lower-objective",
    "erm-accuracy-falls-late",
)
outcomes = {s["statement"]: s["outcome"] for s in l6["statements"] if s["tier"] == "gpu"}
if have_data:
    assert all(outcomes.get(name) == "skipped" for name in paper), outcomes
    assert l6["verdict"] == "not run", l6["verdict"]
