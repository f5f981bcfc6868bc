"""A statement's finding: the numbers it shows first (headline), the evidence it keeps (record) and its decision, made
by a pure function of the statement's data and levels, so that the decision is tested directly on constructed data
and the statement test only wires data to a finding and the finding to its evidence."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Finding:
    """What a statement shows (headline), what it keeps (record) and its decision: `decide()` returns when the
    statement holds, raises ClaimRefuted when it is refuted, StatementInconclusive when the data decide neither."""

    headline: dict[str, Any]
    record: dict[str, Any]
    decide: Callable[[], Any]
    cases: list[dict[str, Any]] = field(default_factory=list)

    def show(self, evidence: Any) -> None:
        """Record the headline, then the rest, on the statement's evidence (pytest_claims.Evidence)."""
        evidence.headline(**self.headline)
        evidence.record(**self.record)
