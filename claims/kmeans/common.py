"""What the K statement tests share: rate summaries with bounds, the grid figure (their claim ids: claims.ids)."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
from numpy.testing import assert_allclose
from scipy import stats

from pytest_claims import decide_interval, decide_rate, rate_lower_bound, rate_upper_bound
from kernels.stats import (
    adjacent_drop_pvalues,
    cochran_armitage_increasing,
    mean_lower_bound,
    sign_test_greater,
    significant_drops,
)

CONFIDENCE = 0.99


def sigma2_rows(rows) -> str:
    """A part's test name: its sigma^2 row, or the first and last row of a block."""
    return f"sigma2={rows[0]:.4g}" if len(rows) == 1 else f"sigma2={rows[0]:.3g}-{rows[-1]:.3g}"


# Every bound and p-value a K statement reads is checked where it is used against an equation that
# does not share the helper's formula (the helper's own reference tests are in kernels/tests): a bound
# at the wrong level or a p-value off by a factor stops the statement (AssertionError: the evidence is
# broken, not the claim refuted), although the statement's threshold alone would not notice it.


def rate(flags: np.ndarray) -> dict:
    """A binomial rate with its one-sided 99% Clopper-Pearson bounds (the plugin's, as decide_rate uses),
    checked against their defining equations P(X >= x | p = lower99) = 0.01 = P(X <= x | p = upper99)."""
    flags = np.asarray(flags, dtype=bool)
    hits, total = int(flags.sum()), int(flags.size)
    alpha = 1 - CONFIDENCE
    lower, upper = rate_lower_bound(hits, total, alpha), rate_upper_bound(hits, total, alpha)
    if hits > 0:
        assert_allclose(
            stats.binom.sf(hits - 1, total, lower),
            alpha,
            rtol=1e-6,
            err_msg=f"one-sided 99% lower bound of {hits}/{total}",
        )
    else:
        assert lower == 0.0, f"the lower bound of 0/{total} must be 0, got {lower}"
    if hits < total:
        assert_allclose(
            stats.binom.cdf(hits, total, upper),
            alpha,
            rtol=1e-6,
            err_msg=f"one-sided 99% upper bound of {hits}/{total}",
        )
    else:
        assert upper == 1.0, f"the upper bound of {total}/{total} must be 1, got {upper}"
    return {"successes": hits, "trials": total, "rate": hits / total, "lower99": lower, "upper99": upper}


def nmi_summary(values: np.ndarray) -> dict:
    """Mean NMI with its one-sided 99% Student-t lower bound, checked against SciPy's one-sample t-test
    (the bound is the mean the test rejects at exactly 1%)."""
    values = np.asarray(values, dtype=np.float64)
    lower = mean_lower_bound(values, CONFIDENCE)
    if values.size >= 2 and np.ptp(values) > 0:
        p = stats.ttest_1samp(values, lower, alternative="greater").pvalue
        assert_allclose(p, 1 - CONFIDENCE, rtol=1e-6, err_msg="one-sided 99% t lower bound of the mean NMI")
    elif values.size >= 2:
        assert lower == values[0], f"NMI values all equal to {values[0]}: the bound must be that value, got {lower}"
    return {"mean": float(values.mean()), "lower99": lower, "trials": int(values.size)}


def decide_stall_rate(flags: np.ndarray, *, at_least: bool, threshold: float, alpha: float, what: str) -> dict:
    """A K statement about an initial-fixed rate ("~1": >= 0.9; "~0": <= 0.1): shown by the statement's
    one-sided 99% Clopper-Pearson bound (CONFIDENCE), refuted only by the opposite bound at 1 - alpha
    (alpha: the registered false alarm, split over the statement's cells), inconclusive otherwise."""
    __tracebackhide__ = True
    flags = np.asarray(flags, dtype=bool)
    return decide_rate(
        int(flags.sum()),
        int(flags.size),
        threshold,
        at_least=at_least,
        alpha=alpha,
        what=what,
        held_confidence=CONFIDENCE,
    )


def decide_mean_nmi(values: np.ndarray, *, threshold: float, alpha: float, what: str) -> dict:
    """Mean NMI >= threshold: shown by the one-sided 99% t lower bound (nmi_summary), refuted only by the
    one-sided (1 - alpha) t upper bound below the threshold, inconclusive otherwise."""
    __tracebackhide__ = True
    summary = nmi_summary(values)
    upper = (
        -mean_lower_bound(-np.asarray(values, dtype=np.float64), 1 - alpha)
        if len(values) > 1
        else float(np.mean(values))
    )
    return decide_interval(
        summary["lower99"], upper, threshold, at_least=True, alpha=alpha, what=what, held_confidence=CONFIDENCE
    )


def sign_test(differences: np.ndarray) -> tuple[float, int, int]:
    """One-sided sign test (kernels.stats), checked against the exact binomial tail in rationals."""
    p, positive, negative = sign_test_greater(differences)
    diff = np.asarray(differences, dtype=np.float64)
    assert (positive, negative) == (int(np.sum(diff > 0)), int(np.sum(diff < 0))), "sign test counts"
    n = positive + negative
    exact = float(Fraction(sum(math.comb(n, j) for j in range(positive, n + 1)), 2**n)) if n else 1.0
    assert_allclose(p, exact, rtol=1e-9, err_msg=f"sign test p-value, +{positive}/-{negative}")
    return p, positive, negative


def trend_test(successes: np.ndarray, trials: np.ndarray, scores: np.ndarray, drop_alpha: float) -> dict:
    """Cochran-Armitage trend (z, p) and the Fisher drops between neighbours (kernels.stats), checked
    against z^2 = N r^2 over the individual trials and against hypergeometric tails."""
    successes, trials = np.asarray(successes, dtype=np.int64), np.asarray(trials, dtype=np.int64)
    z, p = cochran_armitage_increasing(successes, trials, scores)
    outcome = np.concatenate([np.r_[np.ones(x), np.zeros(m - x)] for x, m in zip(successes, trials)])
    if 0 < outcome.sum() < outcome.size:
        r = np.corrcoef(np.repeat(np.asarray(scores, dtype=np.float64), trials), outcome)[0, 1]
        z_ref = math.sqrt(outcome.size) * r
        assert_allclose(
            [z, p], [z_ref, stats.norm.sf(z_ref)], rtol=1e-8, atol=1e-300, err_msg="Cochran-Armitage z and one-sided p"
        )
    else:
        assert (z, p) == (0.0, 1.0), f"a constant outcome has no trend: got z={z}, p={p}"
    pvalues = adjacent_drop_pvalues(successes, trials)
    reference = [
        stats.hypergeom.sf(successes[i] - 1, trials[i] + trials[i + 1], successes[i] + successes[i + 1], trials[i])
        for i in range(len(pvalues))
    ]
    assert_allclose(pvalues, reference, rtol=1e-9, atol=1e-300, err_msg="one-sided Fisher p-values of the drops")
    drops = significant_drops(successes, trials, drop_alpha)
    expected = [i for i, q in enumerate(reference) if q * len(reference) < drop_alpha]
    assert [i for i, _ in drops] == expected, (
        f"significant drops {drops}, Bonferroni over {len(reference)} pairs gives {expected}"
    )
    return {"z": z, "p": p, "drop_pvalues": pvalues.tolist(), "drops": drops}


def grid_figure(rows: dict[float, list[tuple[int, dict]]], title: str):
    """NMI and initial-fixed rate versus d, one column per sigma^2, both algorithms, 99% bands."""
    import matplotlib.pyplot as plt

    sigma2s = sorted(rows)
    cols = len(sigma2s)
    fig, axes = plt.subplots(2, cols, figsize=(max(2.2 * cols, 5), 4.6), sharex=True, sharey=True, squeeze=False)
    for c, s2 in enumerate(sigma2s):
        dims = np.array([d for d, _ in rows[s2]], dtype=float)
        for name, colour in (("lloyd", "#d55e00"), ("hartigan", "#0072b2")):
            nmis = [nmi_summary(cell[f"{name}_nmi"]) for _, cell in rows[s2]]
            mean = np.array([x["mean"] for x in nmis])
            low = np.array([x["lower99"] for x in nmis])
            sd = mean - low
            axes[0, c].plot(dims, mean, color=colour, label=name.capitalize())
            axes[0, c].fill_between(dims, mean - sd, np.minimum(mean + sd, 1), color=colour, alpha=0.2)
            rates = [rate(cell[f"{name}_initial_fixed"]) for _, cell in rows[s2]]
            axes[1, c].plot(dims, [r["rate"] for r in rates], color=colour)
            axes[1, c].fill_between(
                dims, [r["lower99"] for r in rates], [r["upper99"] for r in rates], color=colour, alpha=0.2
            )
        regime = "σ²>n" if s2 > 40 else "σ²<n"
        axes[0, c].set_title(f"σ²={s2:.3g} ({regime})", fontsize=7)
        axes[1, c].set_xscale("log")
        axes[1, c].tick_params(labelsize=6)
        axes[0, c].tick_params(labelsize=6)
    axes[0, 0].set_ylabel("NMI", fontsize=7)
    axes[1, 0].set_ylabel("initial-fixed rate", fontsize=7)
    axes[0, 0].legend(fontsize=6)
    fig.suptitle(title, fontsize=8)
    fig.supxlabel("dimension d (log)", fontsize=7)
    return fig
