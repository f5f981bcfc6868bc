# fresh: README command 2 with the result store empty (writes reports/ in the checkout).
# Sourced by .ci/step (which sets work, compare, needs); run it alone with `.ci/step fresh`.
# README command 2, with the result store empty: every result computed fresh.
rm -rf .pytest_cache
.venv/bin/pytest -m smoke
cp reports/verdicts.json "$work/fresh.json"
cp reports/verdict.html "$work/fresh.html"
