# plugin: pytest-claims built, twine-checked and installed alone, its example project, its tests, oldest requirements.
# Sourced by .ci/step (which sets work, compare, needs); run it alone with `.ci/step plugin`.
# The release rehearsal (pytest-claims/CHANGELOG.md): pytest-claims built (sdist and wheel), `twine check --strict`
# on both, LICENSE inside both and the wheel's metadata with the licence and classifiers; the wheel installed alone
# into a fresh venv (at most 8 distributions, neither torch nor NumPy), silent in a folder without an ini; its
# example project run from a venv holding the sdist and its html extra only: the registered verdicts, every
# mutant killed, both reports written.
python3 -m venv "$work/build-venv" && "$work/build-venv/bin/pip" install -q build twine
"$work/build-venv/bin/python" -m build pytest-claims -o "$work/dist" > "$work/build.log" 2>&1 || { tail -20 "$work/build.log"; echo "python -m build pytest-claims failed"; exit 1; }
tail -1 "$work/build.log"
"$work/build-venv/bin/twine" check --strict "$work"/dist/* || { echo "twine check failed on pytest-claims' sdist or wheel"; exit 1; }
cmp -s LICENSE pytest-claims/LICENSE || { echo "pytest-claims/LICENSE is not a copy of LICENSE (one licence for both)"; exit 1; }
python3 .ci/check_dist.py "$work/dist" > "$work/check-dist.log" || { cat "$work/check-dist.log"; echo "pytest-claims' sdist or wheel is not publishable (.ci/check_dist.py)"; exit 1; }
grep -E "License|Typing" "$work/check-dist.log"
python3 -m venv "$work/plugin-alone" && "$work/plugin-alone/bin/pip" install -q "$work"/dist/pytest_claims-*.whl
# Installing and building the plugin wrote nothing into the checkout (no build/, no *.egg-info).
written="$(git status --porcelain --ignored -- pytest-claims | grep -v '__pycache__/$' || true)"
if [ -n "$written" ]; then echo "$written"; echo "installing or building pytest-claims wrote into the checkout"; exit 1; fi
alone="$PWD/.ci/plugin_alone.py"  # run from the work folder, so that the checkout is not on its path
(cd "$work" && "$work/plugin-alone/bin/python" "$alone")
mkdir -p "$work/no-ini" && printf 'def test_nothing():\n    assert True\n' > "$work/no-ini/test_nothing.py"
(cd "$work/no-ini" && "$work/plugin-alone/bin/pytest" -q -p no:xdist > out.txt 2>&1) || { cat "$work/no-ini/out.txt"; echo "pytest with the plugin alone failed in a folder without an ini"; exit 1; }
if grep -qiE "claim|warning|error" "$work/no-ini/out.txt"; then cat "$work/no-ini/out.txt"; echo "the plugin is not silent in a folder without an ini"; exit 1; fi
python3 -m venv "$work/example-venv" && "$work/example-venv/bin/pip" install -q "$(ls "$work"/dist/pytest_claims-*.tar.gz)[html]"
cp -r pytest-claims/examples/means "$work/means" && rm -rf "$work/means/reports" "$work/means/.pytest_cache"
(cd "$work/means" && "$work/example-venv/bin/pytest" -q && "$work/example-venv/bin/pytest" -q --claims-mutants --claims-seed 2) > "$work/means.log" 2>&1 \
  || { tail -30 "$work/means.log"; echo "the plugin's example project failed (pytest-claims/examples/means)"; exit 1; }
"$work/example-venv/bin/python" .ci/check_example.py "$work/means/reports" || { echo "the plugin's example project did not reach its registered verdicts"; exit 1; }
# The plugin's own tests, as the plugin's suite (pytest-claims/pyproject.toml): the suite's smoke tier runs
# only the claims and their kernels' reference tests.
# tests/test_docs.py ran above, in .ci/docs
(cd pytest-claims && ../.venv/bin/pytest -q -n 2 -p no:randomly --ignore=tests/test_docs.py) > "$work/plugin-tests.log" 2>&1 \
  || { tail -40 "$work/plugin-tests.log"; echo "the plugin's tests failed (cd pytest-claims && pytest)"; exit 1; }
tail -1 "$work/plugin-tests.log"
python3 .ci/minimum_versions.py > "$work/minimum-versions.log" 2>&1 || { tail -30 "$work/minimum-versions.log"; echo "pytest-claims failed with the oldest versions of its requirements (.ci/minimum_versions.py)"; exit 1; }
# Issue 47's table at CI size (about 10 s of CPU, the pooling rows included): each route's nominal against measured
# type-I error, valid or refused by the plugin in one line (or a stated assumption of the pooled route); any row
# marked NO, or a refusal that did not happen, fails the step.
.venv/bin/python benchmarks/anytime_means_type_one.py --size ci > "$work/anytime-means.log" 2>&1 \
  || { tail -30 "$work/anytime-means.log"; echo "benchmarks/anytime_means_type_one.py failed"; exit 1; }
if grep -qE "\| NO \||NOT REFUSED" "$work/anytime-means.log"; then
  grep -E "\| NO \||NOT REFUSED" "$work/anytime-means.log"; echo "a route of issue 47's table is neither valid nor refused"; exit 1
fi
tail -1 "$work/anytime-means.log"
