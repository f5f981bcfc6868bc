"""Thin: loads the verdict plugin and the fixture modules."""
pytest_plugins = [
    "fixtures.options",
    "claims._verdict.plugin",
    "fixtures.evidence",
]
