"""Mutants of the Safe-KL kernels (claims L1, L1b, L2, L3): the errors a reimplementation of f_rho, its
conjugate, the dual F_rho and its solver, LogSumExp and CVaR is likely to make."""

from __future__ import annotations

from pytest_claims.roles.mutants import Mutant

MUTANTS = [
    # F_rho through the dual
    Mutant(
        "safe-kl/f-rho-without-minus-one",
        target="kernels.safe_kl:f_rho_value",
        old="beta + xp.log(rho) - 1.0 + xp.sum(mu * softplus, axis=-1) / rho",
        new="beta + xp.log(rho) + xp.sum(mu * softplus, axis=-1) / rho",
        why="F_rho's dual formula alpha - 1 + (1/rho) E ln(1 + rho e^(phi - alpha)) without its -1",
    ),
    Mutant(
        "safe-kl/f-rho-log-rho-dropped",
        target="kernels.safe_kl:f_rho_value",
        old="beta + xp.log(rho) - 1.0",
        new="beta - 1.0",
        why="alpha* = beta + ln rho taken as beta: a dropped log term",
    ),
    Mutant(
        "safe-kl/f-rho-softplus-not-over-rho",
        target="kernels.safe_kl:f_rho_value",
        old="xp.sum(mu * softplus, axis=-1) / rho",
        new="xp.sum(mu * softplus, axis=-1)",
        why="the conjugate's factor 1/rho forgotten in the dual objective",
    ),
    Mutant(
        "safe-kl/solver-two-iterations",
        target="kernels.safe_kl:solve_beta",
        old="for _ in range(iterations):",
        new="for _ in range(min(iterations, 2)):",
        why="the root of E sigmoid(phi - beta) = rho after two safeguarded Newton steps (an unconverged solver)",
    ),
    Mutant(
        "safe-kl/newton-step-unguarded",
        target="kernels.safe_kl:solve_beta",
        old=" & (np.abs(newton - b) <= 0.5 * last[rows])",
        new="",
        why="Newton kept inside its bracket only, without rtsafe's step-halving rule (it oscillates on wide instances)",
    ),
    Mutant(
        "safe-kl/solver-target-rho-off-1pct",
        target="kernels.safe_kl:solve_beta",
        old="log_rho = np.log(rho)",
        new="log_rho = np.log(1.01 * rho)",
        why="the stationarity condition solved for E sigmoid = 1.01 rho: a constant off by 1%",
    ),
    Mutant(
        "safe-kl/logsumexp-max-shift-dropped",
        target="kernels.safe_kl:logsumexp_weighted",
        old="return top[..., 0] + xp.log(",
        new="return xp.log(",
        why="the max-shift of log-sum-exp subtracted but not added back",
    ),
    Mutant(
        "safe-kl/optimal-shift-log-rho-sign",
        target="kernels.safe_kl:optimal_shift",
        old="solve_beta(phi, mu, rho) + xp.log(rho)",
        new="solve_beta(phi, mu, rho) - xp.log(rho)",
        why="alpha* = beta - ln rho: a wrong sign",
    ),
    Mutant(
        "safe-kl/optimal-density-uncapped",
        target="kernels.safe_kl:optimal_density",
        old="return _sigmoid(phi - solve_beta(phi, mu, rho)[:, None]) / rho[:, None]",
        new="return np.exp(phi - solve_beta(phi, mu, rho)[:, None]) / rho[:, None]",
        why="the optimal density e^(phi - alpha*) of plain KL, without the cap 1/rho of w_rho",
    ),
    # the generator f_rho and its conjugate
    Mutant(
        "safe-kl/f-rho-plus-one-dropped",
        target="kernels.safe_kl:f_rho",
        old="a + b + 1.0",
        new="a + b",
        why="the generator without its +1",
    ),
    Mutant(
        "safe-kl/f-rho-rest-term-1pct-low",
        target="kernels.safe_kl:f_rho",
        old="xp.zeros_like(rest)) / rho",
        new="xp.zeros_like(rest)) / (1.01 * rho)",
        why="the term ((1 - rho t)/rho) ln(1 - rho t) with a constant off by 1% (min f'' = 3.98 rho)",
    ),
    Mutant(
        "safe-kl/f-rho-entropy-term-1pct-low",
        target="kernels.safe_kl:f_rho",
        old="a + b + 1.0",
        new="0.99 * a + b + 1.0",
        why="the term t ln t with a constant off by 1% (min f'' = 3.98 rho)",
    ),
    Mutant(
        "safe-kl/f-rho-second-constant-1pct",
        target="kernels.safe_kl:f_rho_second",
        old="rho / (1.0 - rho * t)",
        new="1.01 * rho / (1.0 - rho * t)",
        why="f_rho''(t) = 1/t + rho/(1 - rho t) with its second term off by 1%",
    ),
    Mutant(
        "safe-kl/conjugate-sign",
        target="kernels.safe_kl:f_rho_conjugate",
        old="s + np.log(rho)",
        new="s - np.log(rho)",
        why="f_rho*(s) = (1/rho) ln(1 + e^(s - ln rho)) - 1: a wrong sign in the conjugate",
    ),
    Mutant(
        "safe-kl/conjugate-minus-one-dropped",
        target="kernels.safe_kl:f_rho_conjugate",
        old="/ rho - 1.0",
        new="/ rho",
        why="the rescaled SoftPlus without its -1",
    ),
    Mutant(
        "safe-kl/conjugate-prime-shift-sign",
        target="kernels.safe_kl:f_rho_conjugate_prime",
        old="_sigmoid(s + np.log(rho)) / rho",
        new="_sigmoid(s - np.log(rho)) / rho",
        why="w_rho(s) = sigmoid(s - ln rho)/rho: a wrong sign (the same Lipschitz constant, a different function)",
    ),
    Mutant(
        "safe-kl/conjugate-prime-scale-1pct",
        target="kernels.safe_kl:f_rho_conjugate_prime",
        old="_sigmoid(s + np.log(rho)) / rho",
        new="_sigmoid(s + np.log(rho)) / (0.99 * rho)",
        why="w_rho with its factor 1/rho off by 1% (Lipschitz constant 1/(3.96 rho))",
    ),
    Mutant(
        "safe-kl/conjugate-second-constant-1pct",
        target="kernels.safe_kl:f_rho_conjugate_second",
        old="return p * (1.0 - p) / rho",
        new="return p * (1.0 - p) / (0.99 * rho)",
        why="(f_rho*)'' off by 1% (its maximum 1/(3.96 rho))",
    ),
    # CVaR
    Mutant(
        "safe-kl/cvar-lower-tail",
        target="kernels.safe_kl:_sorted_desc",
        old='np.argsort(-phi, axis=-1, kind="stable")',
        new='np.argsort(phi, axis=-1, kind="stable")',
        why="the kinks of the variational CVaR walked from the bottom (the lower tail's order)",
    ),
    Mutant(
        "safe-kl/cvar-tail-weight-1pct",
        target="kernels.safe_kl:cvar_variational",
        old="axis=-1) / rho[:, 0])",
        new="axis=-1) / (1.01 * rho[:, 0]))",
        why="the tail weight 1/rho of b + (1/rho) E (phi - b)_+ off by 1%",
    ),
    Mutant(
        "safe-kl/cvar-boundary-atom-whole",
        target="kernels.safe_kl:cvar_tail_average",
        old="taken = xp.minimum(xp.maximum(rho[:, None] - before, xp.zeros_like(before)), weights)",
        new="taken = xp.where(before < rho[:, None], weights, xp.zeros_like(weights))",
        why="the tail average taking the boundary atom whole instead of splitting it",
    ),
]
