"""Random generators keyed by stable strings, never by global state or worker identity."""

from __future__ import annotations

import hashlib

import numpy as np


def key_seed(key: str) -> int:
    """64-bit seed from a string key: BLAKE2b 8-byte digest, little-endian (the k-means seed's rule)."""
    digest = hashlib.blake2b(key.encode("ascii"), digest_size=8).digest()
    return int.from_bytes(digest, "little", signed=False)


def keyed_rng(key: str) -> np.random.Generator:
    """NumPy PCG64 generator for one stable key."""
    return np.random.default_rng(key_seed(key))
