"""Small, exact statistics the K and L6 statements compute as evidence: sign and trend tests, drop tests, a t bound.

The binomial (Clopper-Pearson) bounds a statement decides by are the plugin's (pytest_claims.rate_lower_bound,
rate_upper_bound, used by decide_rate); kernels/tests/test_stats_reference.py checks them against SciPy's.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import stats


def sign_test_greater(differences: np.ndarray) -> tuple[float, int, int]:
    """One-sided sign test that paired differences are positive: (p-value, positives, negatives)."""
    diff = np.asarray(differences, dtype=np.float64)
    positive, negative = int(np.sum(diff > 0)), int(np.sum(diff < 0))
    if positive + negative == 0:
        return 1.0, 0, 0
    p = stats.binomtest(positive, positive + negative, 0.5, alternative="greater").pvalue
    return float(p), positive, negative


def cochran_armitage_increasing(successes: np.ndarray, trials: np.ndarray, scores: np.ndarray) -> tuple[float, float]:
    """Cochran-Armitage test for a rate increasing in the scores: (z, one-sided p-value)."""
    x = np.asarray(successes, dtype=np.float64)
    m = np.asarray(trials, dtype=np.float64)
    s = np.asarray(scores, dtype=np.float64)
    total, p_bar = m.sum(), x.sum() / m.sum()
    if p_bar in (0.0, 1.0):
        return 0.0, 1.0
    statistic = np.sum(s * (x - m * p_bar))
    variance = p_bar * (1 - p_bar) * (np.sum(m * s**2) - np.sum(m * s) ** 2 / total)
    z = float(statistic / math.sqrt(variance))
    return z, float(stats.norm.sf(z))


def adjacent_drop_pvalues(successes: np.ndarray, trials: np.ndarray) -> np.ndarray:
    """One-sided Fisher exact p-value, for each adjacent pair (i, i+1), that the rate at i exceeds
    the rate at i+1: (len - 1,) float64."""
    x = np.asarray(successes, dtype=np.int64)
    m = np.asarray(trials, dtype=np.int64)
    out = np.empty(max(len(x) - 1, 0), dtype=np.float64)
    for i in range(len(out)):
        table = [[x[i], m[i] - x[i]], [x[i + 1], m[i + 1] - x[i + 1]]]
        out[i] = stats.fisher_exact(table, alternative="greater").pvalue
    return out


def significant_drops(successes: np.ndarray, trials: np.ndarray, alpha: float) -> list[tuple[int, float]]:
    """Adjacent pairs (i, i+1) where the rate drops significantly (one-sided Fisher exact test,
    Bonferroni over the pairs): [(i, p-value)]."""
    pvalues = adjacent_drop_pvalues(successes, trials)
    pairs = len(pvalues)
    return [(i, float(p)) for i, p in enumerate(pvalues) if p * pairs < alpha]


def mean_lower_bound(values: np.ndarray, confidence: float) -> float:
    """One-sided Student-t lower confidence bound on a mean."""
    v = np.asarray(values, dtype=np.float64)
    if v.size < 2:
        return -math.inf
    se = float(np.std(v, ddof=1)) / math.sqrt(v.size)
    return float(v.mean() - stats.t.ppf(confidence, v.size - 1) * se)
