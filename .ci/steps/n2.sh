# n2: the smoke tier with two workers, mutants after: the verdicts of the serial run.
# Sourced by .ci/step (which sets work, compare, needs); run it alone with `.ci/step n2`.
needs fresh
# Two workers, computing fresh; then every statement's tests under each of its mutants (the mutants step reads
# their power from this run, so the smoke tier is not computed twice). Apart from the power that the mutants add,
# the serial run's verdicts.
.venv/bin/pytest -m smoke -q -n 2 --no-store --mutants -o claims_report_dir="$work/n2" --html="$work/n2/verdict.html"
compare "$work/fresh.json" "$work/n2/verdicts.json" "serial vs -n 2 (with mutants)" --without-power
