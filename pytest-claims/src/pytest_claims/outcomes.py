"""The vocabulary: the exceptions a statement test ends with, statement outcomes, claim verdicts and their colours.

A leaf module (it imports nothing of the package), so that any module may raise or name these, as pytest's
own `outcomes` module does for its exceptions.
"""

from __future__ import annotations

import enum


class ClaimRefuted(AssertionError):
    """Raised by a statement test when the statement, as asserted, is false on the evidence.

    Only this exception satisfies the strict expected failure of a statement registered as
    refuted, so an import error or a crash can never pass for a refutation.
    """


class StatementInconclusive(Exception):
    """Raised by a statement test whose evidence decides neither the statement nor its negation: `message` says why,
    `needed` is the sample size in total that would decide it (None where none is given; the message then says why).

    The plugin reports the test as `inconclusive` (shown as a skip in pytest's own summary, never a
    failure), and a required inconclusive statement leaves its claim `inconclusive`."""

    def __init__(self, message: str, needed: int | None = None) -> None:
        super().__init__(message)
        self.needed = needed


class Word(enum.StrEnum):
    """A word of the vocabulary: a str equal to its value, shown as its value (str, format, repr), so every file
    and message reads exactly as the plain word would (verdicts.json, the report, error messages)."""

    def __repr__(self) -> str:
        return repr(self.value)


class Outcome(Word):
    """How a statement test ended, the one declaration of the outcome words."""

    HELD = "held"
    REFUTED = "refuted"
    FAILED = "failed"
    ERROR = "error"
    SKIPPED = "skipped"
    INCONCLUSIVE = "inconclusive"  # a statistical statement whose interval straddles its threshold: neither way
    CRASHED = "crashed"  # the process running the test died (an xdist worker crash): contradicts any registered outcome


class Verdict(Word):
    """A claim's verdict, the one declaration of the verdict words, most severe first (the report's sort order)."""

    BROKEN = "broken"
    FALSIFIED = "falsified"
    INTERRUPTED = "interrupted"
    INCONCLUSIVE = "inconclusive"
    REDUCED_SCALE = "reduced scale"
    VERIFIED = "verified"
    NOT_RUN = "not run"
    NOT_SELECTED = "not selected"
    NOT_EXERCISED = "not exercised"


class Expected(Word):
    """What the registry says a statement's tests show (a statement's `expected`)."""

    HOLDS = "holds"
    REFUTED = "refuted"


# The outcomes by their short names (the plugin's modules use these).
HELD, REFUTED, FAILED, ERROR, SKIPPED = Outcome.HELD, Outcome.REFUTED, Outcome.FAILED, Outcome.ERROR, Outcome.SKIPPED
INCONCLUSIVE, CRASHED = Outcome.INCONCLUSIVE, Outcome.CRASHED
OUTCOMES = tuple(Outcome)
DECIDED = (HELD, REFUTED)
UNDECIDED = (SKIPPED, INCONCLUSIVE)  # outcomes that neither agree with the registry nor contradict it
BROKEN = Verdict.BROKEN
VERDICTS = tuple(Verdict)
# The tier a scale-free statement's run is recorded at: it gives the same result at every tier.
ANY_TIER = "any"

VERDICT_COLOURS = {
    Verdict.VERIFIED: "#1a7f37",
    Verdict.FALSIFIED: "#8250df",
    Verdict.INCONCLUSIVE: "#0969da",
    Verdict.INTERRUPTED: "#9a6700",
    Verdict.REDUCED_SCALE: "#bf8700",
    Verdict.NOT_RUN: "#6e7781",
    Verdict.NOT_SELECTED: "#8c959f",
    Verdict.NOT_EXERCISED: "#afb8c1",
    Verdict.BROKEN: "#cf222e",
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
