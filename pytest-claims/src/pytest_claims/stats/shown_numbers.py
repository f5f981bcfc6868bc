"""How a number is shown to a reader: a few significant digits, and more where those would show 0 or 1.

A rounded value keeps its trailing zeros (3.99987 reads `4.000`), so that a measured value is never shown as an
exact one; a value the short form gives exactly (0.5) stays short.

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
            # Rounded: keep its trailing zeros (3.99987 reads 4.000, a measured value, not the integer 4); a value
            # that the short form gives exactly (0.5, 2.0) stays short.
            return text if float(text) == value else f"{value:#.{more}g}".replace(".e", "e").rstrip(".")
    return repr(value)


def counted(count: int, noun: str) -> str:
    """'1 statement', '0 statements', '2 statements': a count with its noun in the right number."""
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"
