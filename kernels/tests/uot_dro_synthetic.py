"""What the UOT-DRO kernel's reference tests share: their own master seed and synthetic images (keyed Gaussian
noise with random labels), which keep them independent of the MNIST files."""

from __future__ import annotations

import torch

from kernels.seeding import key_seed

SEED = 4242  # the reference tests' own master seed


def images(count: int, key: str) -> tuple[torch.Tensor, torch.Tensor]:
    """`count` keyed noise images (count, 1, 28, 28) and uniform labels in 0..9."""
    generator = torch.Generator().manual_seed(key_seed(f"uot-dro-reference|{key}"))
    x = torch.randn(count, 1, 28, 28, generator=generator)
    y = torch.randint(0, 10, (count,), generator=generator)
    return x, y
