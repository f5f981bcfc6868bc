"""The vocabulary: the exceptions a statement test ends with, statement outcomes, claim verdicts and their colours.

A leaf module (it imports nothing of the package), so that any module may raise or name these, as pytest's
own `outcomes` module does for its exceptions.
"""

from __future__ import annotations


class ClaimRefuted(AssertionError):
    """Raised by a statement test when the statement, as asserted, is false on the evidence.

    Only this exception satisfies the strict expected failure of a statement registered as
    refuted, so an import error or a crash can never pass for a refutation.
    """


class StatementInconclusive(Exception):
    """Raised by a statement test whose evidence decides neither the statement nor its negation.

    The plugin reports the test as `inconclusive` (shown as a skip in pytest's own summary, never a
    failure), and a required inconclusive statement leaves its claim `inconclusive`."""

    def __init__(self, message: str, needed: int | None = None) -> None:
        super().__init__(message)
        self.needed = needed


# Statement outcomes.
HELD, REFUTED, FAILED, ERROR, SKIPPED = "held", "refuted", "failed", "error", "skipped"
INCONCLUSIVE = (
    "inconclusive"  # a statistical statement whose interval straddles its threshold: neither shown nor refuted
)
CRASHED = "crashed"  # the process running the test died (an xdist worker crash): contradicts any registered outcome
DECIDED = (HELD, REFUTED)
UNDECIDED = (SKIPPED, INCONCLUSIVE)  # outcomes that neither agree with the registry nor contradict it
# Claim verdicts, most severe first (the report's sort order).
BROKEN = "broken"
VERDICTS = (
    BROKEN,
    "falsified",
    "interrupted",
    "inconclusive",
    "reduced scale",
    "verified",
    "not run",
    "not selected",
    "not exercised",
)

VERDICT_COLOURS = {
    "verified": "#1a7f37",
    "falsified": "#8250df",
    "inconclusive": "#0969da",
    "interrupted": "#9a6700",
    "reduced scale": "#bf8700",
    "not run": "#6e7781",
    "not selected": "#8c959f",
    "not exercised": "#afb8c1",
    "broken": "#cf222e",
}
OUTCOME_COLOURS = {
    HELD: "#1a7f37",
    REFUTED: "#8250df",
    INCONCLUSIVE: "#0969da",
    SKIPPED: "#6e7781",
    FAILED: "#cf222e",
    ERROR: "#cf222e",
    CRASHED: "#cf222e",
}
NEUTRAL_COLOUR = "#6e7781"  # an outcome or verdict without a colour of its own
