"""Reference tests of the Boltzmann-machine kernels: SciPy densities, NumPy against PyTorch,
the categorical sampler, and the quadrature against Monte Carlo."""

from __future__ import annotations

import numpy as np
import pytest
from numpy.testing import assert_allclose
from scipy import stats

from workloads.boltzmann import CLUSTER_MEANS, GIBBS_MEANS, GIBBS_VARIANCES, PI, UNEQUAL_VARIANCES
from kernels import boltzmann as bm
from kernels.backend import to_backend, to_numpy
from kernels.seeding import fixed_rng


@pytest.mark.smoke
def test_component_densities_match_scipy():
    v = fixed_rng("ref|densities").normal(size=(500, 2)) * 3
    ours = bm.component_densities(v, CLUSTER_MEANS, UNEQUAL_VARIANCES)
    for k in range(3):
        reference = stats.multivariate_normal(CLUSTER_MEANS[k], np.diag(UNEQUAL_VARIANCES[k])).pdf(v)
        assert_allclose(ours[:, k], reference, rtol=1e-12)


@pytest.mark.smoke
def test_numpy_and_torch_agree_on_deterministic_quantities():
    v = fixed_rng("ref|torch").normal(size=(2000, 2)) * 3
    args = (CLUSTER_MEANS, UNEQUAL_VARIANCES, PI)
    torch_args = [to_backend(x, "torch") for x in (v, *args)]
    for fn in (bm.component_energies, bm.cluster_logits, bm.responsibilities):
        assert_allclose(to_numpy(fn(*torch_args)), fn(v, *args), rtol=1e-12, atol=1e-300, err_msg=fn.__name__)
    assert_allclose(to_numpy(bm.component_densities(*torch_args[:3])), bm.component_densities(v, *args[:2]), rtol=1e-12)


@pytest.mark.smoke
@pytest.mark.parametrize("backend", ["numpy", "torch"])
def test_categorical_sampler_frequencies(backend):
    # One fixed v: every draw of h is Categorical(p(. | v)); a chi-square test at level 1e-4.
    v = np.tile(np.array([[0.3, 0.1]]), (200_000, 1))
    draws = bm.KeyedNormalUniform(f"ref|sampler|{backend}", backend)
    args = [to_backend(x, backend) for x in (v, GIBBS_MEANS, GIBBS_VARIANCES, PI)]
    labels = to_numpy(bm.sample_hidden(*args, draws))
    expected = bm.responsibilities(v[:1], GIBBS_MEANS, GIBBS_VARIANCES, PI)[0] * len(v)
    assert stats.chisquare(np.bincount(labels, minlength=3), expected).pvalue > 1e-4


@pytest.mark.smoke
def test_transition_matrix_matches_monte_carlo():
    transition = bm.transition_matrix(GIBBS_MEANS, GIBBS_VARIANCES, PI)
    rng = fixed_rng("ref|transition")
    n = 400_000
    for k in range(3):
        v = GIBBS_MEANS[k] + np.sqrt(GIBBS_VARIANCES[k]) * rng.standard_normal((n, 2))
        resp = bm.responsibilities(v, GIBBS_MEANS, GIBBS_VARIANCES, PI)
        se = resp.std(axis=0) / np.sqrt(n)
        assert np.all(np.abs(resp.mean(axis=0) - transition[k]) < 5 * se), k
    assert_allclose(transition.sum(axis=1), 1.0, atol=1e-13)
