"""Thin: loads the project's fixture modules (the verdict plugin, pytest_claims, loads by its entry point)."""

pytest_plugins = [
    "fixtures.options",
    "fixtures.uot_dro",
    "fixtures.schedule",
    "fixtures.serial_threads",
    "pytester",
]
