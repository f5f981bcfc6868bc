"""The commands: `pytest-claims` (init, export) with its skeleton project, `-schedule` and `-compare`."""

_CONTROL = {code: f"\\x{code:02x}" for code in [*range(32), *range(127, 160)]}


def say(line: str) -> None:
    """A line of a command's report on stdout, the control characters of what the files it read hold (ESC, CR, LF,
    CSI) shown as \\xNN: a file from elsewhere cannot clear the terminal, retitle it or forge a line of the report."""
    print(line.translate(_CONTROL))
