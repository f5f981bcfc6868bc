"""Mutants of the UOT-DRO kernel (claim L6): the errors a reimplementation of objectives (21), (22), the
inner maximisation and a batched program of many runs is likely to make."""

from __future__ import annotations

from pytest_claims.roles.mutants import Mutant

MUTANTS = [
    Mutant(
        "uot-dro-inner-sign-flipped",
        target="kernels.uot_dro.objectives:inner_maximise",
        old="v.mul_(momentum).add_(g, alpha=lr)",
        new="v.mul_(momentum).add_(g, alpha=-lr)",
        why="the inner problem descended instead of ascended: z* then lowers l(theta; z) - lambda ||z - x||^2",
    ),
    Mutant(
        "uot-dro-inner-update-discarded",
        target="kernels.uot_dro.objectives:inner_maximise",
        old="        u.add_(v)\n",
        new="        u.add(v)  # result never assigned\n",
        why="the Nesterov iterate never moves (an unassigned expression): lhat is the clean loss",
    ),
    Mutant(
        "uot-dro-softplus-shift-dropped",
        target="kernels.uot_dro.objectives:proposed_loss",
        old="(lhat - alpha) / lb + math.log(rho)",
        new="(lhat - alpha) / lb",
        why="(22) without the ln rho inside the softplus",
    ),
    Mutant(
        "uot-dro-proposed-scale-inverted",
        target="kernels.uot_dro.objectives:proposed_loss",
        old="(lb / rho) * F.softplus",
        new="(lb * rho) * F.softplus",
        why="lambda beta rho for lambda beta / rho in front of the softplus: (22) is then unbounded below in alpha",
    ),
    Mutant(
        "uot-dro-proposed-gradient-detached",
        target="kernels.uot_dro.objectives:run_objectives",
        old="proposed_loss(lhat[nb : nb + npr], alpha",
        new="proposed_loss(lhat[nb : nb + npr].detach(), alpha",
        why="the proposed block's loss cut from the graph: only alpha trains",
    ),
    Mutant(
        "uot-dro-erm-loss-detached",
        target="kernels.uot_dro.objectives:run_objectives",
        old="lhat[nb + npr :].mean(dim=1))",
        new="lhat[nb + npr :].detach().mean(dim=1))",
        why="the ERM block's loss cut from the graph: ERM never trains",
    ),
    Mutant(
        "uot-dro-baseline-as-log",
        target="kernels.uot_dro.objectives:baseline_loss",
        old="torch.exp(lhat / (LAMBDA * BETA))",
        new="(lhat / (LAMBDA * BETA))",
        why="(21) 'stabilised' by dropping the exponential: the baseline can then no longer overflow",
    ),
    Mutant(
        "uot-dro-baseline-temperature",
        target="kernels.uot_dro.objectives:baseline_loss",
        old="torch.exp(lhat / (LAMBDA * BETA))",
        new="torch.exp(lhat / (10.0 * LAMBDA * BETA))",
        why="beta = 10 for beta = 1 in (21): a ten times flatter exponential",
    ),
    Mutant(
        "uot-dro-overflow-leaks",
        target="kernels.uot_dro.trainer:Program._update",
        old="healthy = finite  # per run",
        new="healthy = finite.all().expand_as(finite)  # per run",
        why="one run's overflow decided for the whole batch: every run is stopped with it",
    ),
    Mutant(
        "uot-dro-stepsize-shared",
        target="kernels.uot_dro.trainer:Program._update",
        old="rate = self.lr\n",
        new="rate = self.lr.max().expand_as(self.lr)\n",
        why="one stepsize (the batch's largest) for every run instead of each run's own",
    ),
]
