"""L4: "In continuous entropy-regularized optimal transport experiments with regularization eps=0.01, the
proposed semi-dual formulation (Equations 14-15) avoids the numerical overflow issues of the baseline
and reaches a converged objective in roughly 10^4 iterations (Figure 2, Section 3.1)."

Smoke runs the overflow statements, the update equations of every configuration against a hand
computation, the reference's accuracy, short runs (1e3 iterations, 3 seeds; 20 for the divergence rates)
and the 1e4 statements at 3 seeds: the claim shows `reduced scale`. Full runs every configuration for 1e5
iterations over 20 seeds, each configuration a work unit of its own (`test_sgd_run`).

Every statement about gaps first checks, as preconditions, that the run follows the update equations
(`check_update_equations`) and that W_eps is as accurate as stated (`check_reference`): a statement such
as "the baseline has not converged" or "diverges" would otherwise hold for a broken kernel too, and a
coarse reference would widen the weak-duality tolerance silently.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from pytest_claims import (
    ClaimRefuted,
    decide_rate,
    registered_false_alarm,
    statement_allclose,
    statement_ge,
    statement_holds,
    statement_le,
)
from claims.ids import L4
from claims.lse.common import TIERS
from claims.tiers import tiers
from workloads.eot import (
    ALPHA_VARIANT,
    BASELINES,
    DIVERGENT,
    EDGE_OF_DIVERGENCE,
    PROPOSED,
    REFERENCE_BOUND,
    SIZES,
    gaps,
    grid_coverage,
    reference,
    reference_tier,
    sgd_run,
    update_equations,
)
from kernels import eot

ALL_CONFIGS = BASELINES + PROPOSED + (ALPHA_VARIANT,) + DIVERGENT + EDGE_OF_DIVERGENCE
PIN_ITERATIONS, PIN_SEEDS = 40, 2  # 40: far enough for sigma_rho to leave its tails (e^s and 1/rho) on some step
# 1e4 iterations at the smoke tier's 3 seeds: the proposed method at its best setting of the full tier.
SMOKE_1E4 = tiers(smoke="smoke-1e4", full="full")
# The divergence rates: 20 seeds in either tier (smoke at 1e3 iterations), enough to decide a rate.
RATE_TIERS = tiers(smoke="smoke-20", full="full")
DIVERGES_MORE_OFTEN_THAN = 0.5  # "the baseline diverges": more seeds diverge than not
RATE_CONFIDENCE = 0.99  # the one-sided Clopper-Pearson confidence at which a divergence rate is shown

# Work units: the full tier's SGD runs, one configuration over its 20 seeds each (one batched program,
# not split further), computed ahead of the statements that read them through the store (pytest_claims'
# work_unit marker). Float64 for every configuration, float32 for the proposed ones (proposed-stays-finite).
FULL_RUNS = [(c, "float64") for c in dict.fromkeys(ALL_CONFIGS)] + [(c, "float32") for c in PROPOSED]


@pytest.mark.full
@pytest.mark.work_unit
@pytest.mark.parametrize("config, dtype", [pytest.param(c, d, id=f"{c.name}-{d}") for c, d in FULL_RUNS])
def test_sgd_run(options, config, dtype):
    """One configuration's full-tier run, computed (or read from the store) ahead of the statements."""
    run = sgd_run(config, options, "full", dtype)
    size = SIZES["full"]
    assert (run["seeds"], run["iterations"]) == (size["seeds"], size["iterations"]), (
        f"{config.name}: ran {run['seeds']} seeds x {run['iterations']}"
    )


def check_update_equations(options, configs) -> None:
    """The kernel's first PIN_ITERATIONS coefficients beta_i and its shift alpha equal the hand
    computation (workloads.eot.hand_computed_steps) for every configuration given, on the run's backend."""
    seeds = [options.seed * 1000 + s for s in range(PIN_SEEDS)]
    pinned = update_equations(configs, seeds, PIN_ITERATIONS, backend=options.backend, device=options.device)
    statement_allclose(
        *pinned["beta"],
        rtol=1e-10,
        atol=1e-12,
        what=f"SGD coefficients beta_1..beta_{PIN_ITERATIONS} against the hand computation",
    )
    statement_allclose(
        *pinned["alpha"],
        rtol=1e-10,
        atol=1e-12,
        what=f"shift alpha after {PIN_ITERATIONS} iterations against the hand computation",
    )


def check_reference(ref: dict, tier: str) -> None:
    """The reference W_eps is what its statements say: computed on the tier's grid, its halving
    estimate below the stated bound, each halving at least halving the difference (so the estimate
    bounds the error left), and the grids holding all but 1e-15 of mu's and nu's mass."""
    from pytest_claims import current_evidence

    stated_n, bound = SIZES[reference_tier(tier)]["reference_n"], REFERENCE_BOUND[reference_tier(tier)]
    coverage = grid_coverage(ref)
    contraction = ref["error_bound"] / ref["previous_difference"] if ref["previous_difference"] > 0 else math.inf
    found = current_evidence()
    if found is not None:
        found[0].record(
            reference={
                "W_eps": ref["value"],
                "grid_points_used": ref["n"],
                "grid_points_stated": stated_n,
                "values_n_n2_n4": ref["values"],
                "error_estimate": ref["error_bound"],
                "stated_bound": bound,
                "contraction": contraction,
                **coverage,
            }
        )
    statement_holds(
        ref["n"] == stated_n, f"the reference was computed on {ref['n']} grid points, not the stated {stated_n}"
    )
    statement_le(ref["error_bound"], bound, what="the reference's error estimate against the stated bound")
    statement_holds(
        contraction <= 0.5,
        f"halving the grid changed W_eps by {ref['error_bound']:.3g} after {ref['previous_difference']:.3g}: no "
        f"contraction, the estimate bounds nothing",
    )
    statement_le(list(coverage.values()), 1e-15, what=f"mass the reference grids leave outside ({', '.join(coverage)})")


def precondition(check, *args) -> None:
    """A check another statement rests on: its failure is a failed test, never the statement's refutation."""
    __tracebackhide__ = True
    try:
        check(*args)
    except ClaimRefuted as error:
        raise AssertionError(f"precondition failed: {error}") from None


@pytest.mark.smoke  # scale-free (registry): runs in every tier
@pytest.mark.claim(L4, statement="overflow-thresholds")
def test_overflow_thresholds(evidence):
    found = {dt: eot.overflow_threshold(dt) for dt in ("float64", "float32")}
    predicted = {dt: 0.01 * math.log(float(np.finfo(dt).max)) for dt in found}
    # z* is the smallest z with exp(z / eps) non-finite in the dtype: checked at z* and at the float below.
    with np.errstate(over="ignore"):
        smallest = {
            dt: bool(
                not np.isfinite(np.exp(np.dtype(dt).type(z / 0.01)))
                and np.isfinite(np.exp(np.dtype(dt).type(np.nextafter(z, 0.0) / 0.01)))
            )
            for dt, z in found.items()
        }
    evidence.headline(z_star_float64=found["float64"], z_star_float32=found["float32"])
    evidence.record(eps_ln_max=predicted, paper={"float64": 7.1, "float32": 0.89}, smallest_non_finite=smallest)
    statement_holds(all(smallest.values()), f"z* is not the smallest overflowing argument: {smallest}")
    statement_holds(
        all(abs(found[d] / predicted[d] - 1) < 1e-6 for d in found), f"thresholds {found} vs eps ln(max) {predicted}"
    )


@pytest.mark.smoke  # scale-free (registry): the first iterations, the same in every tier
@pytest.mark.claim(L4, statement="update-equations")
def test_update_equations(options, evidence):
    check_update_equations(options, ALL_CONFIGS)
    evidence.headline(configurations=len(ALL_CONFIGS), iterations=PIN_ITERATIONS, seeds=PIN_SEEDS)
    evidence.record(configurations_pinned=[c.name for c in ALL_CONFIGS], backend=options.backend, device=options.device)


@pytest.mark.claim(L4, statement="reference-accuracy")
@pytest.mark.parametrize("tier", TIERS)
def test_reference_accuracy(evidence, tier):
    ref = reference(tier)
    evidence.headline(W_eps=ref["value"], grid_points=ref["n"], error_estimate=ref["error_bound"])
    check_reference(ref, tier)


@pytest.mark.smoke  # scale-free (registry): the first 10 iterations, the same run in every tier
@pytest.mark.claim(L4, statement="baseline-overflows-float32")
def test_baseline_overflows_in_float32(options, evidence):
    early, consistent = {}, True
    for sigma2 in (0.1, 1.0):
        with np.errstate(all="ignore"):
            run = eot.kernel_sgd(
                eot.SgdConfig("baseline", sigma2, 1.0),
                [options.seed * 1000 + s for s in range(16)],
                10,
                (10,),
                dtype="float32",
                backend=options.backend,
                device=options.device,
                record_steps=True,
            )
        first = run["first_nonfinite_iteration"]
        # The reported iteration is the first whose step is non-finite, read off the steps themselves.
        finite = np.isfinite(run["steps"])
        from_steps = np.where(finite.all(axis=1), -1, np.argmin(finite, axis=1) + 1)
        consistent &= bool(np.array_equal(first, from_steps))
        early[f"sigma2={sigma2:g}"] = {
            "seeds_nonfinite_within_10": int(np.sum(first > 0)),
            "of": 16,
            "iterations": first.tolist(),
        }
    evidence.headline(**{k: v["seeds_nonfinite_within_10"] for k, v in early.items()})
    evidence.record(first_nonfinite=early, reported_iteration_is_first_non_finite_step=consistent)
    statement_holds(consistent, "the reported first non-finite iteration is not the first non-finite step of the run")
    statement_holds(all(v["seeds_nonfinite_within_10"] > 0 for v in early.values()), f"no early overflow: {early}")


@pytest.mark.claim(L4, statement="proposed-stays-finite")
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("tier", TIERS)
def test_proposed_stays_finite(options, evidence, tier, dtype):
    precondition(check_update_equations, options, PROPOSED)
    finite, largest = True, -np.inf
    for config in PROPOSED:
        run = sgd_run(config, options, tier, dtype)
        finite &= bool(np.all(run["first_nonfinite_iteration"] < 0)) and all(
            np.all(np.isfinite(v)) for v in run["semi_dual"].values()
        )
        largest = max(largest, float(np.max(run["max_exponent_argument"])) * eot.EPS)
    threshold = eot.overflow_threshold("float64")
    evidence.headline(all_finite=finite, largest_exponent_argument_z=largest, float64_threshold=threshold)
    evidence.record(
        iterations=SIZES[tier]["iterations"], seeds=SIZES[tier]["seeds"], configurations=[c.name for c in PROPOSED]
    )
    statement_holds(
        finite and largest > threshold,
        f"finite={finite}, largest z = {largest:.3f} (float64 threshold {threshold:.3f})",
    )


def _figure(curves: dict[str, dict[int, np.ndarray]], w_eps: float):
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5.5, 3.6))
    for name, by_t in curves.items():
        ts = sorted(by_t)
        med = [np.median(by_t[t]) for t in ts]
        lo = [np.quantile(by_t[t], 0.1) for t in ts]
        hi = [np.quantile(by_t[t], 0.9) for t in ts]
        line = ax.plot(ts, med, marker="o", label=name)[0]
        ax.fill_between(ts, np.maximum(lo, 1e-6), hi, color=line.get_color(), alpha=0.2)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("iteration", fontsize=8)
    ax.set_ylabel("gap W_eps - S(v)", fontsize=8)
    ax.set_title(f"optimality gap (median, 10-90% over seeds); W_eps = {w_eps:.7f}", fontsize=8)
    ax.legend(fontsize=6)
    return fig


@pytest.mark.claim(L4, statement="weak-duality")
@pytest.mark.parametrize("config", BASELINES + PROPOSED, ids=lambda c: c.name)
@pytest.mark.parametrize("tier", TIERS)
def test_gaps_respect_weak_duality(options, evidence, tier, config):
    precondition(check_update_equations, options, (config,))  # first: milliseconds, and kills most mutants
    ref = reference(tier)
    precondition(check_reference, ref, tier)
    by_t = gaps(sgd_run(config, options, tier), ref["value"])
    worst = min(float(np.min(g)) for g in by_t.values())
    evidence.headline(W_eps=ref["value"], reference_error_estimate=ref["error_bound"], smallest_gap=worst)
    evidence.record(
        median_gaps={str(t): float(np.median(g)) for t, g in by_t.items()},
        reference_grid_points_used=ref["n"],
        seeds=SIZES[tier]["seeds"],
    )
    evidence.figure(f"gap against iteration: {config.name} ({tier})", _figure({config.name: by_t}, ref["value"]))
    every_gap = np.concatenate([np.ravel(g) for g in by_t.values()])
    statement_ge(every_gap, -ref["error_bound"], what="gap to the reference W_eps at every recorded iteration and seed")


@pytest.mark.claim(L4, statement="proposed-converged-by-1e4")
@pytest.mark.parametrize("tier", SMOKE_1E4)
def test_proposed_converged_by_1e4(options, evidence, tier):
    configs = PROPOSED if tier == "full" else PROPOSED[2:]  # smoke: the best setting of the full tier only
    precondition(check_update_equations, options, configs)
    ref = reference(tier)
    precondition(check_reference, ref, tier)
    medians = {
        c.name: {str(t): float(np.median(g)) for t, g in gaps(sgd_run(c, options, tier), ref["value"]).items()}
        for c in configs
    }
    best = min(m["10000"] for m in medians.values())
    evidence.headline(best_median_gap_at_1e4=best, seeds=SIZES[tier]["seeds"])
    evidence.record(median_gaps=medians, logbook={"rho=0.03": 0.0732, "rho=0.1": 0.0377, "rho=0.3": 0.0143})
    statement_holds(best < 0.1, f"best median gap at 1e4 = {best:.4f}")


@pytest.mark.full
@pytest.mark.claim(L4, statement="baseline-stalls")
def test_baseline_gap_above_half_at_1e5(options, evidence):
    precondition(check_update_equations, options, BASELINES)
    ref = reference("full")
    precondition(check_reference, ref, "full")
    final = {c.name: gaps(sgd_run(c, options, "full"), ref["value"])[100_000] for c in BASELINES}
    evidence.headline(**{f"{name} min gap at 1e5": float(g.min()) for name, g in final.items()})
    evidence.record(
        final_gaps={name: g.tolist() for name, g in final.items()},
        logbook_at_1e5={"sigma2=0.1": 0.550, "sigma2=1": 0.544},
    )
    below = {name: float(g.min()) for name, g in final.items() if not np.all(g > 0.5)}
    statement_holds(not below, f"gap at 1e5 not above 0.5 on every seed: smallest {below}")


@pytest.mark.claim(L4, statement="baseline-not-converged")
@pytest.mark.parametrize("config", BASELINES, ids=lambda c: c.name)
@pytest.mark.parametrize("tier", TIERS)
def test_baseline_not_converged_at_1e5(options, evidence, tier, config):
    # Smoke: the same criterion at the smoke run's 1e3 iterations (reduced scale). What gives the
    # statement its power is that the run is the baseline (update equations) and the gap is measured
    # against an accurate W_eps: a broken kernel would also "not converge".
    precondition(check_update_equations, options, (config,))  # first: milliseconds, and kills most mutants
    ref = reference(tier)
    precondition(check_reference, ref, tier)
    by_t = gaps(sgd_run(config, options, tier), ref["value"])
    last = SIZES[tier]["iterations"]
    final = by_t[last]
    evidence.headline(min_gap_at_end=float(final.min()), median_gap_at_end=float(np.median(final)), iterations=last)
    evidence.record(median_gaps={str(t): float(np.median(g)) for t, g in by_t.items()})
    statement_holds(
        np.all(final > 0.1), f"{config.name}: gap at {last} between {final.min():.4f} and {final.max():.4f}"
    )


def _diverged(options, config, tier: str = "full") -> tuple[np.ndarray, np.ndarray, float]:
    w_eps = reference(tier)["value"]
    zero_potential = eot.GaussSum(1, config.sigma2, -2.0, 6.5)
    start = w_eps - float(eot.semi_dual_value(zero_potential, zero_potential.moments)[0])
    with np.errstate(all="ignore"):
        final = w_eps - sgd_run(config, options, tier)["semi_dual"][SIZES[tier]["iterations"]]
    return ~np.isfinite(final) | (final > start), final, start


def _plain(values: np.ndarray) -> list:
    return [float(g) if np.isfinite(g) else repr(float(g)) for g in values]


def _decide_divergence_rate(config, diverged: np.ndarray, alpha: float, iterations: int) -> None:
    """'The baseline diverges' as a rate: more seeds diverge than not, shown by the one-sided
    RATE_CONFIDENCE Clopper-Pearson lower bound, refuted by the upper bound at 1 - alpha (which seed
    diverges is a draw: only the rate is the statement's)."""
    decide_rate(
        int(diverged.sum()),
        int(diverged.size),
        DIVERGES_MORE_OFTEN_THAN,
        at_least=True,
        alpha=alpha,
        held_confidence=RATE_CONFIDENCE,
        what=f"{config.name}: divergence rate within {iterations} iterations > {DIVERGES_MORE_OFTEN_THAN:g}",
    )


@pytest.mark.claim(L4, statement="baseline-diverges-at-large-c")
@pytest.mark.parametrize("config", DIVERGENT, ids=lambda c: c.name)
@pytest.mark.parametrize("tier", RATE_TIERS)
def test_baseline_diverges_at_large_c(options, evidence, tier, config):
    # Smoke: the same rate after 1e3 iterations (reduced scale).
    precondition(check_update_equations, options, (config,))
    precondition(check_reference, reference(tier), tier)
    diverged, final, start = _diverged(options, config, tier)
    evidence.headline(
        seeds_diverged=int(diverged.sum()),
        seeds=int(diverged.size),
        starting_gap=start,
        iterations=SIZES[tier]["iterations"],
    )
    evidence.record(final_gaps=_plain(final))
    _decide_divergence_rate(config, diverged, registered_false_alarm() / len(DIVERGENT), SIZES[tier]["iterations"])


@pytest.mark.full
@pytest.mark.claim(L4, statement="baseline-diverges-at-c-1e-2")
def test_baseline_diverges_at_c_1e_2(options, evidence):
    precondition(check_update_equations, options, EDGE_OF_DIVERGENCE)
    precondition(check_reference, reference("full"), "full")
    results = {config: _diverged(options, config) for config in EDGE_OF_DIVERGENCE}
    evidence.headline(
        **{f"{config.name} diverged": f"{int(d.sum())}/{d.size}" for config, (d, _, _) in results.items()}
    )
    evidence.record(
        final_gaps={config.name: _plain(final) for config, (_, final, _) in results.items()},
        starting_gap=next(iter(results.values()))[2],
        seeds_not_diverged={config.name: _plain(final[~d]) for config, (d, final, _) in results.items()},
    )
    for config, (diverged, _, _) in results.items():
        _decide_divergence_rate(
            config, diverged, registered_false_alarm() / len(EDGE_OF_DIVERGENCE), SIZES["full"]["iterations"]
        )


@pytest.mark.claim(L4, statement="alpha-init-variant")
@pytest.mark.parametrize("tier", SMOKE_1E4)
def test_alpha_initialisation_variant(options, evidence, tier):
    precondition(check_update_equations, options, (ALPHA_VARIANT,))
    ref = reference(tier)
    precondition(check_reference, ref, tier)
    by_t = gaps(sgd_run(ALPHA_VARIANT, options, tier), ref["value"])
    evidence.headline(median_gap_at_1e4=float(np.median(by_t[10_000])), seeds=SIZES[tier]["seeds"])
    evidence.record(
        median_gaps={str(t): float(np.median(g)) for t, g in by_t.items()},
        logbook={"alpha0=0": 0.0371, "alpha0=-c0/eps": 0.0346},
    )
    statement_holds(np.median(by_t[10_000]) < 0.1, f"variant's median gap at 1e4 = {np.median(by_t[10_000]):.4f}")
