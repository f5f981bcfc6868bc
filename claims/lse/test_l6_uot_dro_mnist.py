"""L6: "In unbalanced optimal-transport-based DRO on MNIST with label noise, the proposed approach
(Equation 22) converges faster than the baseline (Equation 21) using eta=10^-4 versus the baseline's
required eta=10^-5 (Figure 4, Section 3.3)."

Every tier trains one batched program (fixtures/uot_dro.py): smoke on CPU in seconds (2 seeds x 30
steps, with the stress stepsizes 1e-1 and 3e-2), full on CPU at reduced scale, gpu at the paper's scale
as the authors' released code runs it (seeds 0-9, 1e5 batch-1 SGD steps, proposed 1e-4, baseline
1e-5, ERM 1e-3, plus the baseline at 1e-4 and 1e-3 for the overflow statements). Statements that need
the paper's scale are decided in the gpu tier; the CPU tiers show `reduced scale`.
"""

from __future__ import annotations

import dataclasses
import inspect
import math
import warnings

import numpy as np
import pytest
import torch
from scipy import stats

from fixtures import uot_dro as fx
from fixtures.options import OPTIONS_KEY
from kernels import safe_kl, uot_dro
from kernels.stats import mean_lower_bound, sign_test_greater
from claims.tiers import tiers
from pytest_claims import (
    decide_test,
    rate_lower_bound,
    rate_upper_bound,
    registered_false_alarm,
    statement_ge,
    statement_holds,
    statement_le,
    statement_none,
)

L6 = fx.L6
GPU_TIER_DEVICE_OPTION = "--l6-device"  # the gpu tier runs on CPU when it says so (fixtures/options.py)
ALL_TIERS = tiers("smoke", "full", "gpu")
FULL_AND_GPU = tiers("full", "gpu")
PAPER_DRO = (("proposed", 1e-4), ("baseline", 1e-5))  # the released param_grid's DRO settings
PROPOSED, BASELINE, ERM = ("proposed", 1e-4), ("baseline", 1e-5), ("erm", 1e-3)
U32 = 2.0**-24  # float32 unit roundoff
# adversarial-loss-dominates-clean: lhat and the clean loss are each a float32 cross-entropy, logsumexp(logits)
# minus the label's logit, rounded at most 4 times in exp, sum, log and the subtractions (4 u of the logits'
# logsumexp L) on top of the logits' own float32 rounding (at most 4 u of L: measured 4.1 u on a network trained
# 10000 steps at 1e-3): 8 u L each, 16 u L for their difference. The evaluation does not record L (the kernel
# change that would is in the registry text), so the test takes the curve's largest |lhat| or clean loss S for
# it: L <= S near the initialisation (logits O(0.1), L ~ ln 10); on that trained network L reached 1.95 S, and
# the measured errors 4.1 u S (clean) and 5.2 u S (lhat), 9.3 u S together, stayed inside 16 u S.
ROUNDING_K = 16
# The logbook's reduced CPU runs (3 seeds), to compare with: never asserted.
LOGBOOK = {
    "run A (10000 images x 5 epochs)": {
        "baseline 1e-3 overflow steps": [1393, 3533, 6906],
        "baseline 1e-4 overflowed": "1/3 (step 26174)",
        "F proposed 1e-4": 0.889,
        "F baseline 1e-5": 0.998,
    },
    "run B (25000 images x 4 epochs)": {
        "baseline 1e-4 overflowed": "0/3",
        "F proposed 1e-4": 0.783,
        "F baseline 1e-5": 0.943,
        "F baseline 1e-4": 0.663,
    },
}


def _run(pytestconfig, options, tier, needs=()):
    """The tier's runs; `needs`, the settings a statement decides from (from --l6-evidence, the statement is
    skipped, naming the units, where one of these is not committed; nothing is computed in its place)."""
    return fx.tier_run(pytestconfig, options, tier, needs)


# Figure 4 as the paper and the logbook describe it, shown beside the curves drawn from the paper-scale units
PAPER_FIGURE_4 = (
    "Figure 4 (Section 3.3): on MNIST with 25% feature-dependent label noise, the proposed approach (22) at eta = "
    "1e-4 converges faster than the baseline (21), which requires eta = 1e-5; ERM's clean test accuracy falls late in "
    "training as it fits the noisy labels (the figure's left panel, as the logbook reads it)"
)


def _paper_units(pytestconfig, run: dict, evidence, tier: str) -> None:
    """From --l6-evidence: every unit's outcome per seed and setting (overflow step, largest softplus argument, F
    and the clean and noisy accuracies at every checkpoint) and where and how it was computed."""
    folder = pytestconfig.stash.get(fx.EVIDENCE_KEY, None)
    if tier != "gpu" or folder is None:
        return
    from fixtures import l6_evidence

    units = {}
    for i, (method, lr, seed) in enumerate(run["runs"]):
        units[f"gpu-cpu-{method}-{lr:g}-seed{seed}"] = {
            "overflow_step": int(run["overflow_step"][i]) if run["overflow_step"][i] > 0 else None,
            "largest_softplus_argument": fx.plain(run["max_exponent"][i]),
            "F": [fx.plain(v) for v in run["F"][i]],
            "test_accuracy": [fx.plain(v) for v in run["test_accuracy"][i]],
            "val_accuracy": [fx.plain(v) for v in run["val_accuracy"][i]],
        }
    evidence.record(
        paper_figure_4=PAPER_FIGURE_4,
        checkpoints=[int(s) for s in run["curve_steps"]],
        units=units,
        computed=l6_evidence.provenance_summary(folder),
    )


# Work units: where a tier trains each run as a program of its own (full: one per setting and seed),
# each program is a test of its own, placed so each xdist worker starts with one (pytest_claims'
# work_unit marker); the statement tests read them through the store. A program is one SGD trajectory
# of the tier's steps, which cannot be split further. A single batched program (smoke, gpu on CUDA) gains
# nothing from it; the gpu tier on CPU (--l6-device cpu) trains its runs as units (ids gpu-cpu-...), which
# a CUDA night skips.
INDIVISIBLE = "one batch-1 SGD trajectory: each step needs the one before"
UNIT_SIZES = {"full": fx.SIZES["full"], "gpu": dataclasses.replace(fx.SIZES["gpu"], program_per_run=True)}
PROGRAMS = [
    pytest.param(
        tier,
        (runs[0].method, runs[0].lr, runs[0].seed),
        marks=[getattr(pytest.mark, tier), pytest.mark.work_unit(indivisible=INDIVISIBLE)],
        id=f"{tier}{'-cpu' if tier == 'gpu' else ''}-{runs[0].method}-{runs[0].lr:g}-seed{runs[0].seed}",
    )
    for tier, size in UNIT_SIZES.items()
    for runs in fx.programs_of(size)
]


@pytest.mark.parametrize("tier, program", PROGRAMS)
def test_program(pytestconfig, options, tier, program):
    """One program of the tier's runs, trained (or read from the store) ahead of the statements."""
    size = fx.size_of(pytestconfig, tier)
    if not size.program_per_run:
        pytest.skip(
            "the gpu tier's L6 trains one batched program on CUDA: this unit is its CPU route (--l6-device cpu)"
        )
    programs = {(runs[0].method, runs[0].lr, runs[0].seed): runs for runs in fx.programs_of(size)}
    if program not in programs:
        pytest.skip(f"not in this slice of the gpu tier ({size.seeds} seeds)")
    runs = programs[program]
    try:
        run = fx.program_run(pytestconfig, options, tier, runs)
    except fx.UnitMissing as missing:
        pytest.skip(f"not in the committed evidence ({missing.why}); compute it with `{fx.EVIDENCE_RUN}`")
    _ran_on_device(pytestconfig, run, tier)
    trained = [tuple(r) for r in run["runs"]]
    assert sorted(trained) == sorted((r.method, r.lr, r.seed) for r in runs), (
        f"program {program} trained {trained}, not {runs}"
    )
    assert len(run["overflow_step"]) == len(runs), (
        f"program {program}: {len(run['overflow_step'])} overflow records for {len(runs)} runs"
    )


def _ran_on_device(pytestconfig, run: dict, tier: str) -> None:
    if tier == "gpu":  # a gpu-tier verdict must come from the device asked for (--l6-device)
        wanted = pytestconfig.stash[fx.GPU_DEVICE_KEY]
        assert run["device"].startswith(wanted), f"gpu tier ran on {run['device']}, asked for {wanted}"


def _scale(pytestconfig, tier: str) -> dict:
    size = fx.size_of(pytestconfig, tier)
    return {
        "tier": tier,
        "steps": size.steps,
        "seeds": size.seeds,
        "objective_images": size.objective_images,
        "test_images": size.test_images,
        "paper_scale": fx.paper_scale(size),
        "determinism": fx.determinism(
            pytestconfig.stash[fx.GPU_DEVICE_KEY] if tier == "gpu" else pytestconfig.stash[OPTIONS_KEY].device
        ),
    }


def _needs_paper_scale(pytestconfig, tier: str) -> None:
    size = fx.size_of(pytestconfig, tier)
    if not fx.paper_scale(size):
        pytest.skip(
            f"needs the paper's scale ({fx.PAPER_STEPS} steps, {fx.PAPER_SEEDS} seeds, "
            f"{fx.SIZES['gpu'].objective_images} objective and {fx.SIZES['gpu'].test_images} test images); the --l6-* "
            f"options ran a slice ({size.steps} steps, {size.seeds} seeds, {size.objective_images} and "
            f"{size.test_images} images)"
        )


def _gpu_needs_paper_scale(pytestconfig, tier: str) -> None:
    """A statement parametrised over every tier whose gpu run is its decisive one: a slice of the gpu
    tier (--l6-steps / --l6-seeds below the paper's) skips it, saying so, rather than deciding it."""
    if tier == "gpu":
        _needs_paper_scale(pytestconfig, tier)


# ---------------------------------------------------------------------------------------------
# Figures


def _plt():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _overflow_figure(run: dict, tier: str):
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


def _curve_figure(run: dict, tier: str, key: str, settings, ylabel: str):
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


def _accuracy_figure(run: dict, tier: str, settings):
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


# ---------------------------------------------------------------------------------------------
# Overflow


def _settings_in(run: dict) -> list[tuple[str, float]]:
    return list(dict.fromkeys((m, lr) for m, lr, _ in run["runs"]))


@pytest.mark.claim(L6, statement="proposed-never-overflows")
@pytest.mark.parametrize("tier", ALL_TIERS)
def test_proposed_never_overflows(pytestconfig, options, evidence, tier):
    _gpu_needs_paper_scale(pytestconfig, tier)
    run = _run(pytestconfig, options, tier, needs=(PROPOSED,))
    _ran_on_device(pytestconfig, run, tier)
    _proposed_never(pytestconfig, run, evidence, tier)


def _proposed_never(pytestconfig, run: dict, evidence, tier: str) -> None:
    """No run of the proposed method at 1e-4 overflows (one that does refutes it, with its seed and step)."""
    rows = fx.select(run, *PROPOSED)
    overflowed = [int(s) for s in run["overflow_step"][rows] if s > 0]
    largest = float(np.max(run["max_exponent"][rows]))
    table = fx.overflow_table(run)
    evidence.headline(
        proposed_1e4_overflowed=f"{len(overflowed)}/{len(rows)}",
        largest_softplus_argument=largest,
        float32_exp_threshold=run["threshold_float32"],
    )
    evidence.record(
        scale=_scale(pytestconfig, tier), overflow=table, device=run["device"]
    )  # timings: in the store's events, not evidence
    evidence.figure(f"overflow-step distribution ({tier})", _overflow_figure(run, tier))
    cases = [{"seed": int(run["runs"][i][2]), "overflow_step": int(run["overflow_step"][i])} for i in rows]
    statement_none(run["overflow_step"][rows] > 0, what="proposed eta=1e-4 runs that overflowed", cases=cases)


@pytest.mark.claim(L6, statement="stress-stepsize-contrast")
@pytest.mark.smoke
def test_stress_stepsize_contrast(pytestconfig, options, evidence):
    run = _run(pytestconfig, options, "smoke")
    base = run["overflow_step"][fx.select(run, "baseline", fx.STRESS_LR)]
    prop = run["overflow_step"][fx.select(run, "proposed", fx.STRESS_LR)]
    more, fewer = _overflow_counts(run, "baseline", fx.STRESS_LR), _overflow_counts(run, "proposed", fx.STRESS_LR)
    evidence.headline(
        baseline_overflowed=f"{more['k']}/{more['n']}",
        proposed_overflowed=f"{fewer['k']}/{fewer['n']}",
        horizon=run["steps"],
    )
    evidence.record(
        baseline_overflow_steps=base.tolist(), proposed_overflow_steps=prop.tolist(), overflow=fx.overflow_table(run)
    )
    evidence.figure("overflow-step distribution (smoke, with the stress stepsizes)", _overflow_figure(run, "smoke"))
    _rate_exceeds(
        more, fewer, f"overflow rate within {run['steps']} steps at eta={fx.STRESS_LR:g}: baseline above proposed"
    )


def _baseline_overflow_evidence(run: dict, lr: float) -> dict:
    rows = fx.select(run, "baseline", lr)
    steps = run["overflow_step"][rows]
    over = steps[steps > 0]
    k, n = int(len(over)), int(len(rows))
    lo, hi = rate_lower_bound(k, n, 0.025), rate_upper_bound(k, n, 0.025)  # the two-sided 95% interval
    return {
        "overflowed": f"{k}/{n}",
        "seeds": [
            int(run["runs"][i][2]) for i in rows
        ],  # every seed (the released evaluation leaves seed 8 out of the baseline's curves)
        "steps_per_seed": [int(s) if s > 0 else None for s in steps],
        "median_step": float(np.median(over)) if k else None,
        "exponent_at_overflow": [fx.plain(e) for e in run["overflow_exponent"][rows]],
        "largest_exponent_of_survivors": fx.plain(np.max(run["max_exponent"][rows][steps < 0])) if k < n else None,
        "p_overflow_within_horizon_95ci": [lo, hi],
        "k": k,
        "n": n,
    }


def _rate_exceeds(more: dict, fewer: dict, what: str) -> None:
    """Decide 'the overflow probability of `more` exceeds that of `fewer`' by two one-sided Fisher exact
    tests at the registered level (which seed overflows, and when, is a draw: only the rates are the
    statement's)."""
    table = [[more["k"], more["n"] - more["k"]], [fewer["k"], fewer["n"] - fewer["k"]]]
    p_for = float(stats.fisher_exact(table, alternative="greater").pvalue)
    p_against = float(stats.fisher_exact(table, alternative="less").pvalue)
    decide_test(p_for, p_against, alpha=registered_false_alarm(), what=what)


def _baseline_at_1e_3(pytestconfig, run: dict, evidence, tier: str) -> None:
    """The baseline at 1e-3 overflows more often than the proposed method at 1e-4 (their rates; the
    overflow steps are reported)."""
    found = _baseline_overflow_evidence(run, 1e-3)
    proposed = _overflow_counts(run, *PROPOSED)
    evidence.headline(
        baseline_1e3_overflowed=found["overflowed"],
        proposed_1e4_overflowed=f"{proposed['k']}/{proposed['n']}",
        median_overflow_step=found["median_step"],
        horizon=run["steps"],
    )
    evidence.record(
        scale=_scale(pytestconfig, tier),
        baseline_1e3=found,
        float32_exp_threshold=run["threshold_float32"],
        logbook=LOGBOOK,
    )
    evidence.figure(f"overflow-step distribution ({tier})", _overflow_figure(run, tier))
    _rate_exceeds(
        found,
        proposed,
        f"overflow rate within {run['steps']} steps: baseline 1e-3 ({found['overflowed']}) above proposed 1e-4 "
        f"({proposed['k']}/{proposed['n']})",
    )


def _overflow_counts(run: dict, method: str, lr: float) -> dict:
    steps = run["overflow_step"][fx.select(run, method, lr)]
    return {"k": int((steps > 0).sum()), "n": int(len(steps))}


def _baseline_at_1e_4(pytestconfig, run: dict, evidence, tier: str) -> None:
    """ "The baseline requires 1e-5", as rates: at 1e-4 it overflows more often than at 1e-5 (so the
    smaller stepsize is what keeps it finite), every seed's overflow step reported."""
    found = _baseline_overflow_evidence(run, 1e-4)
    at_1e5 = _baseline_overflow_evidence(run, 1e-5)
    assert found["seeds"] == at_1e5["seeds"], "the two stepsizes ran on different seeds"
    evidence.headline(
        baseline_1e4_overflowed=found["overflowed"],
        overflow_steps=found["steps_per_seed"],
        baseline_1e5_overflowed=at_1e5["overflowed"],
        baseline_1e5_overflow_steps=at_1e5["steps_per_seed"],
        horizon=run["steps"],
    )
    evidence.record(
        scale=_scale(pytestconfig, tier),
        baseline_1e4=found,
        baseline_1e5=at_1e5,
        per_seed={
            seed: {"1e-4": a, "1e-5": b}
            for seed, a, b in zip(found["seeds"], found["steps_per_seed"], at_1e5["steps_per_seed"])
        },
        logbook=LOGBOOK,
    )
    evidence.figure(f"overflow-step distribution ({tier})", _overflow_figure(run, tier))
    _rate_exceeds(
        found,
        at_1e5,
        f"overflow rate within {run['steps']} steps: baseline 1e-4 ({found['overflowed']}) above baseline 1e-5 "
        f"({at_1e5['overflowed']})",
    )


@pytest.mark.claim(L6, statement="baseline-overflows-at-1e-3")
@pytest.mark.gpu
def test_baseline_overflows_at_1e_3(pytestconfig, options, evidence):
    _needs_paper_scale(pytestconfig, "gpu")
    run = _run(pytestconfig, options, "gpu", needs=(("baseline", 1e-3), PROPOSED))
    _ran_on_device(pytestconfig, run, "gpu")
    _baseline_at_1e_3(pytestconfig, run, evidence, "gpu")


@pytest.mark.claim(L6, statement="baseline-overflows-at-1e-3-cpu-horizon")
@pytest.mark.full
def test_baseline_overflows_at_1e_3_cpu_horizon(pytestconfig, options, evidence):
    _baseline_at_1e_3(pytestconfig, _run(pytestconfig, options, "full"), evidence, "full")


@pytest.mark.claim(L6, statement="baseline-requires-1e-5")
@pytest.mark.gpu
def test_baseline_requires_1e_5(pytestconfig, options, evidence):
    _needs_paper_scale(pytestconfig, "gpu")
    run = _run(pytestconfig, options, "gpu", needs=(("baseline", 1e-4), BASELINE))
    _ran_on_device(pytestconfig, run, "gpu")
    _baseline_at_1e_4(pytestconfig, run, evidence, "gpu")


@pytest.mark.claim(L6, statement="baseline-requires-1e-5-cpu-horizon")
@pytest.mark.full
def test_baseline_requires_1e_5_cpu_horizon(pytestconfig, options, evidence):
    _baseline_at_1e_4(pytestconfig, _run(pytestconfig, options, "full"), evidence, "full")


# ---------------------------------------------------------------------------------------------
# The objective


def _final_or_inf(run: dict, rows: np.ndarray, column: int) -> np.ndarray:
    """F at a checkpoint; +inf for a run that overflowed before it (it never gets there)."""
    values = run["F"][rows, column].astype(float)
    gone = (run["overflow_step"][rows] > 0) & (run["overflow_step"][rows] <= run["curve_steps"][column])
    return np.where(gone, np.inf, values)


@pytest.mark.claim(L6, statement="proposed-lower-objective")
@pytest.mark.parametrize(
    "tier", FULL_AND_GPU
)  # not in smoke: at 30 steps the difference is below the seed-to-seed spread
def test_proposed_lower_objective_than_baseline(pytestconfig, options, evidence, tier):
    _gpu_needs_paper_scale(pytestconfig, tier)
    run = _run(pytestconfig, options, tier, needs=(PROPOSED, BASELINE))
    _ran_on_device(pytestconfig, run, tier)
    _paper_units(pytestconfig, run, evidence, tier)
    _proposed_lower(pytestconfig, run, evidence, tier)


def _proposed_lower(pytestconfig, run: dict, evidence, tier: str) -> None:
    """The proposed method at 1e-4 ends with a lower F than the baseline at 1e-5, paired by seed."""
    prop, base = fx.select(run, *PROPOSED), fx.select(run, *BASELINE)
    steps = run["curve_steps"]
    later = range(1, len(steps))
    mean_prop = {int(steps[c]): float(np.mean(_final_or_inf(run, prop, c))) for c in later}
    mean_base = {int(steps[c]): float(np.mean(_final_or_inf(run, base, c))) for c in later}
    final_prop, final_base = _final_or_inf(run, prop, -1), _final_or_inf(run, base, -1)
    every_checkpoint = all(mean_prop[t] < mean_base[t] for t in mean_prop)
    every_seed = bool(np.all(final_prop < final_base))
    evidence.headline(
        F_proposed_1e4_final=float(np.mean(final_prop)),
        F_baseline_1e5_final=float(np.mean(final_base)),
        seeds_lower=f"{int(np.sum(final_prop < final_base))}/{len(prop)}",
        at_step=int(steps[-1]),
    )
    evidence.record(
        scale=_scale(pytestconfig, tier),
        F_start=float(np.mean(run["F"][prop, 0])),
        mean_F_proposed=mean_prop,
        mean_F_baseline=mean_base,
        final_F_per_seed={
            "proposed 1e-4": [fx.plain(v) for v in final_prop],
            "baseline 1e-5": [fx.plain(v) for v in final_base],
        },
        baseline_1e5_on_every_seed=_baseline_overflow_evidence(run, 1e-5),
        final_F_all_settings={
            fx.setting_name(m, lr): [fx.plain(v) for v in run["F"][fx.select(run, m, lr), -1]]
            for m, lr in _settings_in(run)
            if m != "erm"
        },
        logbook=LOGBOOK,
    )
    shown = [s for s in _settings_in(run) if s[0] != "erm" and s[1] <= 1e-3]
    evidence.figure(
        f"objective F(theta) on the fixed training subset ({tier})", _curve_figure(run, tier, "F", shown, "F(theta)")
    )
    evidence.figure(
        f"accuracy curves ({tier})", _accuracy_figure(run, tier, [s for s in _settings_in(run) if s[1] <= 1e-3])
    )
    # Paired by seed (a seed's runs share their initialisation and sample stream): shown when the paired
    # one-sided test of the final F differences rejects at LOWER_F_LEVEL, refuted when the opposite one
    # does at the registered false alarm. The t-test needs finite differences; where a run overflowed
    # (F = +inf) the exact sign test (kernels.stats) takes its place.
    diff = final_base - final_prop
    if np.all(np.isfinite(diff)):
        test, p_for, p_against = "paired t-test", _one_sided_p(diff), _one_sided_p(-diff)
    else:
        test, p_for, p_against = "sign test", sign_test_greater(diff)[0], sign_test_greater(-diff)[0]
    evidence.record(
        every_checkpoint_mean_lower=every_checkpoint,
        every_seed_lower=every_seed,
        paired_final_differences=[fx.plain(v) for v in diff],
        paired_test=test,
    )
    decide_test(
        p_for,
        p_against,
        alpha=registered_false_alarm(),
        held_alpha=LOWER_F_LEVEL,
        what=f"final F, baseline 1e-5 minus proposed 1e-4, paired over {len(diff)} seeds ({test}), > 0",
    )


def _minimise_alpha(lhat: np.ndarray) -> tuple[float, float]:
    """(alpha*, J*) of J(alpha) = mean of the kernel's (22) over the images, in float64, by bisection on
    dJ/dalpha (J is convex in alpha). Raises ClaimRefuted when J has no minimiser in a wide bracket."""
    values = torch.as_tensor(lhat, dtype=torch.float64)
    lb = uot_dro.LAMBDA * uot_dro.BETA

    def slope(alpha: float) -> float:
        a = torch.tensor(alpha, dtype=torch.float64, requires_grad=True)
        (g,) = torch.autograd.grad(uot_dro.proposed_loss(values, a).mean(), a)
        return float(g)

    lo, hi = float(values.min()) - 60 * lb, float(values.max()) + 60 * lb
    statement_holds(
        slope(lo) < 0 < slope(hi),
        f"(22) has no minimiser in alpha on [{lo:.1f}, {hi:.1f}]: slopes {slope(lo):.3g}, {slope(hi):.3g} (unbounded "
        f"below?)",
    )
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if mid in (lo, hi):
            break
        lo, hi = (mid, hi) if slope(mid) < 0 else (lo, mid)
    alpha = 0.5 * (lo + hi)
    with torch.no_grad():
        return alpha, float(uot_dro.proposed_loss(values, torch.tensor(alpha, dtype=torch.float64)).mean())


@pytest.mark.claim(L6, statement="proposed-objective-safe-kl")
@pytest.mark.parametrize("tier", ALL_TIERS)
def test_proposed_objective_is_safe_kl_of_f(pytestconfig, options, evidence, tier):
    run = _run(pytestconfig, options, tier, needs=(PROPOSED,))
    _ran_on_device(pytestconfig, run, tier)
    lb, rho = uot_dro.LAMBDA * uot_dro.BETA, uot_dro.RHO
    equal_errors, above_f, below_margins, examples = [], [], [], []
    # The released param_grid's proposed run only: on the exploded networks of the stress stepsize (3e-2)
    # the two computations have disagreed by 0.6-1.5 (relative) under two master seeds, not yet diagnosed (registry).
    for method, lr in [PROPOSED]:
        for row in fx.select(run, method, lr):
            for c, step in enumerate(run["curve_steps"]):
                lhat = run["lhat"][row, c].astype(np.float64)
                if not np.all(np.isfinite(lhat)):
                    continue
                phi = lhat / lb
                F = float(lb * (np.logaddexp.reduce(phi) - math.log(len(phi))))
                alpha, J = _minimise_alpha(lhat)
                f_rho = float(
                    safe_kl.f_rho_value(phi[None], np.full((1, len(phi)), 1.0 / len(phi)), np.array([rho]))[0]
                )
                equal_errors.append(abs((J / lb - 1.0) - f_rho) / max(1.0, abs(f_rho)))
                above_f.append((J / lb - 1.0) - F / lb)
                kappa = float(np.mean(np.exp(2 * (phi - F / lb))))
                if rho * kappa < 1:
                    below_margins.append((J / lb - 1.0) - (F / lb + rho / 2 + math.log(1 - rho * kappa)))
                if c == len(run["curve_steps"]) - 1 and len(examples) < 6:
                    examples.append(
                        {
                            "run": fx.setting_name(method, lr) + f" seed={run['runs'][row][2]}",
                            "step": int(step),
                            "F": F,
                            "J_star_minus_lambda_beta": J - lb,
                            "alpha_star": alpha,
                            "alpha_trained": fx.plain(run["final_alpha"][row]),
                            "kappa": kappa,
                        }
                    )
    assert equal_errors, "no proposed run had finite adversarial losses to check (step 0 always has)"
    evidence.headline(
        checked=len(equal_errors),
        max_rel_error_vs_safe_kl=float(np.max(equal_errors)),
        max_F_rho_minus_F=float(np.max(above_f)),
        lower_bound_checked=len(below_margins),
    )
    evidence.record(
        scale=_scale(pytestconfig, tier),
        examples=examples,
        smallest_margin_above_lower_bound=fx.plain(np.min(below_margins)) if below_margins else None,
    )
    statement_le(
        equal_errors, 1e-9, what="min over alpha of (22) - lambda beta against the Safe-KL value F_rho (relative error)"
    )
    statement_le(above_f, 1e-12, what="F_rho - F (F_rho <= F, to rounding)")
    statement_ge(below_margins, -1e-12, what="F_rho minus the restated lower bound (to rounding)")


@pytest.mark.claim(L6, statement="adversarial-loss-dominates-clean")
@pytest.mark.parametrize("tier", ALL_TIERS)
def test_adversarial_loss_dominates_clean(pytestconfig, options, evidence, tier):
    run = _run(pytestconfig, options, tier, needs=PAPER_DRO)
    _ran_on_device(pytestconfig, run, tier)
    # The released param_grid's DRO runs only: the stress and overflow stepsizes are there to blow up, and
    # a fixed-step ascent from z = x need not ascend where the curvature is huge, nor move where the
    # network has died (zero input gradient: gain exactly 0, seen under other master seeds).
    per_setting = {fx.setting_name(m, lr): fx.select(run, m, lr) for m, lr in PAPER_DRO}
    rows = np.concatenate(list(per_setting.values()))
    of_setting = {name: np.isin(rows, found) for name, found in per_setting.items()}  # masks over `rows`
    lhat, clean = (
        run["lhat"][rows].astype(np.float64),
        run["clean_loss"][rows].astype(np.float64),
    )  # (runs, checkpoints, images)
    gain = lhat - clean
    have = np.all(np.isfinite(gain), axis=-1)  # their curves up to an overflow
    assert have.any(), "no DRO run had adversarial losses to check (the start, step 0, always has)"
    # The float32 rounding bound of one curve: ROUNDING_K u S, S its largest |lhat| or clean loss (see ROUNDING_K)
    scale = np.max(np.maximum(np.abs(lhat), np.abs(clean)), axis=-1)
    bound = ROUNDING_K * U32 * scale
    mean_gain = np.mean(gain[have], axis=-1)
    chunk = inspect.signature(uot_dro.adversarial_losses).parameters["chunk"].default
    evidence.headline(
        curves_checked=int(have.sum()),
        smallest_gain=float(np.min(gain[have])),
        smallest_mean_gain=float(mean_gain.min()),
        smallest_mean_gain_over_bound=float(np.min(mean_gain / bound[have])),
    )
    evidence.record(
        scale=_scale(pytestconfig, tier),
        images_per_curve=int(gain.shape[-1]),
        rounding_k=ROUNDING_K,
        largest_bound=float(bound[have].max()),
        # lhat is evaluated in chunks of `chunk` images, the clean loss on all of them at once: the same
        # shapes when they fit one chunk
        same_chunking=int(gain.shape[-1]) <= chunk,
        mean_gain_by_setting={
            name: fx.plain(np.nanmean(np.where(have[mask, :, None], gain[mask], np.nan)))
            for name, mask in of_setting.items()
        },
    )
    statement_ge(
        gain[have],
        -bound[have][:, None],
        what="adversarial minus clean loss per image, against minus its rounding bound",
    )
    statement_ge(
        mean_gain,
        bound[have],
        strict=True,
        what="the inner maximisation's mean gain per curve, over its rounding bound",
    )


# ---------------------------------------------------------------------------------------------
# Figure 4 (left): ERM's clean test accuracy falls late in training, and more than the DRO methods'


LOWER_F_LEVEL = 0.01  # proposed-lower-objective: the paired t-test's level at which the statement is shown
FALL_LEVEL = 0.01  # one-sided level of each test below; all must reject (an intersection-union test: no correction)


def _one_sided_p(sample: np.ndarray) -> float:
    """p of a one-sided t-test that the mean of `sample` exceeds 0; NaN when it decides nothing (fewer
    than two values, or all equal: zero variance), which the statement counts as a failure."""
    if len(sample) < 2 or not np.all(np.isfinite(sample)) or float(np.std(sample)) == 0.0:
        return float("nan")
    return float(stats.ttest_1samp(sample, 0.0, alternative="greater").pvalue)


def accuracy_fall(run: dict, seeds: int) -> tuple[dict, list[tuple[bool, str]]]:
    """Figure 4 (left) over the second half of training (step PAPER_STEPS / 2 to the end): the evidence
    and the (condition, message) pairs the statement asserts.

    A run's drop is its clean test accuracy at the middle minus at the end. ERM and the proposed method
    must be finite to the end on every seed; the baseline at 1e-5 on all but at most one (the released
    evaluation leaves one seed, 8, out of the baseline's curves; the seeds it loses are listed). ERM's drop
    is positive (one-sided t-test over seeds) and larger than each DRO method's, paired by seed (a seed's
    runs share their initialisation and sample stream; one-sided t-test of the paired differences over the
    seeds where both are finite). A p-value that is not a number fails."""
    steps = [int(s) for s in run["curve_steps"]]
    mid, end = steps.index(fx.PAPER_STEPS // 2), len(steps) - 1
    per = {}
    for method, lr in (ERM, PROPOSED, BASELINE):
        rows = fx.select(run, method, lr)
        acc = run["test_accuracy"][rows].astype(float)
        finite = (run["overflow_step"][rows] < 0) & np.isfinite(acc[:, mid]) & np.isfinite(acc[:, end])
        per[fx.setting_name(method, lr)] = {
            "seeds": [int(run["runs"][i][2]) for i in rows],
            "drop": acc[:, mid] - acc[:, end],
            "finite": finite,
        }
    erm, prop, base = (fx.setting_name(*s) for s in (ERM, PROPOSED, BASELINE))
    lost = {name: [seed for seed, ok in zip(p["seeds"], p["finite"]) if not ok] for name, p in per.items()}
    assert all(p["seeds"] == per[erm]["seeds"] for p in per.values()), "the settings ran on different seeds"
    p_erm = _one_sided_p(per[erm]["drop"][per[erm]["finite"]])
    paired, mean_drop, upper = {}, {}, {}
    for name in (prop, base):
        both = per[erm]["finite"] & per[name]["finite"]
        paired[name] = _one_sided_p(per[erm]["drop"][both] - per[name]["drop"][both])
        d = per[name]["drop"][per[name]["finite"]]
        mean_drop[name] = float(np.mean(d)) if len(d) else float("nan")
        # reported, not asserted: the one-sided 99% upper confidence bound on the method's mean drop
        upper[name] = -mean_lower_bound(-d, 1 - FALL_LEVEL) if len(d) > 1 else float("nan")
    found = {
        "compared_steps": [steps[mid], steps[end]],
        "drops_per_seed": {name: dict(zip(p["seeds"], [fx.plain(v) for v in p["drop"]])) for name, p in per.items()},
        "seeds_not_finite_to_the_end": lost,
        "erm_mean_drop": float(np.mean(per[erm]["drop"][per[erm]["finite"]]))
        if per[erm]["finite"].any()
        else float("nan"),
        "erm_p": p_erm,
        "paired_p_erm_drop_exceeds": paired,
        "dro_mean_drop": mean_drop,
        "dro_mean_drop_upper_99": upper,
    }
    checks = [
        (
            len(per[erm]["seeds"]) == seeds and not lost[erm],
            f"ERM at 1e-3 is not finite to the end on every one of {seeds} seeds: lost {lost[erm]}",
        ),
        (not lost[prop], f"the proposed method at 1e-4 is not finite to the end on seeds {lost[prop]}"),
        (
            len(lost[base]) <= 1,
            f"the baseline at 1e-5 is not finite to the end on seeds {lost[base]} (at most one may be left out, as the "
            f"released evaluation leaves out one)",
        ),
        (
            p_erm < FALL_LEVEL,
            f"ERM's test accuracy did not fall significantly from step {steps[mid]} to {steps[end]}: drops "
            f"{found['drops_per_seed'][erm]}, p = {p_erm:.3g}",
        ),
        *[
            (
                paired[n] < FALL_LEVEL,
                f"ERM's drop does not exceed {n}'s (paired by seed): p = {paired[n]:.3g}; drops "
                f"{found['drops_per_seed'][n]}",
            )
            for n in (prop, base)
        ],
    ]
    return found, checks


@pytest.mark.claim(L6, statement="erm-accuracy-falls-late")
@pytest.mark.gpu
def test_erm_accuracy_falls_late(pytestconfig, options, evidence):
    _needs_paper_scale(pytestconfig, "gpu")
    run = _run(pytestconfig, options, "gpu", needs=(ERM, PROPOSED, BASELINE))
    _ran_on_device(pytestconfig, run, "gpu")
    found, checks = accuracy_fall(run, fx.size_of(pytestconfig, "gpu").seeds)
    evidence.headline(
        erm_mean_drop=found["erm_mean_drop"],
        erm_p=found["erm_p"],
        paired_p=found["paired_p_erm_drop_exceeds"],
        dro_mean_drop=found["dro_mean_drop"],
    )
    evidence.record(**found)
    evidence.figure(
        "clean test and validation accuracy (gpu, paper scale)", _accuracy_figure(run, "gpu", [PROPOSED, BASELINE, ERM])
    )
    for condition, message in checks:
        statement_holds(condition, message)


# ---------------------------------------------------------------------------------------------
# The paper-scale decisions on constructed run records (the checks a paper-scale night makes, exercised
# without one): records built to hold, to be refuted and to be undecided. Harness tests, not statements.


def _record(
    overflow: dict, drops: dict | None = None, final_f: dict | None = None, seeds: int = fx.PAPER_SEEDS
) -> dict:
    """A paper-scale run record of the five settings on `seeds` seeds: overflow[(method, lr)] the overflow
    steps per seed (-1: never); drops[(method, lr)] each seed's fall in clean test accuracy over the second
    half (accuracy 0.9 at the middle); final_f[(method, lr)] each seed's F(theta) at the last checkpoint
    (F falls linearly to it from 2.3 at step 0)."""
    settings = fx.PAPER_SETTINGS + fx.STATEMENT_SETTINGS
    runs = [(m, lr, s) for m, lr in settings for s in range(seeds)]
    marks = [0, *fx.PAPER_CHECKPOINTS]
    accuracy = np.full((len(runs), len(marks)), 0.9)
    objective = np.empty((len(runs), len(marks)))
    for i, (m, lr, s) in enumerate(runs):
        accuracy[i, -1] -= (drops or {}).get((m, lr), [0.0] * seeds)[s]
        objective[i] = np.linspace(2.3, (final_f or {}).get((m, lr), [1.0] * seeds)[s], len(marks))
    steps = np.array([overflow.get((m, lr), [-1] * seeds)[s] for m, lr, s in runs], dtype=np.int64)
    return {
        "runs": runs,
        "steps": fx.PAPER_STEPS,
        "overflow_step": steps,
        "overflow_exponent": np.where(steps > 0, 89.0, np.nan),
        "max_exponent": np.where(steps > 0, 89.0, 10.0),
        "curve_steps": np.array(marks),
        "test_accuracy": accuracy,
        "val_accuracy": accuracy,
        "F": objective,
        "threshold_float32": 88.72,
        "device": "constructed",
    }


class _Evidence:
    """Stands in for the evidence fixture: the decision is what these tests check."""

    def headline(self, **values):
        self.values = values

    def record(self, **values):
        pass

    def figure(self, title, figure):
        _plt().close(figure)


def _decision(decide) -> str:
    from pytest_claims.decide import StatementInconclusive
    from pytest_claims.registry import ClaimRefuted

    try:
        decide()
    except ClaimRefuted:
        return "refuted"
    except StatementInconclusive:
        return "undecided"
    except AssertionError:
        return "failed"
    return "held"


# The gpu tier's level per statement (its registered 4.2e-4 over 6 statements), as registered_false_alarm()
# gives it inside a statement test; these harness tests are not statement tests, so they set it.
GPU_LEVEL = 7e-5


@pytest.mark.smoke
def test_paper_scale_never_overflows_decision_on_constructed_records(pytestconfig):
    """proposed-never-overflows decided on records: no proposed run overflowing holds; one seed overflowing
    (at step 61,000) refutes it, naming the seed. A count has no undecided case: one overflow is the
    counterexample."""

    def decide(overflowed: int) -> str:
        overflow = {PROPOSED: [-1] * (fx.PAPER_SEEDS - overflowed) + [61_000] * overflowed}
        return _decision(lambda: _proposed_never(pytestconfig, _record(overflow), _Evidence(), "gpu"))

    assert (decide(0), decide(1), decide(10)) == ("held", "refuted", "refuted")


@pytest.mark.smoke
def test_paper_scale_requires_1e_5_decision_on_constructed_records(pytestconfig, monkeypatch):
    """baseline-requires-1e-5 decided on records: the baseline overflowing on 10/10 seeds at 1e-4 against
    0/10 at 1e-5 holds; 0/10 against 10/10 is refuted; 3/10 against 1/10 is undecided."""
    monkeypatch.setitem(globals(), "registered_false_alarm", lambda: GPU_LEVEL)

    def decide(k_1e4: int, k_1e5: int) -> str:
        overflow = {
            ("baseline", 1e-4): [900] * k_1e4 + [-1] * (10 - k_1e4),
            BASELINE: [40_000] * k_1e5 + [-1] * (10 - k_1e5),
        }
        return _decision(lambda: _baseline_at_1e_4(pytestconfig, _record(overflow), _Evidence(), "gpu"))

    assert (decide(10, 0), decide(0, 10), decide(3, 1)) == ("held", "refuted", "undecided")


@pytest.mark.smoke
def test_paper_scale_lower_objective_decision_on_constructed_records(pytestconfig, monkeypatch):
    """proposed-lower-objective decided on records, paired by seed: the proposed method ending 0.2 below
    the baseline on every seed (with a spread) holds, by the paired t-test; 0.2 above is refuted;
    differences centred on 0 are undecided; a baseline that overflowed on every seed (F = +inf) holds by
    the exact sign test (p = 2^-10 < 0.01)."""
    monkeypatch.setitem(globals(), "registered_false_alarm", lambda: GPU_LEVEL)
    spread = [0.01 * ((7 * s) % fx.PAPER_SEEDS) for s in range(fx.PAPER_SEEDS)]

    def decide(gap: float, centred: bool = False, overflowed: bool = False) -> str:
        base = [1.0 + 0.01 * s for s in range(fx.PAPER_SEEDS)]
        shift = [gap + (d - 0.045 if centred else d) for d in spread]
        final = {BASELINE: base, PROPOSED: [b - g for b, g in zip(base, shift)]}
        overflow = {BASELINE: [30_000] * fx.PAPER_SEEDS} if overflowed else {}
        return _decision(lambda: _proposed_lower(pytestconfig, _record(overflow, final_f=final), _Evidence(), "gpu"))

    assert (decide(0.2), decide(-0.2), decide(0.0, centred=True), decide(0.0, overflowed=True)) == (
        "held",
        "refuted",
        "undecided",
        "held",
    )


@pytest.mark.smoke
def test_paper_scale_overflow_decision_on_constructed_records(pytestconfig, monkeypatch):
    """baseline-overflows-at-1e-3 decided on records: 10/10 baseline overflows against 0/10 proposed holds;
    0/10 against 10/10 is refuted; 2/10 against 1/10 is undecided (at GPU_LEVEL)."""
    monkeypatch.setitem(globals(), "registered_false_alarm", lambda: GPU_LEVEL)
    base, prop = ("baseline", 1e-3), PROPOSED

    def decide(k_base: int, k_prop: int) -> str:
        overflow = {base: [500] * k_base + [-1] * (10 - k_base), prop: [700] * k_prop + [-1] * (10 - k_prop)}
        return _decision(lambda: _baseline_at_1e_3(pytestconfig, _record(overflow), _Evidence(), "gpu"))

    assert (decide(10, 0), decide(0, 10), decide(2, 1)) == ("held", "refuted", "undecided")


@pytest.mark.smoke
def test_paper_scale_accuracy_decision_on_constructed_records():
    """erm-accuracy-falls-late decided on records: ERM falling 5 points on every seed while the DRO methods
    hold their accuracy passes its checks; ERM holding while the DRO methods fall fails them."""

    def decide(erm: float, dro: float) -> str:
        jitter = [0.001 * s for s in range(fx.PAPER_SEEDS)]  # seeds differ, so the t-tests have a spread
        shuffled = [0.001 * ((3 * s) % fx.PAPER_SEEDS) for s in range(fx.PAPER_SEEDS)]  # and the paired differences
        drops = {
            ERM: [erm + j for j in jitter],
            PROPOSED: [dro + j for j in shuffled],
            BASELINE: [dro + j for j in shuffled],
        }
        _, checks = accuracy_fall(_record({}, drops), fx.PAPER_SEEDS)
        failed = [message for condition, message in checks if not condition]
        return "held" if not failed else "failed"

    assert (decide(0.05, 0.0), decide(0.0, 0.05)) == ("held", "failed")
