# warm: the smoke tier with the store warm: the verdicts of the fresh run.
# Sourced by .ci/step (which sets work, compare, needs); run it alone with `.ci/step warm`.
needs fresh
# The same run with the store warm, read by two workers at once: identical verdicts; nothing changed since the
# fresh run.
.venv/bin/pytest -m smoke -q -n 2 -o claims_report_dir="$work/warm" --html="$work/warm/verdict.html" --previous-verdicts="$work/fresh.json"
compare "$work/fresh.json" "$work/warm/verdicts.json" "fresh vs warm store"
# And the store was read, not bypassed: results came from it, and fewer were computed than in the fresh run (a
# result kept in memory only, `persist=False`, such as B's cheap mixture sample, is computed in every run).
.venv/bin/python .ci/store_warm.py "$work/fresh.json" "$work/warm/verdicts.json"
