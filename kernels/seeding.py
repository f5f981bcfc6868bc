"""Random generators keyed by stable strings, never by global state or worker identity: `seeded_rng(seed, key)`
for draws that follow the master seed (a claim's instances and trials), `fixed_rng(key)` for draws that must not
(the kernels' own keyed streams, whose keys carry what they depend on, and the reference tests).

Both are NumPy PCG64 generators seeded by the key's BLAKE2b digest (`key_seed`); `seeded_rng(seed, key)` is
`fixed_rng(f"{seed}|{key}")`, the convention every master-seeded draw of the suite followed by hand before it had
a name. The plugin's `pytest_claims.keyed_rng` is another stream under another rule (a SeedSequence of the master
seed and the key's SHA-256 words): the suite uses it nowhere, and this module's `keyed_rng` below is only the name
the frozen MNIST loader imports, so within the suite each stream has one name.
"""

from __future__ import annotations

import hashlib
import operator

import numpy as np


def key_seed(key: str) -> int:
    """64-bit seed from a string key: BLAKE2b 8-byte digest, little-endian (the k-means seed's rule)."""
    digest = hashlib.blake2b(key.encode("ascii"), digest_size=8).digest()
    return int.from_bytes(digest, "little", signed=False)


def fixed_rng(key: str) -> np.random.Generator:
    """NumPy PCG64 generator for one fixed key: the same stream in every run, whatever the master seed."""
    return np.random.default_rng(key_seed(key))


def seeded_rng(seed: int, key: str) -> np.random.Generator:
    """NumPy PCG64 generator for the draws named `key` under the master seed `seed` (`options.seed`): the stream of
    fixed_rng(f"{seed}|{key}"), so CI's replication seeds vary it. ValueError naming the seed unless it is a
    non-negative integer."""
    try:
        value = operator.index(seed)
    except TypeError:
        raise ValueError(f"seeded_rng: the master seed must be a non-negative integer, got {seed!r}") from None
    if isinstance(seed, bool) or value < 0:
        raise ValueError(f"seeded_rng: the master seed must be a non-negative integer, got {seed!r}")
    return fixed_rng(f"{value}|{key}")


# The frozen kernels/datasets/mnist.py's name for fixed_rng, and nothing else's: that module's source keys L6's
# committed units, so its import cannot be renamed. No other module of the suite may reach a keyed_rng, this one or
# the plugin's (another stream): suite_plugin/tests/test_replication_scope.py checks imports, attributes and calls.
keyed_rng = fixed_rng
