"""Fail unless the cluster's deciding run read every L6 unit from the joined store and computed none (the
cluster step: four groups' stores copied together, then one run that decides).

    python .ci/cluster_reads.py VERDICTS.json
"""

import json
import sys

events = [e for es in json.load(open(sys.argv[1], encoding="utf-8"))["timings"]["store"].values() for e in es]
computed = sorted({e["name"] for e in events if e["status"] not in ("from store", "in memory")})
units = {e["name"] for e in events}
print(
    f"cluster decide run: {len(units)} units, {len(units) - len(computed)} read from the joined store, "
    f"{len(computed)} computed"
)
assert units and not computed, computed
