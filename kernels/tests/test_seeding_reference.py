"""Reference tests of the keyed generators: different keys give independent streams, and every part
of the k-means trial key (the trial index included) decides the stream.

Every statistical check here is a test at level ALPHA (Bonferroni inside each test), on fixed keys,
so the outcome is deterministic; a generator that ignored the trial part of its key (every trial the
same data), or that gave neighbouring trials shared or correlated draws, fails them by tens of
standard deviations.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from kernels import kmeans as km
from kernels.seeding import fixed_rng, key_seed, seeded_rng

ALPHA = 1e-3
SEED = 29589


@pytest.mark.smoke
def test_key_seed_is_blake2b_little_endian_and_distinct():
    import hashlib

    key = "section4|29589|2|40|20|1|0"
    assert key_seed(key) == int.from_bytes(hashlib.blake2b(key.encode(), digest_size=8).digest(), "little")
    seeds = {key_seed(f"kmeans|cell|{t}") for t in range(20_000)}
    assert len(seeds) == 20_000


@pytest.mark.smoke
def test_seeded_rng_is_the_fixed_stream_of_the_seed_and_key():
    """seeded_rng(seed, key) is fixed_rng(f"{seed}|{key}") (the convention the master-seeded draws followed before it
    had a name, so their streams did not change), another stream under another seed, and refuses a seed that is not
    a non-negative integer in one line."""
    drawn = seeded_rng(SEED, "lse/chords|smoke").random(8)
    assert np.array_equal(drawn, fixed_rng(f"{SEED}|lse/chords|smoke").random(8))
    assert not np.array_equal(drawn, seeded_rng(SEED + 1, "lse/chords|smoke").random(8))
    assert not np.array_equal(drawn, fixed_rng("lse/chords|smoke").random(8))
    assert np.array_equal(seeded_rng(np.int64(SEED), "k").random(4), seeded_rng(SEED, "k").random(4))
    for bad in (-1, 1.5, "29589", True, None):
        with pytest.raises(ValueError, match="master seed must be a non-negative integer"):
            seeded_rng(bad, "k")


def _streams(keys: list[str], size: int) -> np.ndarray:
    return np.stack([fixed_rng(k).standard_normal(size) for k in keys])


def _pairwise_correlation_z(streams: np.ndarray) -> np.ndarray:
    """sqrt(n) r for every pair of streams (about N(0, 1) each for independent streams)."""
    centred = streams - streams.mean(axis=1, keepdims=True)
    centred /= np.linalg.norm(centred, axis=1, keepdims=True)
    r = centred @ centred.T
    upper = np.triu_indices(len(streams), 1)
    return np.sqrt(streams.shape[1]) * r[upper]


@pytest.mark.smoke
def test_streams_of_different_keys_are_uncorrelated():
    # Keys that differ only in the trial part, in the master seed, and in one character elsewhere.
    families = {
        "trial": [km.trial_key(SEED, 2, 40, 2000, 100.0, t) for t in range(48)],
        "master seed": [km.trial_key(SEED + s, 2, 40, 2000, 100.0, 0) for s in range(48)],
        "dimension": [km.trial_key(SEED, 2, 40, 2000 + d, 100.0, 0) for d in range(48)],
    }
    tests = sum(len(keys) * (len(keys) - 1) // 2 for keys in families.values())
    threshold = stats.norm.isf(ALPHA / 2 / tests)
    for name, keys in families.items():
        z = _pairwise_correlation_z(_streams(keys, 4000))
        assert np.max(np.abs(z)) < threshold, (
            f"{name}: streams correlated, largest |sqrt(n) r| = {np.max(np.abs(z)):.1f} >= {threshold:.2f}"
        )


@pytest.mark.smoke
def test_first_draws_across_keys_are_independent_uniforms():
    # The first uniform of each of 5000 trial keys: uniform (Kolmogorov-Smirnov), and consecutive
    # keys' first draws uncorrelated (serial correlation), each at ALPHA / 2.
    first = np.array([fixed_rng(km.trial_key(SEED, 2, 40, 200, 1.0, t)).random() for t in range(5000)])
    assert stats.kstest(first, "uniform").pvalue > ALPHA / 2
    z = np.sqrt(first.size - 1) * np.corrcoef(first[:-1], first[1:])[0, 1]
    assert abs(z) < stats.norm.isf(ALPHA / 4)


@pytest.mark.smoke
def test_the_trial_part_of_the_key_decides_the_trial_data():
    keys = [km.trial_key(SEED, 2, 40, 200, 100.0, t) for t in range(4)]
    assert len(set(keys)) == 4 and all(k.endswith(f"|{t}") for t, k in enumerate(keys))
    data, _, starts = km.make_trials(SEED, 200, 100.0, 40)
    # Every trial's data and start are its own; trial t alone equals row t of the batch.
    flat = data.reshape(len(data), -1)
    assert len({row.tobytes() for row in flat}) == len(data)
    z = _pairwise_correlation_z(flat)
    assert np.max(np.abs(z)) < stats.norm.isf(ALPHA / 2 / z.size), "trial data correlated across trials"
    assert len({s.tobytes() for s in starts}) == len(starts)
    for t in (0, 7, 39):
        alone, _, start = km.make_trials(SEED, 200, 100.0, [t])
        assert np.array_equal(alone[0], data[t]) and np.array_equal(start[0], starts[t])


@pytest.mark.smoke
def test_wishart_trials_are_independent():
    # The Wishart route fills its streams trial by trial: G_00 (a scaled chi-square) of consecutive
    # trials is uncorrelated, and no two trials share a Gram matrix.
    gram, _, starts = km.sample_gram_wishart(SEED, 1_000, 100.0, 2000)
    g = gram[:, 0, 0]
    assert np.unique(g).size == g.size and len({s.tobytes() for s in starts}) == len(starts)
    z = np.sqrt(g.size - 1) * np.corrcoef(g[:-1], g[1:])[0, 1]
    assert abs(z) < stats.norm.isf(ALPHA / 2)


@pytest.mark.smoke
def test_reference_tests_cannot_read_the_master_seed(options):
    # CI reruns only claims/ under fresh master seeds: a reference test that read it would go unreplicated
    # (kernels/tests/conftest.py; suite_plugin/tests/test_replication_scope.py checks the other ways in).
    with pytest.raises(RuntimeError, match="must not depend on the master seed"):
        options.seed  # noqa: B018
