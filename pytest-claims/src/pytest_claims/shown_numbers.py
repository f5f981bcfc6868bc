"""How a number is shown to a reader: a few significant digits, and more where those would show 0 or 1.

A held confidence of 0.999999 or a bound of 1 - 3e-7 cut to 4 digits reads `1`, which is the one thing it is not
(issue 37: "rounding hides confidence"). The report, the terminal messages of the decision helpers and the
exported claim tables all show numbers through `significant`; the full value stays in verdicts.json.
"""

from __future__ import annotations

import math

SIGNIFICANT = 4  # digits shown unless more are needed to tell the value from 0 or 1


def significant(value: float, digits: int = SIGNIFICANT) -> str:
    """`value` to `digits` significant digits (format `g`), or to as many more (up to 17, enough for any float) as
    keep a value that is not 0 or 1 from reading as 0 or 1."""
    if not math.isfinite(value) or value in (0.0, 1.0):
        return f"{value:.{digits}g}"
    for more in range(digits, 18):
        text = f"{value:.{more}g}"
        if float(text) not in (0.0, 1.0):
            return text
    return repr(value)


def counted(count: int, noun: str) -> str:
    """'1 statement', '0 statements', '2 statements': a count with its noun in the right number."""
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"
