"""L5's figures, drawn from the tier's grid per batch size (workloads.kl_dro.grid's records): the stability table
and the objective curves of the printed pair."""

from __future__ import annotations

import numpy as np

from workloads import kl_dro as fx
from kernels import kl_dro


def stability_table(grids: dict, tier: str):
    """Per batch size: the seeds stable of each method (row) at each eta (column), the largest all-seed eta bold."""
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(grids), figsize=(3.3 * len(grids), 3.3), squeeze=False)
    for ax, (batch, run) in zip(axes[0], grids.items()):
        tab = fx.table(run)
        methods = list(tab["seeds_stable"])
        etas = sorted({eta for row in tab["seeds_stable"].values() for eta in row})
        counts = np.array([[tab["seeds_stable"][m].get(eta, np.nan) for eta in etas] for m in methods], dtype=float)
        ax.imshow(counts / tab["seeds"], cmap="RdYlGn", vmin=0, vmax=1, aspect="auto")
        for i, m in enumerate(methods):
            for j, eta in enumerate(etas):
                if np.isfinite(counts[i, j]):
                    best = tab["largest"][m] == eta
                    dark = counts[i, j] / tab["seeds"] > 0.85 or counts[i, j] / tab["seeds"] < 0.15
                    ax.text(
                        j,
                        i,
                        f"{int(counts[i, j])}",
                        ha="center",
                        va="center",
                        fontsize=7,
                        color="white" if dark else "black",
                        fontweight="bold" if best else "normal",
                    )
        ax.set_xticks(range(len(etas)), [f"{e:.0e}" for e in etas], fontsize=6, rotation=45)
        ax.set_yticks(range(len(methods)), [fx.method_name(m) for m in methods], fontsize=6)
        ax.set_title(f"batch {batch}: seeds stable of {tab['seeds']} (bold: largest all-seed eta)", fontsize=6)
        ax.set_xlabel("eta", fontsize=7)
    fig.suptitle(f"KL-DRO stability ({tier}): finite and L_final <= L_0", fontsize=8)
    fig.tight_layout()
    return fig


def printed_pair(grids: dict, tier: str):
    """Per batch size: the median objective over seeds of the printed pair, proposed at 1e-4 (every rho) and the
    baseline at 1e-6, with L_0."""
    import matplotlib.pyplot as plt

    top = 1e3  # diverged runs (up to inf) are drawn at the top edge
    fig, axes = plt.subplots(1, len(grids), figsize=(3.3 * len(grids), 3.0), squeeze=False, sharey=True)
    colours = plt.cm.viridis(np.linspace(0, 0.9, len(kl_dro.RHOS)))
    for ax, (batch, run) in zip(axes[0], grids.items()):
        epochs = np.array(run["records"])
        for c, config in enumerate(run["configs"]):
            if config.rho is None and config.eta == 1e-6:
                style = {"color": "k", "ls": "--"}
            elif config.rho is not None and config.eta == 1e-4:
                style = {"color": colours[kl_dro.RHOS.index(config.rho)], "ls": "-"}
            else:
                continue
            values = np.where(np.isfinite(run["objective"][:, c]), run["objective"][:, c], np.inf)
            ax.plot(epochs, np.minimum(np.median(values, axis=0), top), lw=1, label=config.name, **style)
        ax.axhline(run["L0"], color="grey", lw=0.6, ls=":")
        ax.set_yscale("log")
        ax.set_ylim(1, top * 1.5)
        ax.set_title(f"batch {batch} ({run['objective'].shape[0]} seeds)", fontsize=7)
        ax.set_xlabel("epoch", fontsize=7)
    axes[0][0].set_ylabel(f"L, median over seeds (clipped at {top:g}; dotted: L_0)", fontsize=7)
    axes[0][-1].legend(fontsize=5, loc="lower left")
    fig.suptitle(
        f"the printed pair ({tier}): proposed at eta = 1e-4 (every rho), baseline at 1e-6 (dashed)", fontsize=8
    )
    fig.tight_layout()
    return fig
