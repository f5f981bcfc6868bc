"""L5's decisions (kl_dro_analysis) on constructed run records: records built to hold and to be refuted, decided
against the numbers given, and their evidence read back. Harness tests of the statements' logic, not statements:
they run in the smoke tier, so a full-tier run never meets an untested decision. The constructed records have
kernels.kl_dro.sgd_runs' form, which the last test checks against a run of the kernel itself."""

from __future__ import annotations

import numpy as np
import pytest

from claims.lse import kl_dro_analysis as analysis
from workloads import kl_dro as fx
from kernels import kl_dro
from pytest_claims import ClaimRefuted

L0 = 44.0
SEEDS = 3
EPOCHS = 4
BATCH = 1000
RELEASED = {BATCH: ((1e-5, 1e-3), (1e-5, None))}  # one batch size's released pair: proposed, baseline
EDGE = 10.0
CONFIGS = fx.released_configs(BATCH, RELEASED, EDGE)
PROPOSED = [c for c in CONFIGS if c.rho is not None and c.eta == 1e-5]  # the proposed released cell, every scaling
PROPOSED_EDGE = [c for c in CONFIGS if c.rho is not None and c.eta > 1e-5]
LOGBOOK = {None: {BATCH: 1e-5}, 1e-3: {BATCH: 1e-6}}  # the baseline's cell stable, the proposed one unstable


def constructed(configs: list, finals: dict | None = None, above: dict | None = None) -> dict:
    """A run record of sgd_runs' form on SEEDS seeds, every configuration from L0: finals[config] the final L per
    seed (default L0 - 1; inf: non-finite at the last epoch, its L and peak batch loss NaN), above[config] the seeds
    whose L exceeds L0 at epoch 1 on the way."""
    finals, above = finals or {}, above or {}
    final = np.array([finals.get(c, [L0 - 1.0] * SEEDS) for c in configs], dtype=float).T  # (seeds, configs)
    objective = np.linspace(np.full_like(final, L0), np.where(np.isfinite(final), final, L0 - 1.0), EPOCHS + 1, axis=-1)
    objective[..., -1] = np.where(np.isfinite(final), final, np.nan)  # a diverged run ends NaN, as the kernel's do
    for c, config in enumerate(configs):
        objective[above.get(config, []), c, 1] = L0 + 1.0
    finite = np.isfinite(final)
    return {
        "configs": list(configs),
        "records": list(range(EPOCHS + 1)),
        "L0": L0,
        "objective": objective,
        "objective64": objective.copy(),
        "finite": finite,
        "first_nonfinite_epoch": np.where(finite, -1, EPOCHS).astype(np.int64),
        "peak_loss": np.where(finite, 100.0, np.nan),
        "theta": np.zeros((*final.shape, 9)),
        "alpha": np.zeros(final.shape),
        "steps": EPOCHS,
    }


def released_runs(finals: dict | None = None, above: dict | None = None, above32: dict | None = None) -> dict:
    """The released runs of BATCH in both precisions; above32: seeds above L0 at epoch 1 in float32 alone."""
    return {
        (BATCH, "float64"): constructed(CONFIGS, finals, above),
        (BATCH, "float32"): constructed(CONFIGS, finals, {**(above or {}), **(above32 or {})}),
    }


def outcome(finding) -> str:
    try:
        finding.decide()
    except ClaimRefuted:
        return "refuted"
    return "held"


def released(runs: dict, logbook: dict = LOGBOOK):
    return analysis.released_configurations(runs, SEEDS, released=RELEASED, edge=EDGE, logbook=logbook)


DIVERGES_ON_SEED_0 = {c: [np.inf, L0 - 1, L0 - 1] for c in PROPOSED_EDGE}


@pytest.mark.smoke
def test_released_configurations_decide():
    """Every released configuration converging on every seed, the proposed one diverging on a seed at 10x its eta,
    holds (the baseline converging at 10x does not count); a released configuration ending above L_0 on one seed
    is refuted, naming its cell and seeds; the proposed one converging on every seed at 10x is refuted too."""
    holds = released(released_runs(DIVERGES_ON_SEED_0))
    above_on_seed_2 = {**DIVERGES_ON_SEED_0, PROPOSED[0]: [L0 - 1, L0 - 1, L0 + 0.5]}
    assert (outcome(holds), outcome(released(released_runs(above_on_seed_2))), outcome(released(released_runs()))) == (
        "held",
        "refuted",
        "refuted",
    )
    with pytest.raises(ClaimRefuted, match=r"\(as released\): \{'batch 1000 rho=0.001 eta=1e-05': 2\}"):
        released(released_runs(above_on_seed_2)).decide()
    with pytest.raises(ClaimRefuted, match=r"at 10x eta: \{'batch 1000 rho=0.001 eta=1e-05': 3\}"):
        released(released_runs()).decide()
    assert holds.headline["batch 1000 rho=0.001 eta=1e-05: converged of 3 at 10x eta"] == 2
    assert "batch 1000 baseline eta=1e-05: converged of 3 at 10x eta" not in holds.headline
    assert holds.record["at_the_edge"]["batch 1000 rho=0.001 eta=1e-05"]["first_nonfinite_epoch"] == [EPOCHS, -1, -1]
    assert holds.record["as_released"]["batch 1000 rho=0.001 eta=1e-05"]["first_epoch_above_L0"] == [None] * SEEDS
    assert holds.record["epochs"] == EPOCHS and holds.record["torch_seeds"] == [0, 1, 2]
    diverged = released(released_runs({**DIVERGES_ON_SEED_0, PROPOSED[0]: [L0 - 1, np.inf, L0 - 1]}))
    trajectory = diverged.record["as_released"]["batch 1000 rho=0.001 eta=1e-05"]
    assert trajectory["first_epoch_above_L0"] == [None, EPOCHS, None] and trajectory["largest_batch_loss"] == 100.0
    assert outcome(diverged) == "refuted"


@pytest.mark.smoke
def test_released_configurations_find_the_conventions_that_make_the_logbooks_labels():
    """The proposed cell rising above L_0 at epoch 1 and ending below it: only the rule 'L <= L_0 at every epoch
    end' calls it unstable, as the logbook does, in both precisions and loss scalings (4 of 12 conventions); rising
    in float32 with l = r^2 alone, one convention reproduces the logbook, and precision and loss scaling each change
    a label; a logbook calling the baseline unstable too is reproduced by none."""
    rising = released(released_runs(DIVERGES_ON_SEED_0, above={c: [1] for c in PROPOSED}))
    every_epoch = [analysis.convention_name(p, "every-epoch", s) for p in fx.PRECISIONS for s in fx.LOSS_SCALES]
    assert rising.record["conventions_reproducing_the_logbook"] == every_epoch
    assert rising.headline["conclusion"] == (
        f"4 of 12 conventions reproduce the logbook's labels of all 2 cells: {every_epoch}; a label changes with the "
        "precision in 0 cells, stability rule in 1 cells, loss scaling in 0 cells; as released 2 of 2 cells converge "
        "on every seed"
    )
    assert rising.record["as_released"]["batch 1000 rho=0.001 eta=1e-05"]["first_epoch_above_L0"] == [None, 1, None]
    first = released(released_runs(DIVERGES_ON_SEED_0, above32={PROPOSED[0]: [1]}))
    assert first.record["conventions_reproducing_the_logbook"] == ["float32 | L <= L_0 at every epoch end | loss r^2"]
    assert first.record["seeds_converged_per_convention"]["batch 1000 rho=0.001 eta=1e-05"] == {
        analysis.convention_name(*convention): 2 if convention == ("float32", "every-epoch", 1.0) else 3
        for convention in analysis.CONVENTIONS
    }
    assert first.record["cells_whose_label_changes_with"] == {
        "precision": ["batch 1000 rho=0.001 eta=1e-05"],
        "stability rule": ["batch 1000 rho=0.001 eta=1e-05"],
        "loss scaling": ["batch 1000 rho=0.001 eta=1e-05"],
    }
    none = released(released_runs(DIVERGES_ON_SEED_0), logbook={None: {BATCH: 1e-6}, 1e-3: {BATCH: 1e-6}})
    assert none.headline["conclusion"].startswith(
        "no convention of the 12 reproduces the logbook's labels of all 2 cells (2 of them unstable there); closest, "
        "0 of 2 agreeing"
    )


GRID_SIZE = {"baseline_etas": (1e-6, 1e-5, 1e-4), "etas": (1e-5, 1e-4), "rhos": (1e-3, 0.9)}
GRID = fx.grid_configs(GRID_SIZE)
GRID_LOGBOOK = {None: {10: 1e-6, 1000: 1e-5}, 1e-3: {10: None, 1000: None}, 0.9: {10: 1e-4, 1000: 1e-4}}


def grids(**changes) -> dict[int, dict]:
    """Batch 10 and 1000 as the logbook's table has them: the baseline stable up to 1e-6 and 1e-5, rho = 1e-3 at
    no eta, rho = 0.9 at every eta; changes[f"batch{b}"] = (finals, above) to depart from it."""
    diverged = [np.inf] * SEEDS
    base = {
        10: {kl_dro.RunConfig(e, None): diverged for e in (1e-5, 1e-4)},
        1000: {kl_dro.RunConfig(1e-4, None): diverged},
    }
    out = {}
    for batch in (10, 1000):
        finals = {**base[batch], **{kl_dro.RunConfig(e, 1e-3): diverged for e in GRID_SIZE["etas"]}}
        extra_finals, above = changes.get(f"batch{batch}", ({}, {}))
        out[batch] = constructed(GRID, {**finals, **extra_finals}, above)
    return out


@pytest.mark.smoke
def test_claim_as_printed_decides_and_compares_the_logbooks_table():
    """rho = 0.9 converging on every seed at 1e-4 at both batch sizes holds; failing on one seed at batch 10
    refutes it there alone; under the rules given, the largest all-seed-stable etas are compared with the
    logbook's table cell by cell (the rule 'every epoch' losing rho = 0.9 at batch 10 to one seed's rise)."""
    held = analysis.claim_as_printed(grids(), logbook=GRID_LOGBOOK)
    one_seed = {kl_dro.RunConfig(1e-4, 0.9): [L0 - 1, L0 + 1, L0 - 1]}
    refuted = analysis.claim_as_printed(grids(batch10=(one_seed, {})), logbook=GRID_LOGBOOK)
    assert (outcome(held), outcome(refuted)) == ("held", "refuted")
    assert held.headline["rhos_converging_at_1e4_at_every_batch"] == [0.9]
    assert refuted.headline["batch10_alone_refutes"] and refuted.headline["best_rho_seeds_at_1e4_batch10"] == 2
    assert "logbook_table_agreement_by_rule" not in held.record
    with pytest.raises(ClaimRefuted, match=r"at eta = 1e-4 at batch sizes \[10, 1000\]"):
        refuted.decide()
    compared = analysis.claim_as_printed(
        grids(batch10=({}, {kl_dro.RunConfig(1e-5, 0.9): [0]})), logbook=GRID_LOGBOOK, rules=("final", "every-epoch")
    )
    assert compared.record["logbook_table_agreement_by_rule"] == {
        "final": {"cells_agreeing": 6, "disagreeing (ours, logbook)": {}},
        "every-epoch": {"cells_agreeing": 6, "disagreeing (ours, logbook)": {}},
    }
    risen = analysis.claim_as_printed(
        grids(batch10=({}, {kl_dro.RunConfig(1e-4, 0.9): [0]})), logbook=GRID_LOGBOOK, rules=("every-epoch",)
    )
    assert risen.record["logbook_table_agreement_by_rule"]["every-epoch"] == {
        "cells_agreeing": 5,
        "disagreeing (ours, logbook)": {"batch 10 rho=0.9": (1e-5, 1e-4)},
    }


@pytest.mark.smoke
def test_baseline_largest_stable_eta_is_decided_against_the_eta_given():
    """The baseline stable on every seed up to 1e-6 at batch 10: holds against 1e-6, refuted against 1e-5 with the
    eta found; one seed diverging at 1e-6 leaves 1e-6 unstable and refutes it against 1e-6."""
    assert outcome(analysis.baseline_largest_stable_eta(grids(), required=1e-6, logbook=GRID_LOGBOOK)) == "held"
    with pytest.raises(ClaimRefuted, match="eta at batch 10 is 1e-06"):
        analysis.baseline_largest_stable_eta(grids(), required=1e-5, logbook=GRID_LOGBOOK).decide()
    one_seed = {kl_dro.RunConfig(1e-6, None): [L0 - 1, np.inf, L0 - 1]}
    lost = analysis.baseline_largest_stable_eta(grids(batch10=(one_seed, {})), required=1e-6, logbook=GRID_LOGBOOK)
    assert outcome(lost) == "refuted" and lost.headline["baseline_largest_eta_batch10"] is None
    assert lost.record["seeds_stable"][10] == {1e-6: 2, 1e-5: 0, 1e-4: 0}


UPDATE_CONFIGS = [
    kl_dro.RunConfig(1e-6, None),
    kl_dro.RunConfig(1e-6, 1e-3),
    kl_dro.RunConfig(1e-5, None),
    kl_dro.RunConfig(1e-5, 0.1),
]


def compared(error: float = 1e-13, moved: float = 1e-3, where: str = "alpha_error") -> dict:
    """One case of two streams: every relative difference 1e-13, `where`'s proposed entries `error`."""
    got = {
        "theta_error": np.full((2, 4), 1e-13),
        "alpha_error": np.array([[0.0, 1e-13, 0.0, 1e-13]] * 2),
        "theta_moved": np.full((2, 4), moved),
        "alpha_moved": np.array([[0.0, 1e-2, 0.0, 1e-2]] * 2),
    }
    got[where][1, 3] = error
    return {(10, 200): got}


@pytest.mark.smoke
def test_update_equations_decide_at_the_tolerance_given():
    """Differences below the tolerance hold; one proposed alpha (or theta) above it, or NaN, is refuted; a run
    that barely moved stops the statement (AssertionError: the comparison would mean nothing)."""

    def decide(got: dict, rtol: float = 1e-10) -> str:
        return outcome(analysis.update_equations(got, UPDATE_CONFIGS, 2, rtol))

    assert (decide(compared()), decide(compared(1e-9)), decide(compared(1e-9), rtol=1e-8)) == (
        "held",
        "refuted",
        "held",
    )
    assert (decide(compared(1e-9, where="theta_error")), decide(compared(np.nan))) == ("refuted", "refuted")
    assert np.isnan(
        analysis.update_equations(compared(np.nan), UPDATE_CONFIGS, 2, 1e-10).headline[
            "largest relative difference, proposed alpha"
        ]
    )  # a NaN shows in the headline
    finding = analysis.update_equations(compared(1e-9), UPDATE_CONFIGS, 2, 1e-10)
    assert finding.headline["largest relative difference, proposed alpha"] == 1e-9
    assert finding.record["per_case"]["batch 10, 200 steps"]["smallest alpha move (proposed)"] == 1e-2
    with pytest.raises(AssertionError, match="batch 10: a run barely moved theta"):
        analysis.update_equations(compared(moved=1e-7), UPDATE_CONFIGS, 2, 1e-10)


@pytest.mark.smoke
def test_proposed_beats_baseline_compares_the_best_stable_settings():
    """The proposed method's best all-seed-stable mean final objective strictly below the baseline's holds; equal
    or above is refuted; no proposed setting stable on every seed is refuted (inf), no baseline one holds."""

    def run(proposed: float, baseline: float, proposed_diverges: bool = False) -> dict:
        finals = {c: [proposed - 0.5, proposed, proposed + 0.5] for c in GRID if c.rho is not None}
        finals.update({c: [baseline + (c.eta > 1e-5)] * SEEDS for c in GRID if c.rho is None})
        finals[GRID[0]] = [0.0, L0 + 1.0, 0.0]  # the lowest mean, but above L_0 on a seed: never the best
        if proposed_diverges:
            finals.update({c: [np.inf] * SEEDS for c in GRID if c.rho is not None})
        return constructed(GRID, finals)

    def decide(*args) -> str:
        return outcome(analysis.proposed_beats_baseline(run(*args), 1000))

    assert (decide(20.0, 30.0), decide(30.0, 30.0), decide(31.0, 30.0), decide(20.0, 30.0, True)) == (
        "held",
        "refuted",
        "refuted",
        "refuted",
    )
    finding = analysis.proposed_beats_baseline(run(20.0, 30.0), 1000)
    assert finding.headline == {"proposed_best": 20.0, "baseline_best": 30.0}
    assert finding.record["baseline_setting"] == "baseline eta=1e-05"


@pytest.mark.smoke
def test_constructed_records_have_the_kernels_form():
    """A run of kernels.kl_dro.sgd_runs (a small synthetic problem, the released configurations above, both
    precisions) has every key of a constructed record, with the same types, dtypes and dimensions, and the
    released-configurations analysis reads it into the same evidence keys."""
    rng = np.random.default_rng(5)
    problem = kl_dro.problem_from(rng.standard_normal((300, 8)), rng.standard_normal(300))
    streams = kl_dro.KeyedStreams([f"kl-dro-analysis|form|{s}" for s in range(SEEDS)])
    real = {
        (BATCH, dtype): kl_dro.sgd_runs(problem, BATCH, CONFIGS, streams, EPOCHS, record_every=1, dtype=dtype)
        for dtype in ("float64", "float32")
    }
    made = released_runs(DIVERGES_ON_SEED_0)
    for key, value in made[(BATCH, "float32")].items():
        got = real[(BATCH, "float32")][key]
        assert type(got) is type(value), (key, type(got), type(value))
        if isinstance(value, np.ndarray):
            assert (got.dtype, got.shape) == (value.dtype, value.shape), (key, got.dtype, got.shape, value.shape)
    from_kernel, from_constructed = released(real), released(made)
    assert list(from_kernel.headline) == list(from_constructed.headline)
    assert list(from_kernel.record) == list(from_constructed.record)
