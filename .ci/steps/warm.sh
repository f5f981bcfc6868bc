# warm: the smoke tier with the store warm: the verdicts of the fresh run.
# Sourced by .ci/step (which sets work, compare, needs); run it alone with `.ci/step warm`.
needs fresh
# The same run with the store warm: identical verdicts; nothing changed since the fresh run.
.venv/bin/pytest -m smoke -q -o claims_report_dir="$work/warm" --html="$work/warm/verdict.html" --previous-verdicts="$work/fresh.json"
compare "$work/fresh.json" "$work/warm/verdicts.json" "fresh vs warm store"
