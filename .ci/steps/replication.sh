# replication: 8 further master seeds and another CPU dispatch: the same verdicts and outcomes.
# Sourced by .ci/step (which sets work, compare, needs); run it alone with `.ci/step replication`.
needs n2
# Replication: the same claim verdicts and statement outcomes under 8 further master seeds and under
# another CPU dispatch (the seeds and the dispatch must not matter); the seeds merged as a replication set.
runs=()
for seed in $replication_seeds; do
  .venv/bin/pytest -m smoke -q -n 2 --no-store --seed "$seed" -o claims_report_dir="$work/seed$seed" --html="$work/seed$seed/verdict.html" > "$work/seed$seed.log" 2>&1 \
    || { tail -40 "$work/seed$seed.log"; echo "smoke under --seed $seed failed (rerun: pytest -m smoke --seed $seed)"; exit 1; }
  runs+=("seed $seed=$work/seed$seed/verdicts.json")
done
ATEN_CPU_CAPABILITY=avx2 MKL_CBWR=COMPATIBLE .venv/bin/pytest -m smoke -q -n 2 --no-store -o claims_report_dir="$work/dispatch" --html="$work/dispatch/verdict.html" > "$work/dispatch.log" 2>&1 \
  || { tail -40 "$work/dispatch.log"; echo "smoke under ATEN_CPU_CAPABILITY=avx2 MKL_CBWR=COMPATIBLE failed"; exit 1; }
runs+=("ATEN_CPU_CAPABILITY=avx2 MKL_CBWR=COMPATIBLE=$work/dispatch/verdicts.json")
.venv/bin/python .ci/compare_outcomes.py "$work/n2/verdicts.json" "${runs[@]}"
.venv/bin/python -m pytest_claims.merge "$work/n2/verdicts.json" $(for seed in $replication_seeds; do echo "$work/seed$seed/verdicts.json"; done) -o "$work/replication"
