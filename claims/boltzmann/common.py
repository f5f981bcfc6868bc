"""The tiers of the B statement tests (their claim ids: claims.ids)."""

from __future__ import annotations

from claims.tiers import tiers


TIERS = tiers("smoke", "full")
