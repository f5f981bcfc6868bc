"""What the K statement tests share: registry ids, rate summaries with bounds, the grid figure."""
from __future__ import annotations

import numpy as np

from kernels.stats import clopper_pearson_lower, clopper_pearson_upper, mean_lower_bound

K1 = "kmeans/hartigan-fixed-implies-lloyd-fixed"
K2 = "kmeans/lloyd-stalls-at-random-partition"
K3 = "kmeans/hartigan-escapes"
CONFIDENCE = 0.99


def rate(flags: np.ndarray) -> dict:
    """A binomial rate with its one-sided 99% Clopper-Pearson bounds."""
    flags = np.asarray(flags, dtype=bool)
    hits, total = int(flags.sum()), int(flags.size)
    return {
        "successes": hits,
        "trials": total,
        "rate": hits / total,
        "lower99": clopper_pearson_lower(hits, total, CONFIDENCE),
        "upper99": clopper_pearson_upper(hits, total, CONFIDENCE),
    }


def nmi_summary(values: np.ndarray) -> dict:
    values = np.asarray(values, dtype=np.float64)
    return {"mean": float(values.mean()), "lower99": mean_lower_bound(values, CONFIDENCE), "trials": int(values.size)}


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
            axes[1, c].fill_between(dims, [r["lower99"] for r in rates], [r["upper99"] for r in rates], color=colour, alpha=0.2)
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
