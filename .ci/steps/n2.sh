# n2: the smoke tier with two workers: the verdicts of the serial run.
# Sourced by .ci/step (which sets work, compare, needs); run it alone with `.ci/step n2`.
needs fresh
# Two workers, computing fresh.
.venv/bin/pytest -m smoke -q -n 2 --no-store -o claims_report_dir="$work/n2" --html="$work/n2/verdict.html"
compare "$work/fresh.json" "$work/n2/verdicts.json" "serial vs -n 2"
