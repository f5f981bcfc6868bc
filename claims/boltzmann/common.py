"""Registry ids and shared pieces of the B statement tests."""
from __future__ import annotations

import functools

import numpy as np
import pytest

from fixtures.boltzmann import CLUSTER_MEANS, CLUSTER_VARIANCES, PI, SIZES, generate_mixture

B1 = "boltzmann/energy-is-gmm-posterior"
B2 = "boltzmann/linear-coupling-form"
B3 = "boltzmann/generation-moments"
B4 = "boltzmann/gibbs-occupancy"
B5 = "boltzmann/winner-take-all"
ALPHA = 1e-3  # false-alarm rate of every exact sampling bound in B3 and B4

TIERS = [pytest.param("smoke", marks=pytest.mark.smoke), pytest.param("full", marks=pytest.mark.full)]


@functools.lru_cache(maxsize=4)
def clustering_data(seed: int, tier: str) -> tuple[np.ndarray, np.ndarray]:
    """The well-separated mixture's labelled sample for a tier (cached per process)."""
    return generate_mixture(seed, SIZES[tier].points, CLUSTER_MEANS, CLUSTER_VARIANCES, PI)
