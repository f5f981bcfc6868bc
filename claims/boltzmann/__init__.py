"""Paper B: Gaussian-categorical clustering as a Boltzmann machine (claims B1-B5)."""
