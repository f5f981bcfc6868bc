"""The toy paper's computations: three means and a random permutation (standard library only)."""

from __future__ import annotations

import math
import random


def arithmetic_mean(xs: list[float]) -> float:
    return math.fsum(xs) / len(xs)


def geometric_mean(xs: list[float]) -> float:
    return math.exp(math.fsum(math.log(x) for x in xs) / len(xs))


def harmonic_mean(xs: list[float]) -> float:
    return len(xs) / math.fsum(1.0 / x for x in xs)


def random_permutation(n: int, rng: random.Random) -> list[int]:
    """Fisher-Yates: every permutation of range(n) equally likely."""
    p = list(range(n))
    for i in range(n - 1, 0, -1):
        j = rng.randrange(i + 1)
        p[i], p[j] = p[j], p[i]
    return p


def has_fixed_point(p: list[int]) -> bool:
    return any(v == i for i, v in enumerate(p))
