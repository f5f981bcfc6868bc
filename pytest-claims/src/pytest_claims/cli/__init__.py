"""The commands `pytest-claims` (init, export) with its skeleton project, and `pytest-claims-schedule`."""
