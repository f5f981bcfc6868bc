"""Mutants of the statistics K2 and K3 rest on: the levels K's rate summaries ask the plugin's
Clopper-Pearson bounds for (claims/kmeans/common.py), and the tests of kernels/stats.py: a looser
confidence level, a two-sided bound for a one-sided one, p-values too small, a dropped variance term."""

from __future__ import annotations

from pytest_claims.roles.mutants import Mutant

MUTANTS = [
    Mutant(
        "stats/cp-lower-at-90",
        target="claims.kmeans.common:rate",
        old="rate_lower_bound(hits, total, alpha)",
        new="rate_lower_bound(hits, total, 10 * alpha)",
        why="the one-sided Clopper-Pearson lower bound at 90% where 99% is asked",
    ),
    Mutant(
        "stats/cp-lower-two-sided",
        target="claims.kmeans.common:rate",
        old="rate_lower_bound(hits, total, alpha)",
        new="rate_lower_bound(hits, total, alpha / 2)",
        why="the lower end of a two-sided interval in place of the one-sided bound",
    ),
    Mutant(
        "stats/cp-upper-at-90",
        target="claims.kmeans.common:rate",
        old="rate_upper_bound(hits, total, alpha)",
        new="rate_upper_bound(hits, total, 10 * alpha)",
        why="the one-sided Clopper-Pearson upper bound at 90% where 99% is asked",
    ),
    Mutant(
        "stats/cp-upper-two-sided",
        target="claims.kmeans.common:rate",
        old="rate_upper_bound(hits, total, alpha)",
        new="rate_upper_bound(hits, total, alpha / 2)",
        why="the upper end of a two-sided interval in place of the one-sided bound",
    ),
    Mutant(
        "stats/sign-p-over-10",
        target="kernels.stats:sign_test_greater",
        old="return float(p), positive, negative",
        new="return float(p) / 10, positive, negative",
        why="the sign test's p-value divided by 10",
    ),
    Mutant(
        "stats/sign-two-sided",
        target="kernels.stats:sign_test_greater",
        old='alternative="greater"',
        new='alternative="two-sided"',
        why="a two-sided sign test where the statement is one-sided",
    ),
    Mutant(
        "stats/ca-p-over-10",
        target="kernels.stats:cochran_armitage_increasing",
        old="return z, float(stats.norm.sf(z))",
        new="return z, float(stats.norm.sf(z)) / 10",
        why="the trend test's p-value divided by 10",
    ),
    Mutant(
        "stats/ca-variance-term-dropped",
        target="kernels.stats:cochran_armitage_increasing",
        old="(np.sum(m * s**2) - np.sum(m * s) ** 2 / total)",
        new="np.sum(m * s**2)",
        why="the Cochran-Armitage variance without its centring term (scores not centred)",
    ),
    Mutant(
        "stats/fisher-p-over-10",
        target="kernels.stats:adjacent_drop_pvalues",
        old='out[i] = stats.fisher_exact(table, alternative="greater").pvalue',
        new='out[i] = stats.fisher_exact(table, alternative="greater").pvalue / 10',
        why="the drop test's p-values divided by 10",
    ),
    Mutant(
        "stats/drops-without-bonferroni",
        target="kernels.stats:significant_drops",
        old="if p * pairs < alpha",
        new="if p < alpha",
        why="the drops tested pair by pair at alpha, without the Bonferroni correction over the pairs",
    ),
    Mutant(
        "stats/mean-bound-normal-quantile",
        target="kernels.stats:mean_lower_bound",
        old="stats.t.ppf(confidence, v.size - 1)",
        new="stats.norm.ppf(confidence)",
        why="a normal quantile where the Student-t quantile belongs",
    ),
]
