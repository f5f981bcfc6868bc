"""L6's figures, drawn from a run record (workloads.uot_dro.tier_run's dict): the overflow-step distribution per
setting, a curve per setting over the checkpoints, and the clean and noisy accuracy curves."""

from __future__ import annotations

import math
import warnings

import numpy as np

from workloads import uot_dro as fx


def _plt():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def overflow_figure(run: dict, tier: str):
    plt = _plt()
    table = fx.overflow_table(run)
    fig, ax = plt.subplots(figsize=(6.0, 0.45 * len(table) + 1.2))
    horizon = run["steps"]
    for i, (name, row) in enumerate(table.items()):
        steps = np.array([s if s is not None else np.nan for s in row["steps"]], dtype=float)
        jitter = np.linspace(-0.15, 0.15, len(steps)) if len(steps) > 1 else np.zeros(1)
        over = np.isfinite(steps)
        ax.scatter(steps[over], i + jitter[over], marker="x", color="tab:red", s=18)
        ax.scatter(
            np.full((~over).sum(), horizon),
            i + jitter[~over],
            marker="o",
            facecolors="none",
            edgecolors="tab:green",
            s=18,
        )
        ax.text(horizon * 1.15, i, f"{row['overflowed']}/{row['of']}", va="center", fontsize=7)
    ax.set_yticks(range(len(table)), list(table), fontsize=7)
    ax.set_xscale("log")
    ax.set_xlim(0.8, horizon * 2.5)
    ax.set_xlabel("step of the first non-finite loss / gradient / parameter (x); o: finite to the horizon", fontsize=7)
    ax.set_title(f"overflow steps per seed ({tier}: {run['steps']} steps)", fontsize=8)
    fig.tight_layout()
    return fig


def curve_figure(run: dict, tier: str, key: str, settings, ylabel: str):
    plt = _plt()
    fig, ax = plt.subplots(figsize=(5.8, 3.6))
    steps = run["curve_steps"]
    for method, lr in settings:
        rows = fx.select(run, method, lr)
        values = run[key][rows]
        if not np.any(np.isfinite(values)):
            continue
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            mean, lo, hi = np.nanmean(values, axis=0), np.nanmin(values, axis=0), np.nanmax(values, axis=0)
        line = ax.plot(steps, mean, marker="o", ms=3, label=f"{fx.setting_name(method, lr)} ({len(rows)} seeds)")[0]
        ax.fill_between(steps, lo, hi, color=line.get_color(), alpha=0.15)
    ax.set_xlabel("step", fontsize=8)
    ax.set_ylabel(ylabel, fontsize=8)
    ax.set_title(f"{ylabel} ({tier}; mean and range over the seeds not yet overflowed)", fontsize=8)
    ax.legend(fontsize=6)
    fig.tight_layout()
    return fig


def accuracy_figure(run: dict, tier: str, settings):
    plt = _plt()
    fig, axes = plt.subplots(1, 2, figsize=(8.0, 3.4), sharey=True)
    steps = run["curve_steps"]
    for ax, key, title in (
        (axes[0], "test_accuracy", "clean test accuracy"),
        (axes[1], "val_accuracy", "validation accuracy (noisy labels)"),
    ):
        for method, lr in settings:
            values = run[key][fx.select(run, method, lr)]
            if not np.any(np.isfinite(values)):
                continue
            with np.errstate(all="ignore"), warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)
                ax.plot(steps, np.nanmean(values, axis=0), marker="o", ms=3, label=fx.setting_name(method, lr))
        ax.set_title(f"{title} ({tier})", fontsize=8)
        ax.set_xlabel("step", fontsize=8)
    axes[0].legend(fontsize=6)
    fig.tight_layout()
    return fig


def chain_figure(chain):
    """A continued statement's chain (tools.l6_chains.Chain): ln E for and against after each look, against the
    registered thresholds (a crossing decides)."""
    plt = _plt()
    hold, refute = chain.needs
    fig, ax = plt.subplots(figsize=(6.0, 3.0))
    looks = np.arange(1, len(chain.looks) + 1)
    if len(looks):
        ax.plot(looks, chain.log_e_for, marker="o", color="tab:blue", label="ln E for")
        ax.plot(looks, chain.log_e_against, marker="x", color="tab:red", label="ln E against")
    if math.isclose(hold, refute):  # one line for both thresholds: drawn twice, the second would hide the first
        ax.axhline(hold, color="tab:purple", linestyle="--", linewidth=0.8,
                   label=f"holds (ln E for) and refuted (ln E against) at {hold:.2f}")  # fmt: skip
    else:
        ax.axhline(hold, color="tab:blue", linestyle="--", linewidth=0.8, label=f"holds at {hold:.2f}")
        ax.axhline(refute, color="tab:red", linestyle=":", linewidth=0.8, label=f"refuted at {refute:.2f}")
    ax.set_xlim(0.5, chain.cap_looks + 0.5)  # to the registered cap: how far the chain is from it
    ax.xaxis.set_major_locator(plt.MaxNLocator(integer=True))
    ax.set_xlabel(
        f"look (a batch of {chain.seeds_a_look} seeds; seeds from 10, in order; cap: look {chain.cap_looks})"
        if chain.seeds_a_look > 1
        else f"look (a seed; seeds from 10, in order; cap: look {chain.cap_looks})"
    )
    ax.set_ylabel("ln e-value")
    ax.set_title(f"{chain.statement}: {chain.end}", fontsize=8)
    ax.legend(fontsize=7, loc="best")  # where it hides least of the chain and its thresholds
    fig.tight_layout()
    return fig


def erm_horizons_figure(long_curves: dict[int, tuple], short_curves: dict[int, tuple]):
    """ERM's clean test accuracy by step: the text's 20 epochs (1e6 steps, the continuation's units, one line a
    seed) beside the released 2 epochs (1e5 steps, seeds 0-9 of the first 50 units). Curves: seed -> (steps, acc)."""
    plt = _plt()
    fig, ax = plt.subplots(figsize=(6.0, 3.2))
    for i, (seed, (steps, acc)) in enumerate(sorted(short_curves.items())):
        ax.plot(
            steps, acc, color="tab:gray", linewidth=0.8, alpha=0.6, label="1e5 steps, seeds 0-9" if i == 0 else None
        )
    for i, (seed, (steps, acc)) in enumerate(sorted(long_curves.items())):
        # evaluated at 0 and every 1e5 steps: the segment from 0 to 1e5 is dotted, nothing was measured inside it
        ax.plot(steps[:2], acc[:2], color="tab:purple", linestyle=":", linewidth=0.8)
        ax.plot(
            steps[1:],
            acc[1:],
            color="tab:purple",
            marker=".",
            linewidth=1.0,
            label="1e6 steps, seeds from 10 (evaluated every 1e5)" if i == 0 else None,
        )
    ax.axvline(1e5, color="black", linewidth=0.6, linestyle="--", label="registered early checkpoint (1e5)")
    ax.set_xscale("symlog", linthresh=1e4)
    ax.set_xlim(0, 1.3e6)
    ax.set_xlabel("step")
    ax.set_ylabel("clean test accuracy")
    ax.set_title("ERM at the released and the text's horizon", fontsize=8)
    ax.legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    return fig
