"""The master seed of a run: the option `--claims-seed` (alias `--seed`), the ini key `claims_seed`, the fixture, and
generators keyed by a string (`seed_sequence`, `keyed_rng`: NumPy's SeedSequence from the master seed and a key).

One number decides every random draw of a run, so a run is repeated by its seed and a replication set (runs under
several seeds, merged) is made by changing it. A draw is keyed by what it is for (`"permutations|n=20"`), not by the
order in which the tests run, so it is the same under `-n 8`, in a subset of the tests, and in a rerun of one test.
NumPy is imported only when a keyed generator is asked for, so the core install works without it.
"""

from __future__ import annotations

import hashlib
from typing import Any

import pytest

from pytest_claims import context
from pytest_claims.roles import options

SEED_INI = "claims_seed"
DEFAULT_SEED = 0
MASTER_SEED = pytest.StashKey[int]()


def parse_seed(raw: Any, where: str) -> int:
    """A master seed from an option or ini value: a non-negative integer, else one line naming where it came from."""
    try:
        seed = int(str(raw).strip())
    except ValueError:
        raise pytest.UsageError(f"{where} must be a non-negative integer, got {raw!r}") from None
    if seed < 0:
        raise pytest.UsageError(f"{where} must be a non-negative integer, got {seed}")
    return seed


def master_seed(config: pytest.Config) -> int:
    """The run's master seed: `--claims-seed`, else the ini key `claims_seed`, else 0. Resolved once; afterwards
    `config.getoption("claims_seed")` returns it too (an int), as a project's hooks may ask for it that way."""
    if MASTER_SEED in config.stash:
        return config.stash[MASTER_SEED]
    given = config.getoption("claims_seed", None)
    if given is not None:
        args = [str(a).partition("=")[0] for a in config.invocation_params.args]
        names = options.registered(config, "--claims-seed")
        typed = next((name for name in names[::-1] if name in args), names[0])
        seed = parse_seed(given, typed)  # named as the user typed it (the alias or the prefixed name)
    else:
        raw = config.getini(SEED_INI)
        seed = parse_seed(raw, f"ini {SEED_INI}") if str(raw).strip() else DEFAULT_SEED
    config.stash[MASTER_SEED] = seed
    config.option.claims_seed = seed
    return seed


def key_words(key: str) -> tuple[int, ...]:
    """A string key as four 32-bit words (the first 128 bits of its SHA-256): the same on every machine, Python
    and run, unlike hash(), which Python salts per process."""
    digest = hashlib.sha256(key.encode("utf-8")).digest()
    return tuple(int.from_bytes(digest[i : i + 4], "little") for i in range(0, 16, 4))


def _seed_now(seed: int | None) -> int:
    if seed is not None:
        return seed
    session = context.SESSION.get()
    if session is None or session.seed is None:
        raise RuntimeError("keyed generators outside a pytest-claims session need seed= (the master seed)")
    return session.seed


def seed_sequence(key: str, *, seed: int | None = None) -> Any:
    """numpy.random.SeedSequence(master seed, spawn_key = the key's words): independent streams for different
    keys, one stream per (seed, key). `seed` defaults to the running session's master seed. Returns the SeedSequence."""
    import numpy as np

    return np.random.SeedSequence(_seed_now(seed), spawn_key=key_words(key))


def keyed_rng(key: str, *, seed: int | None = None) -> Any:
    """Returns numpy.random.default_rng(seed_sequence(key, seed=seed)): a PCG64 generator for the draws named `key`
    (`seed`: the master seed, by default the running session's)."""
    import numpy as np

    return np.random.default_rng(seed_sequence(key, seed=seed))


@pytest.fixture(scope="session")
def claims_seed(pytestconfig: pytest.Config) -> int:
    """The run's master seed (--seed, else the ini key claims_seed, else 0)."""
    return master_seed(pytestconfig)
