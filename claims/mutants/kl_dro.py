"""Mutants of the KL-DRO kernel (claim L5): the errors a reimplementation of estimators (18), (19) and
PyTorch's Nesterov SGD is likely to make."""

from __future__ import annotations

from pytest_claims.roles.mutants import Mutant

MUTANTS = [
    Mutant(
        "kl-dro-softplus-shift-dropped",
        target="kernels.kl_dro.problem:proposed_weights",
        old="(losses - alpha) / lam + log_rho",
        new="(losses - alpha) / lam",
        why="estimator (19) without the ln rho inside the softplus: weights sigmoid(s)/rho instead of "
        "e^s/(1 + rho e^s)",
    ),
    Mutant(
        "kl-dro-heavy-ball",
        target="kernels.kl_dro.problem:nesterov_update",
        old="step = grad + momentum * buf",
        new="step = buf",
        why="heavy-ball momentum where PyTorch's nesterov=True steps along grad + momentum * buf",
    ),
    Mutant(
        "kl-dro-softmax-not-held-fixed",
        target="kernels.kl_dro.problem:baseline_weights",
        old="    return p\n",
        new="    return p * (1.0 + scaled - xp.sum(p * scaled, axis=-1, keepdims=True))\n",
        why="estimator (18) differentiated through its softmax weights (the released code holds them fixed "
        "under no_grad)",
    ),
    Mutant(
        "kl-dro-softmax-unnormalised",
        target="kernels.kl_dro.problem:baseline_weights",
        old="p = e / xp.sum(e, axis=-1, keepdims=True)",
        new="p = e",
        why="the batch weights exp(l_i - max l) without their normalisation",
    ),
    Mutant(
        "kl-dro-softmax-over-seeds",
        target="kernels.kl_dro.problem:baseline_weights",
        old="p = e / xp.sum(e, axis=-1, keepdims=True)",
        new="p = e / xp.sum(e, axis=0, keepdims=True)",
        why="the batched softmax normalised over the wrong axis of the (seeds, runs, batch) array",
    ),
    Mutant(
        "kl-dro-baseline-uniform-weights",
        target="kernels.kl_dro.problem:baseline_weights",
        old="    return p\n",
        new="    return xp.ones_like(p) / p.shape[-1]\n",
        why="the batch mean of the gradients (ERM's estimator) in place of the softmax-weighted sum",
    ),
    Mutant(
        "kl-dro-gradient-factor-2-dropped",
        target="kernels.kl_dro.program:_gradients",
        old="grad_theta = 2.0 * xp.matmul(coef * rs, X_b)",
        new="grad_theta = xp.matmul(coef * rs, X_b)",
        why="d/dtheta (x theta - y)^2 = 2 r x without its factor 2 (half the stepsize)",
    ),
    Mutant(
        "kl-dro-momentum-dampened",
        target="kernels.kl_dro.problem:nesterov_update",
        old="buf = momentum * buf + grad",
        new="buf = momentum * buf + (1.0 - momentum) * grad",
        why="dampening = momentum (an exponential average), which PyTorch's SGD does not apply by default",
    ),
    Mutant(
        "kl-dro-alpha-gradient-sign",
        target="kernels.kl_dro.program:_gradients",
        old="grad_alpha = 1.0 - xp.sum(coef, axis=-1)",
        new="grad_alpha = xp.sum(coef, axis=-1) - 1.0",
        why="the shift alpha moved up its gradient: d/dalpha of (19) is 1 - mean_B w_i",
    ),
    Mutant(
        "kl-dro-proposed-sum-not-mean",
        target="kernels.kl_dro.program:_gradients",
        old="w / (part.stop - part.start)",
        new="w",
        why="estimator (19) summed over the batch instead of averaged",
    ),
    Mutant(
        "kl-dro-proposed-theta-frozen",
        target="kernels.kl_dro.program:_step_sizes",
        old="n_base,\n        lr[None, :, None],\n",
        new="n_base,\n        (lr * (1.0 - proposed[0]))[None, :, None],\n",
        why="the proposed runs train alpha only (theta left out of the optimiser's parameters): theta stays at "
        "theta_0, so L_final = L_0 and the logbook's rule calls every proposed run converged (the printed claim "
        "would come out true)",
    ),
    Mutant(
        "kl-dro-proposed-step-over-batch",
        target="kernels.kl_dro.program:_step_sizes",
        old="lr = to_backend(etas[active_now], backend, device)",
        new="lr = to_backend((etas[active_now] / np.where(active_now >= n_base_all, constants.batch, 1))"
        ".astype(etas.dtype), backend, device)",
        why="the proposed runs' stepsize divided by the batch size (a per-sample stepsize convention applied to the "
        "batch-mean estimator): at batch 10, eta = 1e-4 acts as 1e-5, inside the table's stable region for large "
        "rho (the printed claim can come out true)",
    ),
]
