# types: mypy over pytest-claims, strict on its public API, lenient elsewhere (pytest-claims/pyproject.toml).
# Sourced by .ci/step (which sets work, compare, needs); run it alone with `.ci/step types`.
# The modules whose names pytest_claims/__init__.py exports, and the hooks, are checked with strict's flags; every
# other module with mypy's defaults (none is exempt).
# Its cache goes outside the checkout: the plugin step checks that nothing was written into pytest-claims/.
(cd pytest-claims && ../.venv/bin/mypy --cache-dir "$work/mypy-cache")
