# mutants: power: every statement's tests under each of its mutants.
# Sourced by .ci/step (which sets work, compare, needs); run it alone with `.ci/step mutants`.
# Power: every statement's tests rerun under each of its mutants, in the n2 step's run; a survivor fails the run.
needs n2
.venv/bin/python .ci/mutant_power.py "$work/n2/verdicts.json" "${CLAIMS_DATA_DIR:-}"
