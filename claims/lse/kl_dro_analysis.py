"""L5's statement decisions as pure functions of its runs (workloads.kl_dro's grid and released records, the dicts
kernels.kl_dro.sgd_runs returns) and of the numbers they are decided against: each returns a Finding (its headline,
its evidence and the decision to make), so the statement tests only wire runs to a finding and its evidence, and the
decisions are tested directly on constructed records (test_kl_dro_analysis.py).

A run record: `configs` [RunConfig], `records` (the epochs recorded), `L0`, and per stream and configuration
`objective` (per record), `finite`, `first_nonfinite_epoch` (-1: never), `peak_loss`.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from pytest_claims import statement_holds, statement_le

from claims.findings import Finding
from workloads import kl_dro as fx
from kernels import kl_dro

PRINTED_ETA = 1e-4  # the claim's stepsize for the proposed method, at every batch size
# The conventions that could decide "stable" (workloads.kl_dro: precisions are runs, loss scalings configurations
# within them, stability rules readings of the same runs), in the order the evidence lists them.
CONVENTIONS = [(precision, rule, scale) for precision in fx.PRECISIONS for rule in fx.RULES for scale in fx.LOSS_SCALES]
FACTORS = {"precision": 0, "stability rule": 1, "loss scaling": 2}  # a convention's factors, by place
# The logbook's best all-seed-stable final objective per batch size: (proposed, baseline), to compare with.
UPDATE_REFERENCE = (
    "per run and step, from the program's own state: autograd through the estimator (softplus "
    "threshold 50), torch.optim.SGD(lr=eta, momentum=0.9, nesterov=True), float64"
)
LOGBOOK_BEST_FINAL = {"batch10": [16.89, 19.99], "batch100": [16.37, 17.40], "batch1000": [2.13, 3.23]}


# ---------------------------------------------------------------------------------------------
# The authors' released configurations


def convention_name(precision: str, rule: str, scale: float) -> str:
    loss = "r^2" if scale == 1.0 else f"{scale:g} r^2"
    rule_text = {
        "final": "finite and L_final <= L_0",
        "every-epoch": "L <= L_0 at every epoch end",
        "finite": "finite at the end",
    }[rule]
    return f"{precision} | {rule_text} | loss {loss}"


def cell_name(batch: int, eta: float, rho) -> str:
    return f"batch {batch} {fx.method_name(rho)} eta={eta:g}"


def logbook_stable(config: kl_dro.RunConfig, batch: int, logbook: dict) -> bool:
    """The logbook's label of a cell: its eta at most the largest eta the logbook's table calls stable."""
    largest = logbook[config.rho][batch]
    return largest is not None and config.eta <= largest


def released_configurations(
    runs: dict[tuple[int, str], dict], seeds: int, *, released: dict, edge: float, logbook: dict
) -> Finding:
    """released-configurations: `runs[(batch, precision)]` the released configurations of a batch size
    (workloads.kl_dro.released_configs: each pair of `released[batch]` at 1x and `edge` x eta, every loss scaling)
    on `seeds` seeds, in every precision. Holds when every released configuration converges on every seed as
    released, and no proposed one does at `edge` x its eta; the evidence says which conventions make the
    `logbook` table's labels of these cells."""
    batches = list(dict.fromkeys(batch for batch, _ in runs))
    per_cell, as_released, at_the_edge, labels = {}, {}, {}, {}
    for batch in batches:
        for eta, rho in released[batch]:
            cell = cell_name(batch, eta, rho)
            labels[cell] = "stable" if logbook_stable(kl_dro.RunConfig(eta, rho), batch, logbook) else "unstable"
            per_cell[cell] = _converged_per_convention(runs, batch, eta, rho)
            run32 = runs[(batch, "float32")]
            as_released[cell] = {
                "seeds_converged": per_cell[cell][convention_name(*fx.AS_RELEASED)],
                **_trajectory(run32, fx.config_index(run32, eta, rho)),
            }
            c_edge = fx.config_index(run32, eta * edge, rho)
            at_the_edge[cell] = {
                "rho": rho,
                "eta": float(f"{eta * edge:.12g}"),
                "seeds_converged": int(fx.stable(run32)[:, c_edge].sum()),
                "first_nonfinite_epoch": [int(e) for e in run32["first_nonfinite_epoch"][:, c_edge]],
            }
    conclusion, agreement = _logbook_agreement(per_cell, labels, seeds)
    failing = {cell: v["seeds_converged"] for cell, v in as_released.items() if v["seeds_converged"] < seeds}
    not_at_edge = {
        cell: v["seeds_converged"]
        for cell, v in at_the_edge.items()
        if v["rho"] is not None and v["seeds_converged"] == seeds
    }
    message = (
        f"released configurations not converged on every seed (as released): {failing}; proposed converged on every "
        f"seed at {edge:g}x eta: {not_at_edge}"
    )
    return Finding(
        headline={
            "conclusion": conclusion,
            **{f"{cell}: converged of {seeds} as released": v["seeds_converged"] for cell, v in as_released.items()},
            **{
                f"{cell}: converged of {seeds} at {edge:g}x eta": v["seeds_converged"]
                for cell, v in at_the_edge.items()
                if v["rho"] is not None
            },
        },
        record={
            "seeds_converged_per_convention": per_cell,
            "logbook_table_calls_them": labels,
            **agreement,
            "as_released": as_released,
            "at_the_edge": at_the_edge,
            "torch_seeds": list(range(seeds)),
            "epochs": runs[(batches[0], "float32")]["records"][-1],
        },
        decide=lambda: statement_holds(not failing and not not_at_edge, message),
    )


def _converged_per_convention(runs: dict, batch: int, eta: float, rho) -> dict[str, int]:
    """The seeds a cell converged on under each convention (its precision's run, rule and loss scaling)."""
    out = {}
    for precision, rule, scale in CONVENTIONS:
        run = runs[(batch, precision)]
        out[convention_name(precision, rule, scale)] = int(
            fx.stable(run, rule)[:, fx.config_index(run, eta, rho, scale)].sum()
        )
    return out


def _trajectory(run: dict, c: int) -> dict[str, Any]:
    """A configuration's trajectory as released (float32): its final L per seed, the first epoch it ended above
    L_0 (None: never), the largest finite batch loss it saw."""
    L = run["objective"]
    above = ~np.isfinite(L[:, c, 1:]) | (L[:, c, 1:] > L[:, c, :1])
    finite_peaks = run["peak_loss"][:, c][np.isfinite(run["peak_loss"][:, c])]
    return {
        "final_L_float32": [fx.plain(v) for v in L[:, c, -1]],
        "first_epoch_above_L0": [int(np.argmax(a)) + 1 if a.any() else None for a in above],
        "largest_batch_loss": float(finite_peaks.max()) if finite_peaks.size else None,
    }


def _logbook_agreement(per_cell: dict, logbook: dict, seeds: int) -> tuple[str, dict[str, Any]]:
    """A one-line conclusion, and the evidence it is drawn from: which conventions make the logbook's labels (a
    cell is "stable" under a convention when every seed converges) and which factor changes a label."""
    label = {
        conv: {cell: "stable" if per_cell[cell][convention_name(*conv)] == seeds else "unstable" for cell in per_cell}
        for conv in CONVENTIONS
    }
    agreeing = {conv: sum(lab[cell] == logbook[cell] for cell in logbook) for conv, lab in label.items()}
    unstable_in_logbook = sorted(cell for cell, lab in logbook.items() if lab == "unstable")
    called_unstable = {
        convention_name(*conv): sorted(cell for cell in unstable_in_logbook if lab[cell] == "unstable")
        for conv, lab in label.items()
    }
    reproducing = [convention_name(*conv) for conv, k in agreeing.items() if k == len(logbook)]
    # the factors that change a label: two conventions differing in that factor alone label a cell differently
    changed_by = {
        name: sorted(
            {
                cell
                for a in CONVENTIONS
                for b in CONVENTIONS
                for cell in logbook
                if sum(x != y for x, y in zip(a, b)) == 1 and a[i] != b[i] and label[a][cell] != label[b][cell]
            }
        )
        for name, i in FACTORS.items()
    }
    if reproducing:
        conclusion = (
            f"{len(reproducing)} of {len(CONVENTIONS)} conventions reproduce the logbook's labels of all "
            f"{len(logbook)} cells: {reproducing}"
        )
    else:
        closest = max(agreeing.values())
        best = [convention_name(*conv) for conv, k in agreeing.items() if k == closest]
        conclusion = (
            f"no convention of the {len(CONVENTIONS)} reproduces the logbook's labels of all {len(logbook)} cells "
            f"({len(unstable_in_logbook)} of them unstable there); closest, {closest} of {len(logbook)} agreeing: "
            f"{best}"
        )
    as_released_stable = sum(label[fx.AS_RELEASED][cell] == "stable" for cell in logbook)
    conclusion += (
        "; a label changes with the "
        + ", ".join(f"{name} in {len(cells)} cells" for name, cells in changed_by.items())
        + f"; as released {as_released_stable} of {len(logbook)} cells converge on every seed"
    )
    return conclusion, {
        "logbook_unstable_cells_called_unstable_per_convention": called_unstable,
        "conventions_reproducing_the_logbook": reproducing,
        "cells_agreeing_with_the_logbook_per_convention": {convention_name(*conv): k for conv, k in agreeing.items()},
        "cells_whose_label_changes_with": changed_by,
    }


# ---------------------------------------------------------------------------------------------
# The claim as printed


def claim_as_printed(grids: dict[int, dict], *, logbook: dict, rules: tuple[str, ...] = ()) -> Finding:
    """claim-as-printed: `grids` the tier's grid per batch size (batch 10 among them). Holds when some rho converges
    on every seed at PRINTED_ETA at every batch size run. `rules`: the stability rules whose tables are compared
    with the `logbook`'s (the full tier, whose grid is the logbook's)."""
    per_batch = {}
    for batch, run in grids.items():
        tab = fx.table(run)
        at_printed = {
            rho: row.get(PRINTED_ETA)
            for rho, row in tab["seeds_stable"].items()
            if rho is not None and PRINTED_ETA in row
        }
        per_batch[batch] = {
            "seeds": tab["seeds"],
            "proposed_seeds_stable_at_1e-4": {fx.method_name(r): k for r, k in at_printed.items()},
        }
    # per batch size: the rhos that converge on every seed at eta = 1e-4
    converging = {
        batch: sorted(float(m[4:]) for m, k in v["proposed_seeds_stable_at_1e-4"].items() if k == v["seeds"])
        for batch, v in per_batch.items()
    }
    # the statement: some rho does so at every batch size the tier ran
    rhos = set.intersection(*[set(v) for v in converging.values()])
    # each cell's largest all-seed-stable eta among the etas run there (None: none of them; not "diverges at every eta")
    tables = {
        batch: {
            fx.method_name(rho): {"largest": fx.plain(eta), "of_etas_run": fx.etas_run(run)[rho]}
            for rho, eta in fx.table(run)["largest"].items()
        }
        for batch, run in grids.items()
    }
    record = {
        "rhos_converging_at_1e4_per_batch": converging,
        "largest_eta_stable_on_all_seeds": tables,
        "seeds_stable_at_each_eta": {
            batch: {fx.method_name(r): row for r, row in fx.table(run)["seeds_stable"].items()}
            for batch, run in grids.items()
        },
        "per_batch": per_batch,
        "epochs": {batch: run["records"][-1] for batch, run in grids.items()},
        "logbook_table": {fx.method_name(r): row for r, row in logbook.items()},
        "logbook_table_null_means": "no eta of the logbook's whole grid (1e-8 to 1e-4) stable on all 10 seeds",
        "L0": grids[next(iter(grids))]["L0"],
    }
    if rules:  # which stability rule reproduces the logbook's table (21 cells)
        record["logbook_table_agreement_by_rule"] = _table_agreement(grids, logbook, rules)
    message = f"no rho converges on every seed at eta = 1e-4 at batch sizes {sorted(grids)}: {per_batch}"
    return Finding(
        headline={
            "best_rho_seeds_at_1e4_batch10": max(per_batch[10]["proposed_seeds_stable_at_1e-4"].values()),
            "seeds": per_batch[10]["seeds"],
            "rhos_converging_at_1e4_batch10": converging[10],
            "batch10_alone_refutes": not converging[10],
            "rhos_converging_at_1e4_at_every_batch": sorted(rhos),
        },
        record=record,
        decide=lambda: statement_holds(bool(rhos), message),
    )


def _table_agreement(grids: dict[int, dict], logbook: dict, rules: tuple[str, ...]) -> dict[str, dict]:
    """Per stability rule: how many cells of the logbook's table our largest all-seed-stable eta agrees with, and
    the cells where it does not (ours, the logbook's)."""
    agreement = {}
    for rule in rules:
        cells = {
            f"batch {b} {fx.method_name(rho)}": (fx.table(run, rule)["largest"][rho], logbook[rho][b])
            for b, run in grids.items()
            for rho in logbook
        }
        agreement[rule] = {
            "cells_agreeing": sum(ours == theirs for ours, theirs in cells.values()),
            "disagreeing (ours, logbook)": {k: v for k, v in cells.items() if v[0] != v[1]},
        }
    return agreement


# ---------------------------------------------------------------------------------------------
# The baseline's stepsize


def baseline_largest_stable_eta(grids: dict[int, dict], *, required: float, logbook: dict) -> Finding:
    """baseline-needs-1e-6-at-batch-10: holds when the baseline's largest all-seed-stable eta at batch 10 is
    `required`."""
    largest = {batch: fx.table(run)["largest"][None] for batch, run in grids.items()}
    seeds = {batch: fx.table(run)["seeds_stable"][None] for batch, run in grids.items()}
    message = f"baseline's largest all-seed-stable eta at batch 10 is {largest[10]} (seeds stable per eta: {seeds[10]})"
    return Finding(
        headline={f"baseline_largest_eta_batch{b}": fx.plain(eta) for b, eta in largest.items()},
        record={
            "seeds_stable": seeds,
            "etas_run": {batch: fx.etas_run(run)[None] for batch, run in grids.items()},
            "logbook": {f"batch{b}": eta for b, eta in logbook[None].items()},
        },
        decide=lambda: statement_holds(largest[10] == required, message),
    )


# ---------------------------------------------------------------------------------------------
# The update equations


def update_equations(compared: dict[tuple[int, int], dict], configs: list, streams: int, rtol: float) -> Finding:
    """update-equations: `compared[(batch, steps)]` the batched program against torch.optim.SGD step by step
    (workloads.kl_dro.compare_with_torch_optim) on `configs`. Holds when every relative difference, per case and
    part (baseline theta, proposed theta, proposed alpha), is at most `rtol`. The comparison means something only
    where the runs moved: theta everywhere, alpha in the proposed runs (a run that barely moved stops the
    statement: the evidence is broken, not the claim refuted)."""
    proposed = np.array([c.rho is not None for c in configs])
    per_case, worst = {}, {"baseline theta": 0.0, "proposed theta": 0.0, "proposed alpha": 0.0}
    for (batch, steps), got in compared.items():
        assert np.min(got["theta_moved"]) > 1e-6, (
            f"batch {batch}: a run barely moved theta ({np.min(got['theta_moved'])!r})"
        )
        assert np.min(got["alpha_moved"][:, proposed]) > 1e-6, (
            f"batch {batch}: a proposed run barely moved alpha ({np.min(got['alpha_moved'][:, proposed])!r})"
        )
        errors = {
            "baseline theta": float(np.max(got["theta_error"][:, ~proposed])),
            "proposed theta": float(np.max(got["theta_error"][:, proposed])),
            "proposed alpha": float(np.max(got["alpha_error"][:, proposed])),
        }
        per_case[f"batch {batch}, {steps} steps"] = {
            **errors,
            "smallest theta move": float(np.min(got["theta_moved"])),
            "smallest alpha move (proposed)": float(np.min(got["alpha_moved"][:, proposed])),
        }
        worst = {k: float(np.max([worst[k], v])) for k, v in errors.items()}  # a NaN shows
    differences = [value for case in per_case.values() for key, value in case.items() if key in worst]  # in order
    return Finding(
        headline={**{f"largest relative difference, {k}": v for k, v in worst.items()}, "tolerance": rtol},
        record={
            "per_case": per_case,
            "configurations": [c.name for c in configs],
            "streams": streams,
            "reference": UPDATE_REFERENCE,
        },
        decide=lambda: statement_le(
            differences,
            rtol,
            what="relative difference of the batched update from torch.optim.SGD(nesterov=True), per case and part",
        ),
    )


# ---------------------------------------------------------------------------------------------
# The figure's qualitative message


def proposed_beats_baseline(run: dict, batch: int) -> Finding:
    """proposed-beats-baseline: holds when the best all-seed-stable final objective (mean over seeds) of the proposed
    method is strictly below the baseline's, at one batch size's grid."""
    ok = fx.stable(run).all(axis=0)
    mean_final = np.mean(run["objective"][:, :, -1], axis=0)
    best = {}
    for method in ("baseline", "proposed"):
        candidates = [
            (float(mean_final[c]), cfg.name)
            for c, cfg in enumerate(run["configs"])
            if ok[c] and (cfg.rho is None) == (method == "baseline")
        ]
        best[method] = min(candidates) if candidates else (math.inf, "none stable on all seeds")
    return Finding(
        headline={"proposed_best": best["proposed"][0], "baseline_best": best["baseline"][0]},
        record={
            "proposed_setting": best["proposed"][1],
            "baseline_setting": best["baseline"][1],
            "seeds": run["objective"].shape[0],
            "logbook": LOGBOOK_BEST_FINAL,
        },
        decide=lambda: statement_le(
            best["proposed"][0],
            best["baseline"][0],
            strict=True,
            what=f"the best all-seed-stable final objective, proposed against baseline, batch {batch}",
        ),
    )
