# templates: the job templates' shard and merge commands, run as written on two shards of the example project.
# Sourced by .ci/step (which sets work, compare, needs); run it alone with `.ci/step templates`.
# pytest-claims/templates/ ships a GitHub Actions workflow and a Slurm array script; .ci/templates.py reads the
# lines each marks `# claims: shard` and `# claims: merge` (so CI runs what a user copies) and runs them, with
# .venv's pytest, pytest-split and pytest-claims-merge, on two shards of pytest-claims/examples/means, then the
# merge. Each merged verdicts.json must equal the example's unsharded run's.
root="$PWD"
rm -rf "$work/templates" && mkdir -p "$work/templates"
cp -r pytest-claims/examples/means "$work/templates/whole" && rm -rf "$work/templates/whole/reports"
(cd "$work/templates/whole" && "$root/.venv/bin/pytest" -q -p no:cacheprovider) > "$work/templates/whole.log" 2>&1 \
  || { tail -20 "$work/templates/whole.log"; echo "the example project failed unsharded (pytest-claims/examples/means)"; exit 1; }
PATH="$root/.venv/bin:$PATH" "$root/.venv/bin/python" .ci/templates.py --work "$work/templates" > "$work/templates/merged.txt" \
  || { cat "$work/templates/merged.txt"; exit 1; }
while read -r kind merged; do
  compare "$work/templates/whole/reports/verdicts.json" "$merged" "the example unsharded vs the ${kind%:} template's two shards merged"
done < "$work/templates/merged.txt"
