# cluster: reviewers' clusters at a slice: L6's CPU units in four groups, joined and decided.
# Sourced by .ci/step (which sets work, compare, needs); run it alone with `.ci/step cluster`.
# Reviewers' clusters, at a slice: L6's CPU units in four pytest-split groups (the array index), each with a
# store of its own; the stores joined by copying the folders together; one run that decides (README,
# "Shards and merges"). It computes nothing (every unit read from the joined store) and gives the same
# verdicts.json as one unsplit run.
if [ -z "${CLAIMS_DATA_DIR:-}" ]; then echo "cluster layout: skipped (L6 needs the data directory)"; else
slice=(-q -p no:randomly -m gpu --l6-device cpu --l6-steps 40 --l6-seeds 2 --l6-objective-images 8 --l6-test-images 50)
# Two processes at a time, as a cluster runs its array: groups 1 and 2, groups 3 and 4, then the deciding run
# beside the unsplit one.
cluster_run() {  # NAME STORE [ARGS...]: one run of the slice, its log and reports under $work/cluster/NAME
  local name="$1" store="$2"
  shift 2
  .venv/bin/pytest "${slice[@]}" "$@" --store-dir="$store" -o claims_report_dir="$work/cluster/$name" \
    --html="$work/cluster/$name/verdict.html" claims/lse/test_l6_uot_dro_mnist.py > "$work/cluster/$name.log" 2>&1
}
cluster_wait() {  # PID NAME
  wait "$1" || { tail -20 "$work/cluster/$2.log"; echo "cluster run $2 failed"; exit 1; }
}
mkdir -p "$work/cluster"
for pair in "1 2" "3 4"; do
  pids=()
  for group in $pair; do
    cluster_run "r$group" "$work/cluster/g$group" -k test_program --splits 4 --group "$group" & pids+=($!)
  done
  read -r first second <<< "$pair"
  cluster_wait "${pids[0]}" "r$first" && cluster_wait "${pids[1]}" "r$second"
done
mkdir -p "$work/cluster/store" && cp -rn "$work"/cluster/g*/. "$work/cluster/store/"
cluster_run decide "$work/cluster/store" & decide=$!
cluster_run unsplit "$work/cluster/one-store" & unsplit=$!
cluster_wait "$decide" decide && cluster_wait "$unsplit" unsplit
compare "$work/cluster/unsplit/verdicts.json" "$work/cluster/decide/verdicts.json" "L6 CPU units: 4 groups joined and decided vs one run"
.venv/bin/python .ci/cluster_reads.py "$work/cluster/decide/verdicts.json"
fi
