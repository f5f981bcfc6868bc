"""B3: "Sampling v given h = e_k gives N(mu_k, Sigma_k); the marginal is the mixture."

Each statement checks the tutorial's tolerance and an exact sampling bound (normal for means,
chi-square for variances, multinomial chi-square for proportions) with Bonferroni over the
comparisons, so that each statement false-alarms with probability <= ALPHA.
"""
from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from pytest_claims import statement_holds
from claims.boltzmann.common import ALPHA, B3, TIERS, clustering_data
from fixtures.boltzmann import CLUSTER_MEANS, CLUSTER_VARIANCES, PI
from kernels import boltzmann as bm


@pytest.mark.claim(B3, statement="component-moments")
@pytest.mark.parametrize("tier", TIERS)
def test_component_means_and_variances(options, evidence, tier):
    v, labels = clustering_data(options.seed, tier)
    k, d = CLUSTER_MEANS.shape
    level = ALPHA / (2 * k * d)
    worst_mean, worst_var, smallest_p = 0.0, 0.0, 1.0
    for c in range(k):
        block = v[labels == c]
        n = len(block)
        mean, var = block.mean(axis=0), block.var(axis=0, ddof=1)
        worst_mean = max(worst_mean, float(np.max(np.abs(mean - CLUSTER_MEANS[c]))))
        worst_var = max(worst_var, float(np.max(np.abs(var / CLUSTER_VARIANCES[c] - 1))))
        z = (mean - CLUSTER_MEANS[c]) / np.sqrt(CLUSTER_VARIANCES[c] / n)
        p_mean = 2 * stats.norm.sf(np.abs(z))
        chi = (n - 1) * var / CLUSTER_VARIANCES[c]
        p_var = 2 * np.minimum(stats.chi2.cdf(chi, n - 1), stats.chi2.sf(chi, n - 1))
        smallest_p = min(smallest_p, float(p_mean.min()), float(p_var.min()))
    evidence.headline(max_mean_error=worst_mean, max_relative_variance_error=worst_var, smallest_p=smallest_p)
    evidence.record(points=len(v), bonferroni_level=level)
    statement_holds(worst_mean <= 0.06 and worst_var <= 0.12, f"tutorial tolerances: mean {worst_mean:.4f}, variance {worst_var:.4f}")
    statement_holds(smallest_p >= level, f"an exact bound rejects: p = {smallest_p:.3g} < {level:.3g}")


@pytest.mark.claim(B3, statement="label-proportions")
@pytest.mark.parametrize("tier", TIERS)
def test_label_proportions(options, evidence, tier):
    _, labels = clustering_data(options.seed, tier)
    counts = np.bincount(labels, minlength=len(PI))
    props = counts / counts.sum()
    p = float(stats.chisquare(counts, PI * counts.sum()).pvalue)
    evidence.headline(max_proportion_error=float(np.max(np.abs(props - PI))), chi2_p=p)
    evidence.record(counts=counts, proportions=props)
    statement_holds(np.max(np.abs(props - PI)) <= 0.025, f"proportions {props} vs pi {PI}")
    statement_holds(p >= ALPHA, f"multinomial goodness of fit rejects: p = {p:.3g}")


@pytest.mark.claim(B3, statement="mixture-moments")
@pytest.mark.parametrize("tier", TIERS)
def test_pooled_mixture_moments(options, evidence, tier):
    v, _ = clustering_data(options.seed, tier)
    mean, var = bm.mixture_moments(CLUSTER_MEANS, CLUSTER_VARIANCES, PI)
    got_mean, got_var = v.mean(axis=0), v.var(axis=0)
    # The labels are drawn multinomially, so the pooled mean is exactly an average of mixture draws.
    z = (got_mean - mean) / np.sqrt(var / len(v))
    p = float(np.min(2 * stats.norm.sf(np.abs(z))))
    evidence.headline(max_mean_error=float(np.max(np.abs(got_mean - mean))), max_relative_variance_error=float(np.max(np.abs(got_var / var - 1))))
    evidence.record(analytic_mean=mean, analytic_variance=var, sample_mean=got_mean, sample_variance=got_var, mean_p=p, points=len(v))
    statement_holds(np.max(np.abs(got_mean - mean)) <= 0.08 and np.max(np.abs(got_var / var - 1)) <= 0.05, "tutorial tolerances missed")
    statement_holds(p >= ALPHA / 2, f"pooled mean outside its exact bound: p = {p:.3g}")
