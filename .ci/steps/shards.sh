# shards: two pytest-split shards merged: the verdicts of the unsharded run.
# Sourced by .ci/step (which sets work, compare, needs); run it alone with `.ci/step shards`.
needs fresh
# Two pytest-split shards (as on two machines), merged: the verdicts of the unsharded run.
for group in 1 2; do
  .venv/bin/pytest -m smoke -q --no-store --splits 2 --group "$group" -o claims_report_dir="$work/shard$group" --html="$work/shard$group/verdict.html"
done
.venv/bin/python -m pytest_claims.merge "$work/shard1/verdicts.json" "$work/shard2/verdicts.json" -o "$work/merged"
compare "$work/fresh.json" "$work/merged/verdicts.json" "unsharded vs two shards merged"
