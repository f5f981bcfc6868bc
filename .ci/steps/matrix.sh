# matrix: pytest-claims' wheel on every Python it claims (3.11, 3.12, 3.13) with the newest pytest: example, tests.
# Sourced by .ci/step (which sets work, compare, needs); run it alone with `.ci/step matrix`.
# For each Python of the wheel's classifiers (pyenv's builds, or python3.X on PATH; one absent fails the step in one
# line): a fresh venv with the wheel, its xdist/html/figures extras and the newest pytest; the example project's
# verdicts and mutants; a fast subset of the plugin's tests with -n 2. Each Python's seconds are printed
# (.ci/matrix.py). The wheel is the plugin step's where this work folder has it, else built here.
wheel="$(ls "$work"/dist/pytest_claims-*.whl 2>/dev/null | head -1 || true)"
if [ -z "$wheel" ]; then
  python3 -m pip wheel -q --no-deps -w "$work/matrix-dist" ./pytest-claims > "$work/matrix-build.log" 2>&1 \
    || { tail -20 "$work/matrix-build.log"; echo "building the pytest-claims wheel for the matrix failed"; exit 1; }
  wheel="$(ls "$work"/matrix-dist/pytest_claims-*.whl | head -1)"
fi
python3 .ci/matrix.py --wheel "$wheel" --work "$work/matrix"
