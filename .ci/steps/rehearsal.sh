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
.venv/bin/python - "$work/rehearsal.xml" reports/gpu-rehearsal/verdicts.json "${CLAIMS_DATA_DIR:-}" <<'PY'
import collections, json, sys, xml.etree.ElementTree as ET
cases, payload, have_data = ET.parse(sys.argv[1]).getroot().iter("testcase"), json.load(open(sys.argv[2])), bool(sys.argv[3])
ends, bodies, unexpected = collections.Counter(), collections.defaultdict(set), []
for case in cases:
    test = f"{case.get('classname')}::{case.get('name')}"
    function = test.split("[")[0]
    failed, skipped = case.find("failure") is not None or case.find("error") is not None, case.find("skipped")
    message = "" if skipped is None else (skipped.get("message") or "")
    if failed:
        unexpected.append(f"{test}: failed")
        continue
    end = ("passed" if skipped is None else "held at a slice (rehearsal)" if message.startswith("gpu-tier rehearsal:")
           else "skipped for scale" if message.startswith("needs the paper's scale")
           else "outside the slice" if message.startswith("not in this slice") else None)
    if end is None and not (not have_data and "data" in message):
        unexpected.append(f"{test}: skipped: {message}")
    ends[end] += 1
    bodies[function].add(end)
ran = {f for f, e in bodies.items() if e & {"passed", "held at a slice (rehearsal)", "skipped for scale"}}
print(f"gpu-tier rehearsal on CPU: {sum(ends.values())} tests of {len(bodies)} functions; " + ", ".join(f"{n} {e}" for e, n in ends.items())
      + f"; {len(ran)}/{len(bodies)} functions reached an assertion or their skip for scale")
assert not unexpected, unexpected
assert ran == set(bodies), sorted(set(bodies) - ran)
decided = [(c["key"], s["statement"], s["outcome"]) for c in payload["claims"] for s in c["statements"]
           if s["tier"] == "gpu" and s["outcome"] != "skipped"]
assert not decided, f"a rehearsal decided gpu-tier statements: {decided}"
(l6,) = [c for c in payload["claims"] if c["key"] == "L6"]
paper = ("proposed-never-overflows", "baseline-overflows-at-1e-3", "baseline-requires-1e-5", "proposed-lower-objective",
         "erm-accuracy-falls-late")
outcomes = {s["statement"]: s["outcome"] for s in l6["statements"] if s["tier"] == "gpu"}
if have_data:
    assert all(outcomes.get(name) == "skipped" for name in paper), outcomes
    assert l6["verdict"] == "not run", l6["verdict"]
PY
# A node whose python3 is itself a venv, as the lent H200's image has it (/opt/torch/.venv): the night's venv,
# made over it with --system-site-packages, must still import that venv's torch (it failed the first CUDA night).
PYTHON=.venv/bin/python GPU_NIGHTLY_VENV="$work/venv-over-venv" .ci/gpu-nightly rehearsal --collect-only -q \
  -o claims_report_dir="$work/venv-over-venv-report" --html="$work/venv-over-venv-report/verdict.html" > "$work/venv-over-venv.log" 2>&1 \
  && grep -q "also reads its packages" "$work/venv-over-venv.log" \
  || { tail -20 "$work/venv-over-venv.log"; echo "the gpu night over a venv interpreter lost its packages"; exit 1; }
echo "gpu night over a venv interpreter: its torch found ($(grep -m1 '^torch ' "$work/venv-over-venv.log"))"
