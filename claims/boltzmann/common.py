"""Registry ids and shared pieces of the B statement tests."""

from __future__ import annotations

import numpy as np
import pytest

from fixtures import boltzmann as fixtures_boltzmann
from fixtures.boltzmann import CLUSTER_MEANS, CLUSTER_VARIANCES, PI, SIZES, generate_mixture
from kernels import boltzmann, seeding
from pytest_claims import current_store

B1 = "boltzmann/energy-is-gmm-posterior"
B2 = "boltzmann/linear-coupling-form"
B3 = "boltzmann/generation-moments"
B4 = "boltzmann/gibbs-occupancy"
B5 = "boltzmann/winner-take-all"

TIERS = [pytest.param("smoke", marks=pytest.mark.smoke), pytest.param("full", marks=pytest.mark.full)]


def clustering_data(seed: int, tier: str) -> tuple[np.ndarray, np.ndarray]:
    """The well-separated mixture's labelled sample for a tier (kept in memory: large, cheap to redraw)."""
    return current_store().get_or_compute(
        "boltzmann/clustering-sample",
        dict(seed=seed, points=SIZES[tier].points),
        lambda _: generate_mixture(seed, SIZES[tier].points, CLUSTER_MEANS, CLUSTER_VARIANCES, PI),
        code=[boltzmann, fixtures_boltzmann, seeding],
        persist=False,
    )
