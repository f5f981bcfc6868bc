# replication: 8 further master seeds and another CPU dispatch: the same verdicts and outcomes.
# Sourced by .ci/step (which sets work, compare, needs); run it alone with `.ci/step replication`.
needs fresh
# Replication: the same claim verdicts and statement outcomes under 8 further master seeds and under
# another CPU dispatch (the seeds and the dispatch must not matter); the seeds merged as a replication set.
# Under the seeds only claims/ runs, what a master seed can change: the kernels' and harness reference tests
# cannot read it (their `options` has no seed; suite_plugin/tests/test_replication_scope.py checks the other ways
# in). The other dispatch can change any number, so it runs everything.
# The nine runs are serial (one BLAS and torch thread each), two at a time on the two cores, the longest first:
# no worker waits on another's last file, as one -n 2 run after another did (measured: 2 seeds in 102 s, against
# 126 s as two -n 2 runs).
replicate() {  # NAME RERUN-LINE COMMAND...: one run, its log and reports under $work/NAME; a failure is listed
  local name="$1" rerun="$2"
  shift 2
  "$@" -m smoke -q --no-store -o claims_report_dir="$work/$name" --html="$work/$name/verdict.html" > "$work/$name.log" 2>&1 \
    || echo "$name|$rerun" >> "$work/replication-failed"
}
rm -f "$work/replication-failed"
dispatch=(ATEN_CPU_CAPABILITY=avx2 MKL_CBWR=COMPATIBLE)
replicate dispatch "${dispatch[*]} pytest -m smoke" env "${dispatch[@]}" .venv/bin/pytest &
runs=("${dispatch[*]}=$work/dispatch/verdicts.json")
for seed in $replication_seeds; do
  while [ "$(jobs -rp | wc -l)" -ge 2 ]; do wait -n || true; done
  replicate "seed$seed" "pytest -m smoke --seed $seed claims" .venv/bin/pytest --seed "$seed" claims &
  runs+=("seed $seed=$work/seed$seed/verdicts.json")
done
wait
if [ -e "$work/replication-failed" ]; then
  while IFS='|' read -r name rerun; do
    tail -30 "$work/$name.log"
    echo "replication run $name failed (rerun: $rerun)"
  done < "$work/replication-failed"
  exit 1
fi
.venv/bin/python .ci/compare_outcomes.py "$work/fresh.json" "${runs[@]}"
.venv/bin/python -m pytest_claims.merge.command "$work/fresh.json" $(for seed in $replication_seeds; do echo "$work/seed$seed/verdicts.json"; done) -o "$work/replication"
