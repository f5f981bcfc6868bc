"""Mutants of the k-means kernels (claims K1-K3): the errors a reimplementation of the seed script's
data, Lloyd, Hartigan, the Gram and Wishart routes and NMI is likely to make."""

from __future__ import annotations

from pytest_claims.roles.mutants import Mutant

MUTANTS = [
    # Data and keys
    Mutant(
        "kmeans/trial-key-ignores-trial",
        target="kernels.kmeans:trial_key",
        old='|{trial}"',
        new='"',
        why="the keyed generator ignores the trial part of its key: every trial of a cell draws the same data",
    ),
    Mutant(
        "kmeans/trial-pairs-share-data",
        target="kernels.kmeans:make_trials",
        old="trial_key(master_seed, k, n, dimension, sigma2, trial)",
        new="trial_key(master_seed, k, n, dimension, sigma2, trial // 2)",
        why="an off-by-one in the trial index of the key: trials 2t and 2t+1 share their data",
    ),
    Mutant(
        "kmeans/bartlett-dof-plus-one",
        target="kernels.kmeans:sample_gram_wishart",
        old="dof = dimension - np.arange(m, dtype=np.float64)",
        new="dof = dimension + 1 - np.arange(m, dtype=np.float64)",
        why="Bartlett's chi-square degrees of freedom off by one (the 1-indexed d - i + 1 with a 0-indexed i)",
    ),
    Mutant(
        "kmeans/bartlett-dof-minus-one",
        target="kernels.kmeans:sample_gram_wishart",
        old="dof = dimension - np.arange(m, dtype=np.float64)",
        new="dof = dimension - 1 - np.arange(m, dtype=np.float64)",
        why="Bartlett's chi-square degrees of freedom off by one the other way (d - i - 1)",
    ),
    Mutant(
        "kmeans/wishart-noise-scale-not-sqrt",
        target="kernels.kmeans:sample_gram_wishart",
        old="np.sqrt(sigma2) * factor[:, k:, :]",
        new="sigma2 * factor[:, k:, :]",
        why="the Wishart route scales the noise block by the variance instead of the standard deviation",
    ),
    # Lloyd
    Mutant(
        "kmeans/lloyd-tie-moves",
        target="kernels.kmeans:lloyd_step",
        old="nearest_dist < _own(dist, labels)",
        new="nearest_dist <= _own(dist, labels)",
        why="tie rule flipped: Lloyd moves a point to an equally near mean",
    ),
    Mutant(
        "kmeans/lloyd-to-farthest-mean",
        target="kernels.kmeans:lloyd_step",
        old="nearest = xp.argmin(dist, axis=-1)",
        new="nearest = xp.argmax(dist, axis=-1)",
        why="argmax for argmin: with k = 2 a point with a strictly nearer mean is 'moved' to its own cluster",
    ),
    Mutant(
        "kmeans/lloyd-never-stops",
        target="kernels.kmeans:lloyd",
        old="active = changed\n",
        new="active = changed | active\n",
        why="the stopping rule lost: a trial stays active after a step without a change",
    ),
    Mutant(
        "kmeans/lloyd-fixed-test-strict",
        target="kernels.kmeans:is_lloyd_fixed",
        old="_own(dist, labels) <= xp.min(dist, axis=-1)",
        new="_own(dist, labels) < xp.min(dist, axis=-1)",
        why="the Lloyd fixed-point test with a strict inequality (a point is always as near its own mean as "
        "the nearest)",
    ),
    # Hartigan
    Mutant(
        "kmeans/hartigan-tie-moves",
        target="kernels.kmeans:_hartigan_decision",
        old="(best < leave - margin)",
        new="(best <= leave + margin)",
        why="tie rule flipped: Hartigan moves a point when the move does not improve by more than rounding",
    ),
    Mutant(
        "kmeans/hartigan-leave-factor-inverted",
        target="kernels.kmeans:_hartigan_costs",
        old="own_dist * own_count / xp.maximum(own_count - 1.0, one)",
        new="own_dist * (own_count - 1.0) / xp.maximum(own_count, one)",
        why="the leave cost's factor n_a / (n_a - 1) inverted",
    ),
    Mutant(
        "kmeans/hartigan-leave-weight-removed",
        target="kernels.kmeans:_hartigan_costs",
        old="own_dist * own_count / xp.maximum(own_count - 1.0, one)",
        new="own_dist",
        why="the leave cost without its weight n_a / (n_a - 1) (Lloyd's distance in Hartigan's rule)",
    ),
    Mutant(
        "kmeans/hartigan-join-weight-removed",
        target="kernels.kmeans:_hartigan_costs",
        old="join = finite * count / (count + 1.0)",
        new="join = finite",
        why="the join cost without its weight n_b / (n_b + 1)",
    ),
    # Gram route and NMI
    Mutant(
        "kmeans/gram-cross-term-sign",
        target="kernels.kmeans:sq_distances_gram",
        old="- 2.0 * sums / safe[:, None, :]",
        new="+ 2.0 * sums / safe[:, None, :]",
        why="wrong sign of the cross term G_ii - 2 S_iC / |C| + Q_C / |C|^2",
    ),
    Mutant(
        "kmeans/nmi-normalisation-halved",
        target="kernels.kmeans:nmi",
        old="2.0 * mi / (ha + hb)",
        new="mi / (ha + hb)",
        why="the arithmetic normalisation without its factor 2 (MI over the sum of the entropies)",
    ),
]
