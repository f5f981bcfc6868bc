# shards: two pytest-split shards merged: the verdicts of the unsharded run.
# Sourced by .ci/step (which sets work, compare, needs); run it alone with `.ci/step shards`.
needs fresh
# Two pytest-split shards (as on two machines, so at once, one core each), merged: the verdicts of the
# unsharded run.
pids=()
for group in 1 2; do
  .venv/bin/pytest -m smoke -q --no-store --splits 2 --group "$group" -o claims_report_dir="$work/shard$group" \
    --html="$work/shard$group/verdict.html" > "$work/shard$group.log" 2>&1 &
  pids+=($!)
done
for group in 1 2; do
  wait "${pids[$((group - 1))]}" || { tail -40 "$work/shard$group.log"; echo "shard $group of 2 failed (rerun: pytest -m smoke --splits 2 --group $group)"; exit 1; }
  tail -1 "$work/shard$group.log"
done
.venv/bin/python -m pytest_claims.merge.command "$work/shard1/verdicts.json" "$work/shard2/verdicts.json" -o "$work/merged"
compare "$work/fresh.json" "$work/merged/verdicts.json" "unsharded vs two shards merged"
