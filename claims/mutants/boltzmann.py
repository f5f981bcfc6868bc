"""Mutants of the Boltzmann-machine kernels (claims B1-B5): wrong signs, dropped terms, constants off
by 1%, a lost precision, a sampler with slightly wrong probabilities, a Gibbs step that reuses v."""

from __future__ import annotations

from pytest_claims.roles.mutants import Mutant

MUTANTS = [
    # Energies, logits, softmax (B1, B2, B4)
    Mutant(
        "boltzmann/log-det-dropped",
        target="kernels.boltzmann:component_energies",
        old="    if log_det:\n",
        new="    if False:\n",
        why="the energy without its 1/2 sum ln sigma^2 term (matters for unequal variances only)",
    ),
    Mutant(
        "boltzmann/log-det-off-1pct",
        target="kernels.boltzmann:component_energies",
        old="0.5 * xp.sum(xp.log(variances), axis=-1)",
        new="0.505 * xp.sum(xp.log(variances), axis=-1)",
        why="the log-determinant's constant 1/2 off by 1%",
    ),
    Mutant(
        "boltzmann/prior-sign",
        target="kernels.boltzmann:component_energies",
        old="- xp.log(weights)[None, :]",
        new="+ xp.log(weights)[None, :]",
        why="wrong sign of the prior term -ln pi_k",
    ),
    Mutant(
        "boltzmann/quadratic-off-1pct",
        target="kernels.boltzmann:component_energies",
        old="energy = 0.5 * xp.sum(diff**2 / variances[None, :, :], axis=-1)",
        new="energy = 0.505 * xp.sum(diff**2 / variances[None, :, :], axis=-1)",
        why="the quadratic term's constant 1/2 off by 1%",
    ),
    Mutant(
        "boltzmann/quadratic-sign",
        target="kernels.boltzmann:component_energies",
        old="energy = 0.5 * xp.sum(diff**2 / variances[None, :, :], axis=-1)",
        new="energy = -0.5 * xp.sum(diff**2 / variances[None, :, :], axis=-1)",
        why="wrong sign of the quadratic term (the energy rewards distance from the mean)",
    ),
    Mutant(
        "boltzmann/responsibilities-of-energies",
        target="kernels.boltzmann:responsibilities",
        old="softmax(cluster_logits(v, means, variances, weights))",
        new="softmax(-cluster_logits(v, means, variances, weights))",
        why="softmax of the energies instead of the negative energies",
    ),
    Mutant(
        "boltzmann/softmax-over-points",
        target="kernels.boltzmann:softmax",
        old="xp.sum(expo, axis=-1, keepdims=True)",
        new="xp.sum(expo, axis=0, keepdims=True)",
        why="softmax normalised over the points instead of over the clusters",
    ),
    Mutant(
        "boltzmann/softmax-in-float32",
        target="kernels.boltzmann:softmax",
        old="expo = xp.exp(shifted)",
        new="expo = xp.exp(xp.astype(shifted, xp.float32))",
        why="precision lost: the exponentials (and so the probabilities) in float32 inside a float64 kernel",
    ),
    # Linear coupling form (B2)
    Mutant(
        "boltzmann/coupling-square-dropped",
        target="kernels.boltzmann:coupling_from_means",
        old="    if complete_square:\n",
        new="    if False:\n",
        why="c_k without the completed-square term -1/2 ||W_:k||^2",
    ),
    Mutant(
        "boltzmann/coupling-a-term-sign",
        target="kernels.boltzmann:coupling_from_means",
        old="bias = np.log(pi) - (a / sigma) @ weights_w",
        new="bias = np.log(pi) + (a / sigma) @ weights_w",
        why="wrong sign of a^T diag(sigma)^-1 W_:k in c_k",
    ),
    Mutant(
        "boltzmann/coupling-means-unscaled",
        target="kernels.boltzmann:coupling_from_means",
        old="means = a[None, :] + (sigma[:, None] * weights_w).T",
        new="means = a[None, :] + weights_w.T",
        why="mu_k = a + W_:k, the diag(sigma) dropped",
    ),
    Mutant(
        "boltzmann/coupling-visible-times-sigma",
        target="kernels.boltzmann:coupling_energies",
        old="(v / sigma) @ weights_w",
        new="(v * sigma) @ weights_w",
        why="the coupling v^T diag(sigma) W instead of v^T diag(sigma)^-1 W",
    ),
    # Sampling and moments (B3)
    Mutant(
        "boltzmann/visible-sd-is-variance",
        target="kernels.boltzmann:sample_visible",
        old="sd = xp.sqrt(xp.take(variances, labels, axis=0))",
        new="sd = xp.take(variances, labels, axis=0)",
        why="v drawn with the variance as its standard deviation",
    ),
    Mutant(
        "boltzmann/visible-noise-uniform",
        target="kernels.boltzmann:sample_visible",
        old="mu + sd * draws.normal(tuple(mu.shape))",
        new="mu + sd * draws.uniform(tuple(mu.shape))",
        why="uniform noise where the Gaussian belongs",
    ),
    Mutant(
        "boltzmann/labels-from-reversed-weights",
        target="kernels.boltzmann:sample_mixture",
        old="multinomial(points, weights)",
        new="multinomial(points, weights[::-1])",
        why="cluster sizes drawn with the weights in the wrong order",
    ),
    Mutant(
        "boltzmann/labels-uniform",
        target="kernels.boltzmann:sample_mixture",
        old="multinomial(points, weights)",
        new="multinomial(points, np.full(len(weights), 1.0 / len(weights)))",
        why="the weights ignored: equal cluster sizes",
    ),
    Mutant(
        "boltzmann/mixture-variance-term-dropped",
        target="kernels.boltzmann:mixture_moments",
        old="second = weights @ (variances + means**2)",
        new="second = weights @ means**2",
        why="the mixture's second moment without the components' variances",
    ),
    # Gibbs (B4)
    Mutant(
        "boltzmann/gibbs-logits-scaled-1.02",
        target="kernels.boltzmann:sample_hidden",
        old="probs = responsibilities(v, means, variances, weights)",
        new="probs = softmax(1.02 * cluster_logits(v, means, variances, weights))",
        why="the hidden-unit draw from logits scaled by 1.02 (a 2% temperature error)",
    ),
    Mutant(
        "boltzmann/sampler-bins-shifted",
        target="kernels.boltzmann:sample_hidden",
        old="cut = probs[:, 0]\n",
        new="cut = probs[:, 0] + probs[:, 1]\n",
        why="off-by-one in the inverse CDF: the cut points of the next bin",
    ),
    Mutant(
        "boltzmann/gibbs-reuses-v",
        target="kernels.boltzmann:gibbs_counts",
        old="v = sample_visible(labels, means, variances, draws)",
        new="v = sample_visible(labels, means, variances, draws) if sweep == 0 else v",
        why="a Gibbs step that reuses the first v instead of drawing v | h every sweep",
    ),
    Mutant(
        "boltzmann/hermite-nodes-unscaled",
        target="kernels.boltzmann:transition_matrix",
        old="np.sqrt(2.0 * variances[k]) * grid",
        new="np.sqrt(variances[k]) * grid",
        why="Gauss-Hermite nodes without the sqrt(2) of the change of variables",
    ),
    # Winner-take-all (B5)
    Mutant(
        "boltzmann/wta-lambda-off-1pct",
        target="kernels.boltzmann:wta_enumerated",
        old="energy = lam * (",
        new="energy = 1.01 * lam * (",
        why="the penalty's lambda off by 1%",
    ),
    Mutant(
        "boltzmann/wta-penalty-unsquared",
        target="kernels.boltzmann:wta_enumerated",
        old="(states.sum(axis=1) - 1.0) ** 2",
        new="(states.sum(axis=1) - 1.0)",
        why="the penalty lambda (sum z - 1) without its square",
    ),
    Mutant(
        "boltzmann/wta-first-unit-dropped",
        target="kernels.boltzmann:wta_enumerated",
        old="(states.sum(axis=1) - 1.0) ** 2",
        new="(states[:, 1:].sum(axis=1) - 1.0) ** 2",
        why="a dropped term: the first unit left out of the penalty's sum",
    ),
    Mutant(
        "boltzmann/wta-unit-weights-off-1pct",
        target="kernels.boltzmann:wta_enumerated",
        old="(states.sum(axis=1) - 1.0) ** 2",
        new="(states @ np.linspace(1.0, 1.01, k) - 1.0) ** 2",
        why="the units weighted unequally in the penalty, the last by 1% more",
    ),
    Mutant(
        "boltzmann/wta-energy-sign",
        target="kernels.boltzmann:wta_enumerated",
        old="np.exp(-(energy - energy.min()))",
        new="np.exp(energy - energy.max())",
        why="Boltzmann weights e^(+E) instead of e^(-E)",
    ),
    Mutant(
        "boltzmann/wta-closed-form-empty-state-dropped",
        target="kernels.boltzmann:wta_onehot_mass_closed_form",
        old="for m in range(k + 1) if m != 1",
        new="for m in range(2, k + 1)",
        why="the closed form without the all-zero state's term",
    ),
]
