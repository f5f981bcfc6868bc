"""L6: "In unbalanced optimal-transport-based DRO on MNIST with label noise, the proposed approach
(Equation 22) converges faster than the baseline (Equation 21) using eta=10^-4 versus the baseline's
required eta=10^-5 (Figure 4, Section 3.3)."

Every tier trains its runs through the result store (workloads/uot_dro.py): smoke on CPU in seconds (2 seeds x
30 steps, with the stress stepsizes 1e-1 and 3e-2), full on CPU at reduced scale, gpu at the paper's scale as the
authors' released code runs it (seeds 0-9, 1e5 batch-1 SGD steps, proposed 1e-4, baseline 1e-5, ERM 1e-3, plus
the baseline at 1e-4 and 1e-3 for the overflow statements): one batched program on CUDA, or 50 CPU units
(--l6-device cpu), committed in evidence/l6-paper and read by --l6-evidence. Statements that need the paper's
scale are decided in the gpu tier; the CPU tiers show `reduced scale`. Each statement test wires a run to its
decision (uot_dro_decisions.py: pure functions of the run and the level) and its figures (uot_dro_figures.py).
"""

from __future__ import annotations

import dataclasses
import inspect
import math

import numpy as np
import pytest
import torch

from claims.lse import uot_dro_decisions as decisions
from claims.lse import uot_dro_figures as figures
from claims.lse.uot_dro_decisions import BASELINE, ERM, PAPER_DRO, PROPOSED
from claims.tiers import tiers
from workloads import uot_dro as fx
from suite_plugin.options import OPTIONS_KEY
from kernels import safe_kl, uot_dro
from pytest_claims import current_store, registered_false_alarm, statement_ge, statement_holds, statement_le

L6 = fx.L6
GPU_TIER_DEVICE_OPTION = "--l6-device"  # the gpu tier runs on CPU when it says so (suite_plugin/options.py)
ALL_TIERS = tiers("smoke", "full", "gpu")
FULL_AND_GPU = tiers("full", "gpu")
U32 = 2.0**-24  # float32 unit roundoff
# adversarial-loss-dominates-clean: lhat and the clean loss are each a float32 cross-entropy, logsumexp(logits)
# minus the label's logit, rounded at most 4 times in exp, sum, log and the subtractions (4 u of the logits'
# logsumexp L) on top of the logits' own float32 rounding (at most 4 u of L: measured 4.1 u on a network trained
# 10000 steps at 1e-3): 8 u L each, 16 u L for their difference. The evaluation does not record L (the kernel
# change that would is in the registry text), so the test takes the curve's largest |lhat| or clean loss S for
# it: L <= S near the initialisation (logits O(0.1), L ~ ln 10); on that trained network L reached 1.95 S, and
# the measured errors 4.1 u S (clean) and 5.2 u S (lhat), 9.3 u S together, stayed inside 16 u S.
ROUNDING_K = 16
# Figure 4 as the paper and the logbook describe it, shown beside the curves drawn from the paper-scale units
PAPER_FIGURE_4 = (
    "Figure 4 (Section 3.3): on MNIST with 25% feature-dependent label noise, the proposed approach (22) at eta = "
    "1e-4 converges faster than the baseline (21), which requires eta = 1e-5; ERM's clean test accuracy falls late in "
    "training as it fits the noisy labels (the figure's left panel, as the logbook reads it)"
)


def _run(pytestconfig, options, tier, needs=()):
    """The tier's runs; `needs`, the settings a statement decides from (from --l6-evidence, the statement is
    skipped, naming the units, where one of these is not committed; nothing is computed in its place)."""
    run = fx.tier_run(pytestconfig, options, tier, needs)
    if tier == "gpu":  # a gpu-tier verdict must come from the device asked for (--l6-device)
        wanted = pytestconfig.stash[fx.GPU_DEVICE_KEY]
        assert run["device"].startswith(wanted), f"gpu tier ran on {run['device']}, asked for {wanted}"
    return run


def _show(pytestconfig, evidence, tier: str, finding: decisions.Finding, *figures_drawn) -> None:
    """A finding's headline and evidence (with the run's scale), then its figures."""
    evidence.headline(**finding.headline)
    evidence.record(scale=_scale(pytestconfig, tier), **finding.record)
    for title, figure in figures_drawn:
        evidence.figure(title, figure)


def _paper_units(pytestconfig, run: dict, evidence, tier: str) -> None:
    """From --l6-evidence: every unit's outcome per seed and setting (overflow step, largest softplus argument, F
    and the clean and noisy accuracies at every checkpoint) and where and how it was computed."""
    folder = pytestconfig.stash.get(fx.EVIDENCE_KEY, None)
    if tier != "gpu" or folder is None:
        return
    from tools import l6_evidence

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
    if tier == "gpu":
        wanted = pytestconfig.stash[fx.GPU_DEVICE_KEY]
        assert run["device"].startswith(wanted), f"gpu tier ran on {run['device']}, asked for {wanted}"
    trained = [tuple(r) for r in run["runs"]]
    assert sorted(trained) == sorted((r.method, r.lr, r.seed) for r in runs), (
        f"program {program} trained {trained}, not {runs}"
    )
    assert len(run["overflow_step"]) == len(runs), (
        f"program {program}: {len(run['overflow_step'])} overflow records for {len(runs)} runs"
    )


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
# Overflow


@pytest.mark.claim(L6, statement="proposed-never-overflows")
@pytest.mark.parametrize("tier", ALL_TIERS)
def test_proposed_never_overflows(pytestconfig, options, evidence, tier):
    _gpu_needs_paper_scale(pytestconfig, tier)
    run = _run(pytestconfig, options, tier, needs=(PROPOSED,))
    finding = decisions.proposed_never(run)
    _show(
        pytestconfig,
        evidence,
        tier,
        finding,
        (f"overflow-step distribution ({tier})", figures.overflow_figure(run, tier)),
    )
    finding.decide()


@pytest.mark.claim(L6, statement="stress-stepsize-contrast")
@pytest.mark.smoke
def test_stress_stepsize_contrast(pytestconfig, options, evidence):
    run = _run(pytestconfig, options, "smoke")
    finding = decisions.stress_contrast(run, registered_false_alarm())
    evidence.headline(**finding.headline)
    evidence.record(**finding.record)
    evidence.figure(
        "overflow-step distribution (smoke, with the stress stepsizes)", figures.overflow_figure(run, "smoke")
    )
    finding.decide()


def _baseline_overflows(pytestconfig, options, evidence, tier: str, decide_with, batch: int | None = None) -> None:
    """An overflow contrast: once, from the tier's run (gpu); or (full, registered anytime) batch by batch, batch b
    being the contrast's two settings on the tier's next seeds (b * 4 to b * 4 + 3), trained through the store as
    the tier's own programs are, so that --claims-continue adds fresh seeds to the statement's ledger."""
    needs = (
        (("baseline", 1e-3), PROPOSED) if decide_with is decisions.baseline_at_1e_3 else (("baseline", 1e-4), BASELINE)
    )
    if tier == "gpu":
        _needs_paper_scale(pytestconfig, tier)
    if batch is None:
        run = _run(pytestconfig, options, tier, needs=needs)
    else:
        per_batch = fx.size_of(pytestconfig, tier).seeds
        run = fx.seeds_run(pytestconfig, options, tier, needs, range(batch * per_batch, (batch + 1) * per_batch))
    finding = decide_with(run, registered_false_alarm(), batch)
    _show(
        pytestconfig,
        evidence,
        tier,
        finding,
        (f"overflow-step distribution ({tier})", figures.overflow_figure(run, tier)),
    )
    finding.decide()


@pytest.mark.claim(L6, statement="baseline-overflows-at-1e-3")
@pytest.mark.gpu
def test_baseline_overflows_at_1e_3(pytestconfig, options, evidence):
    _baseline_overflows(pytestconfig, options, evidence, "gpu", decisions.baseline_at_1e_3)


@pytest.mark.claim(L6, statement="baseline-overflows-at-1e-3-cpu-horizon")
@pytest.mark.full
def test_baseline_overflows_at_1e_3_cpu_horizon(pytestconfig, options, evidence, claims_batch):
    _baseline_overflows(pytestconfig, options, evidence, "full", decisions.baseline_at_1e_3, claims_batch)


@pytest.mark.claim(L6, statement="baseline-requires-1e-5")
@pytest.mark.gpu
def test_baseline_requires_1e_5(pytestconfig, options, evidence):
    _baseline_overflows(pytestconfig, options, evidence, "gpu", decisions.baseline_at_1e_4)


@pytest.mark.claim(L6, statement="baseline-requires-1e-5-cpu-horizon")
@pytest.mark.full
def test_baseline_requires_1e_5_cpu_horizon(pytestconfig, options, evidence, claims_batch):
    _baseline_overflows(pytestconfig, options, evidence, "full", decisions.baseline_at_1e_4, claims_batch)


# ---------------------------------------------------------------------------------------------
# The objective


@pytest.mark.claim(L6, statement="proposed-lower-objective")
@pytest.mark.parametrize("tier", FULL_AND_GPU)  # not in smoke: at 30 steps the difference is below the seed spread
def test_proposed_lower_objective_than_baseline(pytestconfig, options, evidence, tier):
    _gpu_needs_paper_scale(pytestconfig, tier)
    run = _run(pytestconfig, options, tier, needs=(PROPOSED, BASELINE))
    _paper_units(pytestconfig, run, evidence, tier)
    finding = decisions.proposed_lower(run, registered_false_alarm())
    dro = [s for s in decisions.settings_in(run) if s[0] != "erm" and s[1] <= 1e-3]
    _show(
        pytestconfig,
        evidence,
        tier,
        finding,
        (
            f"objective F(theta) on the fixed training subset ({tier})",
            figures.curve_figure(run, tier, "F", dro, "F(theta)"),
        ),
        (
            f"accuracy curves ({tier})",
            figures.accuracy_figure(run, tier, [s for s in decisions.settings_in(run) if s[1] <= 1e-3]),
        ),
    )
    finding.decide()


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


@pytest.mark.claim(L6, statement="erm-accuracy-falls-late")
@pytest.mark.gpu
def test_erm_accuracy_falls_late(pytestconfig, options, evidence):
    _needs_paper_scale(pytestconfig, "gpu")
    run = _run(pytestconfig, options, "gpu", needs=(ERM, PROPOSED, BASELINE))
    finding = decisions.accuracy_fall(run, fx.size_of(pytestconfig, "gpu").seeds, registered_false_alarm())
    evidence.headline(**finding.headline)
    evidence.record(**finding.record)
    evidence.figure(
        "clean test and validation accuracy (gpu, paper scale)",
        figures.accuracy_figure(run, "gpu", [PROPOSED, BASELINE, ERM]),
    )
    finding.decide()


# ---------------------------------------------------------------------------------------------
# The continued statements (registered 2026-12-05, before their units): decided from their chains over the units
# committed in evidence/l6-continuation (tools.l6_continuation), read and never computed, beside --l6-evidence


def _continued(pytestconfig, evidence, statement: str) -> None:
    folder = pytestconfig.stash.get(fx.EVIDENCE_KEY, None)
    if folder is None:
        pytest.skip(
            "needs the paper's scale: the committed continuation units (evidence/l6-continuation), read only by the "
            "run that decides L6 at the paper's scale (--l6-evidence=evidence/l6-paper)"
        )
    from tools import l6_continuation

    store = folder.parent / "l6-continuation" / "store"
    before = set(l6_continuation.present(store))
    chain = l6_continuation.chains(store)[statement]
    finding = decisions.continued(chain)
    finding.show(evidence)
    # the units this statement's chain read (its looks), beside all the continuation's units in the folder, and the
    # entries that appeared while it was read (none: reading computes nothing; a runner committing beside it would)
    after = set(l6_continuation.present(store))
    evidence.record(units_read=chain.units_read, continuation_units_in=len(after), units_computed=len(after - before))
    evidence.figure(f"{statement}: its chain by look", figures.chain_figure(chain))
    if statement == "erm-accuracy-falls-at-20-epochs":
        evidence.figure("ERM's clean test accuracy at 2 and 20 epochs", _erm_horizons(folder, store))
    finding.decide()


def _erm_horizons(folder, store):
    """ERM's accuracy curves: the continuation's 1e6-step units beside the first 50's 1e5-step ones (read, never
    computed)."""
    from tools import l6_continuation, l6_evidence

    def curve(value):
        return np.asarray(value["curve_steps"], float), np.asarray(value["test_accuracy"][0], float)

    long = {u.seed: curve(v) for u, v in l6_continuation.values(store).items() if u.method == "erm"}
    short = {}
    for unit in l6_evidence.units():
        if unit.method == "erm":
            runs = [uot_dro.Run(unit.method, unit.lr, unit.seed)]
            name, key = fx.program_key("gpu", l6_evidence.paper_size(), runs, l6_evidence.MASTER_SEED, "cpu")
            value, _ = current_store().lookup(name, key, code=fx.PROGRAM_CODE, root=folder / "store")
            if value is not None:
                short[unit.seed] = curve(value)
    return figures.erm_horizons_figure(long, short)


@pytest.mark.claim(L6, statement="proposed-lower-objective-continued")
@pytest.mark.gpu
def test_proposed_lower_objective_continued(pytestconfig, evidence):
    _continued(pytestconfig, evidence, "proposed-lower-objective-continued")


@pytest.mark.claim(L6, statement="baseline-requires-1e-5-continued")
@pytest.mark.gpu
def test_baseline_requires_1e_5_continued(pytestconfig, evidence):
    _continued(pytestconfig, evidence, "baseline-requires-1e-5-continued")


@pytest.mark.claim(L6, statement="erm-accuracy-falls-at-20-epochs")
@pytest.mark.gpu
def test_erm_accuracy_falls_at_20_epochs(pytestconfig, evidence):
    _continued(pytestconfig, evidence, "erm-accuracy-falls-at-20-epochs")
