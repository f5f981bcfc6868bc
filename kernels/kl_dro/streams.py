"""KL-DRO (claim L5): the minibatch streams, one permutation of the rows per stream and epoch: keyed (the suite's
grids) or replayed from the released code's torch seeds."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from kernels.kl_dro.problem import EPOCHS
from kernels.seeding import fixed_rng


class KeyedStreams:
    """One stream per key: epoch e's permutation comes from fixed_rng(f"{key}|epoch={e}")."""

    def __init__(self, keys: Sequence[str]) -> None:
        self.keys = list(keys)

    def __len__(self) -> int:
        return len(self.keys)

    def permutations(self, epoch: int, n: int) -> np.ndarray:
        return np.stack([fixed_rng(f"{k}|epoch={epoch}").permutation(n) for k in self.keys])


class ReleasedStreams:
    """The permutations the released code draws for torch seeds: torch.manual_seed(seed); nn.Linear(8, 1)
    (its initialisation consumes the generator); then per epoch the DataLoader iterator's base seed and
    RandomSampler's seed, and torch.randperm under that seed. Replayed on private generators."""

    def __init__(self, seeds: Sequence[int], features: int = 8, epochs: int = EPOCHS) -> None:
        import torch

        self.seeds = list(seeds)
        self.sampler_seeds = np.zeros((len(self.seeds), epochs), dtype=np.int64)
        bound = 1.0 / math.sqrt(features)  # kaiming_uniform(a=sqrt 5) and the bias share this bound
        for i, seed in enumerate(self.seeds):
            g = torch.Generator().manual_seed(int(seed))
            torch.empty(1, features).uniform_(-bound, bound, generator=g)  # weight
            torch.empty(1).uniform_(-bound, bound, generator=g)  # bias
            for e in range(epochs):
                torch.empty((), dtype=torch.int64).random_(generator=g)  # _BaseDataLoaderIter._base_seed
                self.sampler_seeds[i, e] = int(torch.empty((), dtype=torch.int64).random_(generator=g).item())

    def __len__(self) -> int:
        return len(self.seeds)

    def permutations(self, epoch: int, n: int) -> np.ndarray:
        import torch

        return np.stack(
            [
                torch.randperm(n, generator=torch.Generator().manual_seed(int(s))).numpy()
                for s in self.sampler_seeds[:, epoch]
            ]
        )
