# browser: the smoke run's verdict report in headless Chromium, checked for structure (verdicts first, the run folded).
# Sourced by .ci/step (which sets work, compare, needs); run it alone with `.ci/step browser`.
# The page as a reader's browser shows it: its inline script run (headless Chromium, installed from Debian's
# packages where the machine lacks it), the DOM it leaves checked for structure, not pixels (.ci/report_structure.py),
# and a screenshot kept in the work folder.
needs fresh
if ! command -v chromium > /dev/null; then
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium) > "$work/apt.log" 2>&1 \
    || { tail -20 "$work/apt.log"; echo "could not install chromium (apt-get install chromium) for the browser check"; exit 1; }
fi
.venv/bin/python .ci/report_structure.py "$work/fresh.html" "$work/browser"
