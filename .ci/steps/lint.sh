# lint: every Python file at ruff's 120 columns and ruff-formatted.
# Sourced by .ci/step (which sets work, compare, needs); run it alone with `.ci/step lint`.
# Every Python file (the plugin, claims, kernels, workloads, suite_plugin, tools, benchmarks, .ci) at ruff's 120 columns
# (pyproject.toml) and ruff-formatted.
# (two commands: under set -e a failure before the last command of an && list does not stop the script)
.venv/bin/ruff check --select E501 .
.venv/bin/ruff format --check --line-length 120 .
