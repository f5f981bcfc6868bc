"""B3: "Sampling v given h = e_k gives N(mu_k, Sigma_k); the marginal is the mixture."

Each statement checks the tutorial's tolerance and an exact sampling bound (normal for means,
chi-square for variances, multinomial chi-square for proportions) with Bonferroni over the
comparisons, so that each statement false-alarms with probability <= its registered false_alarm
(the tutorial tolerances add a computed tail far below it at the tier's size: registry).
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from pytest_claims import registered_false_alarm, statement_allclose, statement_ge
from claims.ids import B3
from claims.boltzmann.common import TIERS
from workloads.boltzmann import CLUSTER_MEANS, CLUSTER_VARIANCES, PI, clustering_data
from kernels import boltzmann as bm


@pytest.mark.claim(B3, statement="component-moments")
@pytest.mark.parametrize("tier", TIERS)
def test_component_means_and_variances(options, evidence, tier):
    v, labels = clustering_data(options.seed, tier)
    k, d = CLUSTER_MEANS.shape
    level = registered_false_alarm() / (2 * k * d)
    worst_mean, worst_var, smallest_p = 0.0, 0.0, 1.0
    means, variances = [], []
    for c in range(k):
        block = v[labels == c]
        n = len(block)
        mean, var = block.mean(axis=0), block.var(axis=0, ddof=1)
        means.append(mean)
        variances.append(var)
        worst_mean = max(worst_mean, float(np.max(np.abs(mean - CLUSTER_MEANS[c]))))
        worst_var = max(worst_var, float(np.max(np.abs(var / CLUSTER_VARIANCES[c] - 1))))
        z = (mean - CLUSTER_MEANS[c]) / np.sqrt(CLUSTER_VARIANCES[c] / n)
        p_mean = 2 * stats.norm.sf(np.abs(z))
        chi = (n - 1) * var / CLUSTER_VARIANCES[c]
        p_var = 2 * np.minimum(stats.chi2.cdf(chi, n - 1), stats.chi2.sf(chi, n - 1))
        smallest_p = min(smallest_p, float(p_mean.min()), float(p_var.min()))
    evidence.headline(max_mean_error=worst_mean, max_relative_variance_error=worst_var, smallest_p=smallest_p)
    evidence.record(points=len(v), bonferroni_level=level)
    statement_allclose(
        np.array(means), CLUSTER_MEANS, rtol=0, atol=0.06, what="per-cluster sample means (tutorial tolerance)"
    )
    statement_allclose(
        np.array(variances),
        CLUSTER_VARIANCES,
        rtol=0.12,
        atol=0,
        what="per-cluster sample variances (tutorial tolerance)",
    )
    statement_ge(smallest_p, level, what="smallest p of the per-cluster mean and variance tests (Bonferroni level)")


@pytest.mark.claim(B3, statement="label-proportions")
@pytest.mark.parametrize("tier", TIERS)
def test_label_proportions(options, evidence, tier):
    _, labels = clustering_data(options.seed, tier)
    counts = np.bincount(labels, minlength=len(PI))
    props = counts / counts.sum()
    p = float(stats.chisquare(counts, PI * counts.sum()).pvalue)
    evidence.headline(max_proportion_error=float(np.max(np.abs(props - PI))), chi2_p=p)
    evidence.record(counts=counts, proportions=props)
    statement_allclose(props, PI, rtol=0, atol=0.025, what="label proportions vs pi")
    statement_ge(p, registered_false_alarm(), what="multinomial goodness-of-fit p of the label counts")


@pytest.mark.claim(B3, statement="mixture-moments")
@pytest.mark.parametrize("tier", TIERS)
def test_pooled_mixture_moments(options, evidence, tier):
    v, _ = clustering_data(options.seed, tier)
    mean, var = bm.mixture_moments(CLUSTER_MEANS, CLUSTER_VARIANCES, PI)
    got_mean, got_var = v.mean(axis=0), v.var(axis=0)
    # The labels are drawn multinomially, so the pooled sample is exactly i.i.d. mixture draws: its
    # mean and variance are asymptotically normal with variances var / N and (mu4 - var^2) / N.
    z = (got_mean - mean) / np.sqrt(var / len(v))
    p = float(np.min(2 * stats.norm.sf(np.abs(z))))
    mu4 = _mixture_fourth_central_moment(CLUSTER_MEANS, CLUSTER_VARIANCES, PI, mean)
    z_var = (got_var - var) / np.sqrt((mu4 - var**2) / len(v))
    p_var = float(np.min(2 * stats.norm.sf(np.abs(z_var))))
    evidence.headline(
        max_mean_error=float(np.max(np.abs(got_mean - mean))),
        max_relative_variance_error=float(np.max(np.abs(got_var / var - 1))),
    )
    evidence.record(
        analytic_mean=mean,
        analytic_variance=var,
        sample_mean=got_mean,
        sample_variance=got_var,
        mean_p=p,
        variance_p=p_var,
        points=len(v),
    )
    statement_allclose(got_mean, mean, rtol=0, atol=0.08, what="pooled mean vs the mixture's (tutorial tolerance)")
    statement_allclose(got_var, var, rtol=0.05, atol=0, what="pooled variance vs the mixture's (tutorial tolerance)")
    level = registered_false_alarm() / (2 * len(mean))  # Bonferroni over the two moments and the coordinates
    statement_ge(p, level, what="pooled mean's smallest two-sided p over the coordinates (Bonferroni level)")
    statement_ge(p_var, level, what="pooled variance's smallest two-sided p over the coordinates (Bonferroni level)")


def _mixture_fourth_central_moment(means, variances, weights, centre):
    """E (X_i - m_i)^4 per coordinate for the mixture: sum_k pi_k (delta^4 + 6 delta^2 s^2 + 3 s^4),
    delta = mu_ki - m_i, s^2 = sigma_ki^2 (the normal's central moments about a shifted point)."""
    delta = means - centre
    return weights @ (delta**4 + 6 * delta**2 * variances + 3 * variances**2)
