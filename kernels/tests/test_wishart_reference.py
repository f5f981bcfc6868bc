"""Reference tests of the Wishart route's Bartlett decomposition, with power where a degree of freedom
matters: near d = k + n.

G = X X^T with the columns of X i.i.d. N(0, Sigma) is Wishart_n(d, Sigma). With Sigma = B B^T
(Cholesky), H = B^-1 G B^-T is Wishart_n(d, I), and by Bartlett's theorem the squared diagonal of
H's Cholesky factor holds independent chi2(d - i), i = 0 .. n-1. Reading those back from the route's
G checks every chi-square degree of freedom separately (a Kolmogorov-Smirnov test per position) and
the route's scaling and mixing through Sigma; the moment test of the older reference test has about
2.5 standard errors against an off-by-one at d = 50, these have tens.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats
from scipy.special import polygamma, psi

from kernels import kmeans as km

SEED = 29589
ALPHA = 1e-3
K, N = 2, 40


def _sigma(labels: np.ndarray, sigma2: float, tau2: float = 1.0) -> np.ndarray:
    onehot = (labels[:, None] == np.arange(K)).astype(np.float64)
    return tau2 * onehot @ onehot.T + sigma2 * np.eye(N)


def _bartlett_diagonal(dimension: int, sigma2: float, trials: int) -> np.ndarray:
    """Squared Cholesky diagonal of Sigma^-1/2 G Sigma^-T/2 per trial: (trials, n)."""
    gram, labels, _ = km.sample_gram_wishart(SEED, dimension, sigma2, trials, k=K, n=N)
    b = np.linalg.cholesky(_sigma(labels[0], sigma2))
    b_inv = np.linalg.inv(b)
    whitened = b_inv @ gram @ b_inv.T
    return np.diagonal(np.linalg.cholesky(whitened), axis1=1, axis2=2) ** 2


@pytest.mark.smoke
@pytest.mark.parametrize("dimension, sigma2", [(K + N, 100.0), (K + N + 1, 1.0), (60, 10.0)])
def test_bartlett_diagonal_has_chi2_d_minus_i_at_every_position(dimension, sigma2):
    diag = _bartlett_diagonal(dimension, sigma2, 1500)
    pvalues = np.array([stats.kstest(diag[:, i], stats.chi2(dimension - i).cdf).pvalue for i in range(N)])
    # Bonferroni over the positions and the other tests of this module.
    level = ALPHA / (N * 3)
    assert np.all(pvalues > level), (
        f"d={dimension}: positions whose chi-square law fails: {np.nonzero(pvalues <= level)[0].tolist()} "
        f"(p={pvalues.min():.3g})"
    )
    # The last positions have the fewest degrees of freedom, where an off-by-one shows most: their
    # means are d - i to within 5 standard errors each.
    for i in range(N - 3, N):
        dof = dimension - i
        assert abs(diag[:, i].mean() - dof) < 5 * np.sqrt(2 * dof / len(diag)), (i, diag[:, i].mean(), dof)


@pytest.mark.smoke
def test_log_determinant_has_the_exact_wishart_law_near_d_equal_k_plus_n():
    dimension, sigma2, trials = K + N + 1, 100.0, 1500
    gram, labels, _ = km.sample_gram_wishart(SEED + 1, dimension, sigma2, trials, k=K, n=N)
    logdet = np.linalg.slogdet(gram)[1] - np.linalg.slogdet(_sigma(labels[0], sigma2))[1]
    dofs = dimension - np.arange(N, dtype=np.float64)
    mean, var = np.sum(psi(dofs / 2) + np.log(2.0)), np.sum(polygamma(1, dofs / 2))
    z = (logdet.mean() - mean) / np.sqrt(var / trials)
    assert abs(z) < stats.norm.isf(ALPHA / 2), f"mean log det G off its exact value by {z:.1f} standard errors"
    # An off-by-one in every degree of freedom would move the mean by about this much:
    shift = np.sum(psi((dofs + 1) / 2) - psi(dofs / 2))
    assert shift / np.sqrt(var / trials) > 20


@pytest.mark.smoke
def test_explicit_route_has_the_same_bartlett_diagonal():
    """The reference for the reference: the explicit route's G = X X^T read back the same way."""
    dimension, sigma2, trials = K + N + 1, 10.0, 800
    data, labels, _ = km.make_trials(SEED, dimension, sigma2, trials)
    gram = km.gram_matrix(data)
    b_inv = np.linalg.inv(np.linalg.cholesky(_sigma(labels[0], sigma2)))
    diag = np.diagonal(np.linalg.cholesky(b_inv @ gram @ b_inv.T), axis1=1, axis2=2) ** 2
    pvalues = np.array([stats.kstest(diag[:, i], stats.chi2(dimension - i).cdf).pvalue for i in range(N)])
    assert np.all(pvalues > ALPHA / N), np.nonzero(pvalues <= ALPHA / N)[0].tolist()
