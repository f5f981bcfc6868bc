"""Registry ids and tiers of the B statement tests."""

from __future__ import annotations

from claims.tiers import tiers

B1 = "boltzmann/energy-is-gmm-posterior"
B2 = "boltzmann/linear-coupling-form"
B3 = "boltzmann/generation-moments"
B4 = "boltzmann/gibbs-occupancy"
B5 = "boltzmann/winner-take-all"

TIERS = tiers("smoke", "full")
