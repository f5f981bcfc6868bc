# l6-evidence: L6 decided from the committed paper-scale units (evidence/l6-paper).
# Sourced by .ci/step (which sets work, compare, needs); run it alone with `.ci/step l6-evidence`.
# L6 at the paper's scale, from the units committed in evidence/l6-paper: they must match this checkout's code and
# data (seconds: a stale unit stops CI here, naming the module that changed and the command that recomputes), and the
# run that decides from them reads every unit there and computes none (the statements that need a unit not yet
# committed are skipped, naming it).
.venv/bin/python -m tools.l6_evidence check
# The continuation's units (evidence/l6-continuation, registered before they existed): each a unit of this code
.venv/bin/python -m tools.l6_continuation check
# A unit once committed is never changed, replaced or deleted: recomputing one and keeping the outcome that suits
# would break the chains' guarantee, and check sees only the tree, not what it replaced. Git's history does.
if [ "$(git rev-parse --is-shallow-repository 2>/dev/null || echo unknown)" = "false" ]; then
  rewritten="$(git log --format='%h %s' --diff-filter=MDRT -- evidence/l6-paper/store evidence/l6-continuation/store)"
  if [ -n "$rewritten" ]; then
    echo "committed L6 units were changed, replaced or deleted in these commits:"; echo "$rewritten"; exit 1
  fi
  echo "L6 units in git history: $(git log --format=%h --diff-filter=A -- evidence/l6-paper/store \
    evidence/l6-continuation/store | wc -l) commits added units, none changed, replaced or deleted one"
else
  echo "L6 units' history not checked: this clone is shallow or not a git repository (git fetch --unshallow)"
fi
.venv/bin/pytest -q -p no:randomly -m gpu --l6-evidence=evidence/l6-paper -o claims_report_dir="$work/l6-paper" \
  --html="$work/l6-paper/verdict.html" claims/lse/test_l6_uot_dro_mnist.py > "$work/l6-paper.log" 2>&1 \
  || { tail -30 "$work/l6-paper.log"; echo "deciding L6 from the committed evidence failed"; exit 1; }
.venv/bin/python .ci/l6_paper_summary.py "$work/l6-paper/verdicts.json"
