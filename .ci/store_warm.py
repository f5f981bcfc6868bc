"""Fail unless the warm run read the result store rather than bypassing it: results came from it, fewer were
computed than in the fresh run, and no event has a status other than read, kept or computed (a result kept in
memory only, `persist=False`, such as B's cheap mixture sample, is computed in every run).

    python .ci/store_warm.py FRESH.json WARM.json
"""

import collections
import json
import sys


def statuses(path):
    events = [e for found in json.load(open(path, encoding="utf-8"))["timings"]["store"].values() for e in found]
    return collections.Counter(e["status"] for e in events)


fresh, warm = statuses(sys.argv[1]), statuses(sys.argv[2])
print(f"result store: fresh run {dict(fresh)}; warm run {dict(warm)}")
assert warm["from store"] > 0 and warm["computed"] < fresh["computed"], (fresh, warm)
assert not set(warm) - {"from store", "in memory", "computed"}, (fresh, warm)
