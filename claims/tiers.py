"""The tiers a statement test runs at: one pytest.param per tier, carrying its scale marker."""

from __future__ import annotations

import pytest

SCALES = ("smoke", "full", "gpu")


def tiers(*scales: str, **labels: str) -> list:
    """Parametrisation values for a test's `tier` argument, each marked with its scale marker.

    `tiers("smoke", "full")` gives the values "smoke" and "full" under the markers of the same names;
    a keyword names a scale and the label the test keys its sizes by: `tiers(smoke="tiny", gpu="nightly")`
    gives "tiny" (marked smoke) and "nightly" (marked gpu). Positional scales come first, then the
    keywords in the order written; a scale may appear in both (`tiers("smoke", "full", full="full-100k")`).
    """
    pairs = [(scale, scale) for scale in scales] + list(labels.items())
    unknown = sorted({scale for scale, _ in pairs} - set(SCALES))
    if unknown:
        raise ValueError(f"tiers(): unknown scale {', '.join(unknown)} (the scales are {', '.join(SCALES)})")
    return [pytest.param(label, marks=getattr(pytest.mark, scale)) for scale, label in pairs]
