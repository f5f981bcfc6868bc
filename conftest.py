"""Thin: loads the suite's own plugin, suite_plugin/ (the verdict plugin, pytest_claims, loads by its entry point)."""

pytest_plugins = [
    "suite_plugin.options",
    "suite_plugin.l6_options",
    "suite_plugin.schedule",
    "pytester",
]
