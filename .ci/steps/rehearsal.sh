# rehearsal: the gpu tier's night rehearsed on the CPU, as a CUDA node offers it.
# Sourced by .ci/step (which sets work, compare, needs); run it alone with `.ci/step rehearsal`.
# The gpu tier's night rehearsed on this CPU machine (.ci/gpu-nightly rehearsal), set up as a CUDA node offers
# it: an interpreter that has torch and no package index. python3 stands in for the node's interpreter, with
# .venv's torch (and what torch requires) linked into a user site (.ci/node_interpreter.py); every other
# requirement comes from a folder of wheels (made here as an admin makes it where there is an index:
# `pip download -d DIR $(.ci/gpu-nightly requirements)`), installed with pip --no-index. Every gpu-tier test
# body then runs on the CPU at a slice (--gpu-rehearsal) and must reach its assertion (a statement that held
# is reported skipped, as a rehearsal) or its skip for scale; reported apart (reports/gpu-rehearsal), never
# as a verdict. A failure, an unexpected skip or a decided gpu-tier statement fails here.
node="$work/node"
.venv/bin/python .ci/node_interpreter.py "$(PYTHONUSERBASE="$node" python3 -m site --user-site)"
mapfile -t night_requirements < <(.ci/gpu-nightly requirements)
.venv/bin/pip download -q --only-binary=:all: -d "$work/wheels" "${night_requirements[@]}" > "$work/wheels.log" 2>&1 \
  || { tail -20 "$work/wheels.log"; echo "downloading the gpu night's wheels failed"; exit 1; }
PYTHONUSERBASE="$node" PYTHON=python3 WHEELS="$work/wheels" GPU_NIGHTLY_VENV="$work/night-venv" \
  .ci/gpu-nightly rehearsal -q --store-dir="$work/rehearsal-store" --junitxml="$work/rehearsal.xml" > "$work/rehearsal.log" 2>&1 \
  || { tail -40 "$work/rehearsal.log"; echo "gpu-tier rehearsal failed (rerun: .ci/gpu-nightly rehearsal)"; exit 1; }
grep -E "^\+ .*pip install|^torch " "$work/rehearsal.log"
# The paper-scale statements' decisions, on run records constructed to hold, to be refuted and to be undecided
# (the checks a paper-scale night makes; they also run in the smoke tier): listed here by name.
.venv/bin/pytest -q -rA -p no:randomly --no-store -o claims_report_dir="$work/decisions" -m smoke \
  claims/lse/test_uot_dro_decisions.py > "$work/decisions.log" 2>&1 || { tail -30 "$work/decisions.log"; echo "paper-scale decision tests failed"; exit 1; }
grep "^PASSED" "$work/decisions.log"
.venv/bin/python .ci/rehearsal_ends.py "$work/rehearsal.xml" reports/gpu-rehearsal/verdicts.json "${CLAIMS_DATA_DIR:-}"
# A node whose python3 is itself a venv, as the lent H200's image has it (/opt/torch/.venv): the night's venv,
# made over it with --system-site-packages, must still import that venv's torch (it failed the first CUDA night).
PYTHON=.venv/bin/python GPU_NIGHTLY_VENV="$work/venv-over-venv" .ci/gpu-nightly rehearsal --collect-only -q \
  -o claims_report_dir="$work/venv-over-venv-report" --html="$work/venv-over-venv-report/verdict.html" > "$work/venv-over-venv.log" 2>&1 \
  && grep -q "also reads its packages" "$work/venv-over-venv.log" \
  || { tail -20 "$work/venv-over-venv.log"; echo "the gpu night over a venv interpreter lost its packages"; exit 1; }
echo "gpu night over a venv interpreter: its torch found ($(grep -m1 '^torch ' "$work/venv-over-venv.log"))"
