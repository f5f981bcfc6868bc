# cluster: reviewers' clusters at a slice: L6's CPU units in four groups, joined and decided.
# Sourced by .ci/step (which sets work, compare, needs); run it alone with `.ci/step cluster`.
# Reviewers' clusters, at a slice: L6's CPU units in four pytest-split groups (the array index), each with a
# store of its own; the stores joined by copying the folders together; one run that decides (README,
# "Shards and merges"). It computes nothing (every unit read from the joined store) and gives the same
# verdicts.json as one unsplit run.
if [ -z "${CLAIMS_DATA_DIR:-}" ]; then echo "cluster layout: skipped (L6 needs the data directory)"; else
slice=(-q -p no:randomly -m gpu --l6-device cpu --l6-steps 40 --l6-seeds 2 --l6-objective-images 8 --l6-test-images 50)
for group in 1 2 3 4; do
  .venv/bin/pytest "${slice[@]}" -k test_program --splits 4 --group "$group" --store-dir="$work/cluster/g$group" \
    -o claims_report_dir="$work/cluster/r$group" --html="$work/cluster/r$group/verdict.html" claims/lse/test_l6_uot_dro_mnist.py > "$work/cluster.log" 2>&1 \
    || { tail -20 "$work/cluster.log"; echo "cluster group $group failed"; exit 1; }
done
mkdir -p "$work/cluster/store" && cp -rn "$work"/cluster/g*/. "$work/cluster/store/"
for run in decide unsplit; do
  store="$work/cluster/store"; [[ "$run" == unsplit ]] && store="$work/cluster/one-store"
  .venv/bin/pytest "${slice[@]}" --store-dir="$store" -o claims_report_dir="$work/cluster/$run" --html="$work/cluster/$run/verdict.html" \
    claims/lse/test_l6_uot_dro_mnist.py > "$work/cluster.log" 2>&1 || { tail -20 "$work/cluster.log"; echo "cluster $run run failed"; exit 1; }
done
compare "$work/cluster/unsplit/verdicts.json" "$work/cluster/decide/verdicts.json" "L6 CPU units: 4 groups joined and decided vs one run"
.venv/bin/python - "$work/cluster/decide/verdicts.json" <<'PY'
import json, sys
events = [e for es in json.load(open(sys.argv[1]))["timings"]["store"].values() for e in es]
computed = sorted({e["name"] for e in events if e["status"] not in ("from store", "in memory")})
units = {e["name"] for e in events}
print(f"cluster decide run: {len(units)} units, {len(units) - len(computed)} read from the joined store, {len(computed)} computed")
assert units and not computed, computed
PY
fi
