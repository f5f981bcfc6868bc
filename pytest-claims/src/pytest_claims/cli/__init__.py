"""The commands: `pytest-claims` (init, export) with its skeleton project, `-schedule` and `-compare`."""
