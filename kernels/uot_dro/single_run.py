"""UOT-DRO (claim L6): the explicit single-run route, one nn.Module and torch.optim.SGD per run as the
released code trains it (reference tests, benchmark); independent of the batched program's code."""

from __future__ import annotations

import math

import torch
import torch.nn as nn
import torch.nn.functional as F

from kernels.uot_dro.model import SimpleCNN, init_parameters
from kernels.uot_dro.objectives import BETA, INNER_MOMENTUM, INNER_STEPS, LAMBDA, RHO
from kernels.uot_dro.trainer import Run


class SingleRun:
    """One run as the released code trains it: its own SimpleCNN, torch.optim.SGD, the inner
    maximisation written against the module, F.cross_entropy and F.softplus; it stops at the first
    non-finite loss, gradient or parameter. Independent of the batched program's code."""

    def __init__(self, run: Run, master_seed: int, device: str = "cpu") -> None:
        self.run = run
        self.model = SimpleCNN().to(device)
        with torch.no_grad():
            for name, value in init_parameters(master_seed, run.seed).items():
                self.model.get_parameter(name).copy_(value)
        self.alpha = nn.Parameter(torch.zeros(1, device=device))
        parameters = list(self.model.parameters()) + ([self.alpha] if run.method == "proposed" else [])
        self.optimizer = torch.optim.SGD(parameters, lr=run.lr)
        self.overflow_step = -1
        self.step_count = 0

    def _inner(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        self.model.requires_grad_(False)
        lr, momentum = 0.1 / LAMBDA, INNER_MOMENTUM
        u, v = x.clone(), torch.zeros_like(x)
        for _ in range(INNER_STEPS):
            z = (u + momentum * v).requires_grad_(True)
            value = F.cross_entropy(self.model(z), y, reduction="sum") - LAMBDA * ((z - x) ** 2).sum()
            (g,) = torch.autograd.grad(value, z)
            v = momentum * v + lr * g
            u = (u + v).detach()
        self.model.requires_grad_(True)
        return u

    def step(self, x: torch.Tensor, y: torch.Tensor) -> None:
        """One SGD step on one image x (1, 1, 28, 28), label y (1,); nothing once it has overflowed."""
        if self.overflow_step >= 0:
            return
        self.step_count += 1
        lb = LAMBDA * BETA
        if self.run.method == "erm":
            loss = F.cross_entropy(self.model(x), y)
        else:
            u = self._inner(x, y)
            lhat = F.cross_entropy(self.model(u), y, reduction="none") - LAMBDA * ((u - x) ** 2).sum(dim=(1, 2, 3))
            if self.run.method == "baseline":
                loss = torch.exp(lhat / lb).mean()
            else:
                loss = self.alpha[0] + (lb / RHO) * F.softplus((lhat - self.alpha[0]) / lb + math.log(RHO)).mean()
        self.optimizer.zero_grad()
        loss.backward()
        before = [p.detach().clone() for group in self.optimizer.param_groups for p in group["params"]]
        self.optimizer.step()
        params = [p for group in self.optimizer.param_groups for p in group["params"]]
        if not (torch.isfinite(loss) and all(bool(torch.isfinite(p).all()) for p in params)):
            self.overflow_step = self.step_count
            with torch.no_grad():  # frozen at the last finite parameters
                for p, old in zip(params, before):
                    p.copy_(old)

    def parameters(self) -> dict[str, torch.Tensor]:
        return {name: p.detach() for name, p in self.model.named_parameters()}
