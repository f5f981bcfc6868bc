"""The tiers a statement test runs at: one pytest.param per tier (or per part of a tier), carrying its scale marker.
The tier names are pytest.ini's claims_tiers, the one place they are declared."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import pytest

from claims.configuration import ini_args

SCALES = tuple(ini_args("claims_tiers"))


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


def tier_parts(name: Callable[[Any], str], **parts: Sequence) -> list:
    """Parametrisation values (tier, part) for a statement whose tiers run in parts, each marked with its
    tier's scale marker: a tier given one part runs as one test named by the tier ("smoke"); a tier given
    several runs each as a test of its own, named by the tier and `name(part)` ("full-sigma2=45.35").

    `tier_parts(rows, smoke=[SMOKE.high_noise], full=[(s,) for s in FULL.high_noise])`: smoke decides
    every high-noise row in one test, full one row per test (so that no test dominates under -n 64).
    """
    unknown = sorted(set(parts) - set(SCALES))
    if unknown:
        raise ValueError(f"tier_parts(): unknown scale {', '.join(unknown)} (the scales are {', '.join(SCALES)})")
    return [
        pytest.param(
            scale, part, marks=getattr(pytest.mark, scale), id=scale if len(of) == 1 else f"{scale}-{name(part)}"
        )
        for scale, of in parts.items()
        for part in of
    ]
