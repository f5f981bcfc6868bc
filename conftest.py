"""Thin: loads the verdict plugin and the fixture modules."""
pytest_plugins = [
    "fixtures.options",
    "pytest_claims.plugin",
    "fixtures.evidence",
]
