"""Mutants of the eOT kernels (claim L4): the errors a reimplementation of the kernel SGD of both
methods, its fast Gaussian sums, the overflow threshold and the Sinkhorn reference is likely to make."""

from __future__ import annotations

from pytest_claims.roles.mutants import Mutant

MUTANTS = [
    # kernel SGD: the update equations
    Mutant(
        "eot/alpha-update-sign",
        target="kernels.eot:kernel_sgd",
        old="alpha = alpha + step",
        new="alpha = alpha - step",
        why="the proposed method's shift moved against its coefficient (the sign of the alpha update)",
    ),
    Mutant(
        "eot/alpha-never-updated",
        target="kernels.eot:kernel_sgd",
        old="alpha = alpha + step",
        new="alpha = alpha",
        why="the proposed method's shift left at its start value (the scalar update forgotten)",
    ),
    Mutant(
        "eot/alpha-init-ignored",
        target="kernels.eot:kernel_sgd",
        old="alpha = -((xs[:, 0] - ys[:, 0]) ** 2)",
        new="alpha = 0.0 * xs[:, 0]",
        why="the variant start alpha_0 = -c(x_1, y_1) ignored (every run starts at 0)",
    ),
    Mutant(
        "eot/step-size-no-sqrt",
        target="kernels.eot:kernel_sgd",
        old="(config.C / math.sqrt(i))",
        new="(config.C / i)",
        why="step size C/i instead of C/sqrt(i)",
    ),
    Mutant(
        "eot/proposed-weight-without-rho-shift",
        target="kernels.eot:_weight",
        old="xp.clip(s + math.log(config.rho), floor, None)",
        new="xp.clip(s, floor, None)",
        why="sigma_rho(s) = e^s/(1 + rho e^s) written as sigmoid(s)/rho (the ln rho shift dropped)",
    ),
    Mutant(
        "eot/proposed-weight-naive",
        target="kernels.eot:_weight",
        old="return (1.0 / (1.0 + xp.exp(-xp.clip(s + math.log(config.rho), floor, None)))) / config.rho",
        new="return xp.exp(s) / (1.0 + config.rho * xp.exp(s))",
        why="e^s/(1 + rho e^s) evaluated as written: inf/inf = nan once e^s overflows",
    ),
    Mutant(
        "eot/baseline-exp-clipped",
        target="kernels.eot:_weight",
        old="        return xp.exp(s)\n",
        new="        return xp.exp(xp.clip(s, None, 80.0))\n",
        why="a 'safe' exp in the baseline: the overflow the claim is about can no longer happen",
    ),
    Mutant(
        "eot/overflow-checked-on-exponent",
        target="kernels.eot:kernel_sgd",
        old="~xp.isfinite(step), i, nonfinite_seen)",
        new="~xp.isfinite(z), i, nonfinite_seen)",
        why="non-finite values detected on the exponent's argument z (finite) instead of the step",
    ),
    # fast Gaussian sums
    Mutant(
        "eot/gauss-sum-order-low",
        target="kernels.eot:GaussSum.__init__",
        old="self.order, self.cutoff = order, cutoff",
        new="order = self.order = min(order, 6); self.cutoff = cutoff",
        why="the Taylor expansion of the Gaussian sums truncated at order 6 instead of 40",
    ),
    # overflow threshold
    Mutant(
        "eot/threshold-in-float64",
        target="kernels.eot:overflow_threshold",
        old="if np.isfinite(np.exp(dt.type(mid / eps))):",
        new="if np.isfinite(np.exp(mid / eps)):",
        why="the bisection evaluates exp in float64 whatever the dtype",
    ),
    Mutant(
        "eot/threshold-returns-last-finite",
        target="kernels.eot:overflow_threshold",
        old="    return hi\n",
        new="    return lo\n",
        why="the largest finite argument returned instead of the smallest overflowing one",
    ),
    # the reference W_eps
    Mutant(
        "eot/reference-grid-coarsened",
        target="kernels.eot:sinkhorn_dual",
        old="x, a, y, b = quadrature(n)",
        new="n = max(n // 10, 4); x, a, y, b = quadrature(n)",
        why="the reference computed on a grid 10 times coarser than the one asked for",
    ),
    Mutant(
        "eot/quadrature-too-narrow",
        target="kernels.eot:quadrature",
        old="x = np.linspace(MU_MEAN - width * MU_SD, MU_MEAN + width * MU_SD, n)",
        new="x = np.linspace(MU_MEAN - 3.0 * MU_SD, MU_MEAN + 3.0 * MU_SD, n)",
        why="the grid of mu cut at 3 sd: the reference is the value of truncated measures",
    ),
]
