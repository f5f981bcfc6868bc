"""L6's statement decisions as pure functions of a run record (workloads.uot_dro.tier_run's dict) and their levels:
each returns a Finding (claims.findings: headline, evidence, and the decision to make), so the statement tests only
wire a run to a finding and its evidence, and the decisions are tested directly on constructed records
(test_uot_dro_decisions.py) at whatever level is given.

A run record: `runs` [(method, lr, seed)], `overflow_step` (-1: never), `max_exponent`, `overflow_exponent`,
`curve_steps`, and per run and checkpoint `F`, `test_accuracy`, `val_accuracy` (see kernels.uot_dro.train).
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
from scipy import stats

from claims.findings import Finding
from workloads import uot_dro as fx
from kernels.stats import mean_lower_bound, sign_test_greater
from pytest_claims import (
    StatementInconclusive,
    decide_test,
    decide_two_proportions,
    rate_lower_bound,
    rate_upper_bound,
    statement_holds,
    statement_none,
)

PROPOSED, BASELINE, ERM = ("proposed", 1e-4), ("baseline", 1e-5), ("erm", 1e-3)
PAPER_DRO = (PROPOSED, BASELINE)  # the released param_grid's DRO settings
LOWER_F_LEVEL = 0.01  # proposed-lower-objective: the paired one-sided test's level at which the statement is shown
FALL_LEVEL = 0.01  # erm-accuracy-falls-late: each one-sided test's level; all must reject (intersection-union)
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


def settings_in(run: dict) -> list[tuple[str, float]]:
    return list(dict.fromkeys((m, lr) for m, lr, _ in run["runs"]))


def overflow_counts(run: dict, method: str, lr: float) -> dict[str, int]:
    steps = run["overflow_step"][fx.select(run, method, lr)]
    return {"k": int((steps > 0).sum()), "n": int(len(steps))}


def rate_exceeds(more: dict, fewer: dict, what: str, level: float, batch: int | None = None) -> Callable[[], Any]:
    """'The overflow probability of `more` exceeds that of `fewer`', by two one-sided Fisher exact tests at `level`
    (which seed overflows, and when, is a draw: only the rates are the statement's); with a `batch` (the
    claims_batch of a statement registered anytime), by the product of each batch's two-proportions e-value along
    the statement's ledger instead (pytest_claims.decide_two_proportions), which may be continued."""
    if batch is not None:
        return lambda: decide_two_proportions(
            more["k"], more["n"], fewer["k"], fewer["n"], alpha=level, what=what, batch=batch
        )
    table = [[more["k"], more["n"] - more["k"]], [fewer["k"], fewer["n"] - fewer["k"]]]
    p_for = float(stats.fisher_exact(table, alternative="greater").pvalue)
    p_against = float(stats.fisher_exact(table, alternative="less").pvalue)
    return lambda: decide_test(p_for, p_against, alpha=level, what=what)


def fisher_power(seeds: int, more_rate: float, fewer_rate: float, level: float) -> float:
    """The exact chance that rate_exceeds shows 'more overflows more often than fewer' at `level` with `seeds` runs
    per setting, when their overflow probabilities are `more_rate` and `fewer_rate`: the binomial outcomes summed
    over the tables whose one-sided Fisher p (the hypergeometric upper tail, as scipy's fisher_exact) is at most
    `level`."""
    x = np.arange(seeds + 1)
    more, fewer = np.meshgrid(x, x, indexing="ij")
    p = stats.hypergeom.sf(more - 1, 2 * seeds, more + fewer, seeds)
    chance = np.outer(stats.binom.pmf(x, seeds, more_rate), stats.binom.pmf(x, seeds, fewer_rate))
    return float(chance[p <= level].sum())


def seeds_to_decide(more_rate: float, fewer_rate: float, level: float, power: float = 0.9, most: int = 160):
    """The fewest seeds per setting at which rate_exceeds shows the contrast with at least `power` (None when even
    `most` seeds do not): what a reduced-scale overflow statement needs, at the rates it saw. The search doubles
    the seeds until the power is reached, then takes the fewest above the last shortfall (Fisher's test is
    discrete, so its power is nearly but not exactly monotone in the seeds)."""
    if more_rate <= fewer_rate:
        return None  # no contrast to show: the chance of showing one stays at most `level`
    short, seeds = 0, 5
    while fisher_power(seeds, more_rate, fewer_rate, level) < power:
        if seeds >= most:
            return None
        short, seeds = seeds, min(2 * seeds, most)
    return next(n for n in range(short + 1, seeds + 1) if fisher_power(n, more_rate, fewer_rate, level) >= power)


def anytime_batches_to_decide(
    more_rate: float, level: float, *, batch: int = 4, power: float = 0.9, most: int = 60
) -> int | None:
    """The fewest batches of `batch` seeds a setting after which a continued overflow contrast would have crossed
    1 / level with at least `power`, when `more` overflows at `more_rate` and `fewer` never does (the rate every
    CPU-horizon run of the fewer setting showed): the anytime-valid route (pytest_claims.anytime.evalues's
    two-proportions e-value, one per batch, multiplied along the chain; decided at the first crossing). Exact: with
    `fewer` never overflowing, a batch's e-value depends on its count k of `more` alone, so the chain's state is how
    many batches had each count, its crossed mass taken out at each batch. None when `most` batches do not reach
    `power`."""
    import math

    from pytest_claims.anytime.evalues import two_proportions_log_evalue

    steps = [two_proportions_log_evalue(k, batch, 0, batch) for k in range(batch + 1)]
    chance = stats.binom.pmf(np.arange(batch + 1), batch, more_rate)
    goal, crossed = math.log(1.0 / level), 0.0
    walking = {(0,) * (batch + 1): 1.0}  # how many batches had each count -> probability, not yet crossed
    for done in range(1, most + 1):
        after: dict[tuple[int, ...], float] = {}
        for counts, mass in walking.items():
            for k in range(batch + 1):
                grown = counts[:k] + (counts[k] + 1,) + counts[k + 1 :]
                after[grown] = after.get(grown, 0.0) + mass * chance[k]
        walking = {}
        for counts, mass in after.items():
            if sum(n * step for n, step in zip(counts, steps)) >= goal:
                crossed += mass
            else:
                walking[counts] = mass
        if crossed >= power:
            return done
    return None


def proposed_never(run: dict) -> Finding:
    """No run of the proposed method at 1e-4 overflows (one that does refutes it, with its seed and step)."""
    rows = fx.select(run, *PROPOSED)
    overflowed = [int(s) for s in run["overflow_step"][rows] if s > 0]
    cases = [{"seed": int(run["runs"][i][2]), "overflow_step": int(run["overflow_step"][i])} for i in rows]
    return Finding(
        headline={
            "proposed_1e4_overflowed": f"{len(overflowed)}/{len(rows)}",
            "largest_softplus_argument": float(np.max(run["max_exponent"][rows])),
            "float32_exp_threshold": run["threshold_float32"],
        },
        record={"overflow": fx.overflow_table(run), "device": run["device"]},
        decide=lambda: statement_none(
            run["overflow_step"][rows] > 0, what="proposed eta=1e-4 runs that overflowed", cases=cases
        ),
        cases=cases,
    )


def stress_contrast(run: dict, level: float) -> Finding:
    """At the stress stepsize the baseline overflows more often than the proposed method (their rates)."""
    base = run["overflow_step"][fx.select(run, "baseline", fx.STRESS_LR)]
    prop = run["overflow_step"][fx.select(run, "proposed", fx.STRESS_LR)]
    more, fewer = overflow_counts(run, "baseline", fx.STRESS_LR), overflow_counts(run, "proposed", fx.STRESS_LR)
    what = f"overflow rate within {run['steps']} steps at eta={fx.STRESS_LR:g}: baseline above proposed"
    return Finding(
        headline={
            "baseline_overflowed": f"{more['k']}/{more['n']}",
            "proposed_overflowed": f"{fewer['k']}/{fewer['n']}",
            "horizon": run["steps"],
        },
        record={
            "baseline_overflow_steps": base.tolist(),
            "proposed_overflow_steps": prop.tolist(),
            "overflow": fx.overflow_table(run),
        },
        decide=rate_exceeds(more, fewer, what, level),
    )


def baseline_overflow_evidence(run: dict, lr: float) -> dict:
    """The baseline's overflows at one stepsize: count, every seed's step, a 95% interval for the rate."""
    rows = fx.select(run, "baseline", lr)
    steps = run["overflow_step"][rows]
    over = steps[steps > 0]
    k, n = int(len(over)), int(len(rows))
    return {
        "overflowed": f"{k}/{n}",
        "seeds": [int(run["runs"][i][2]) for i in rows],  # every seed (the released evaluation leaves out seed 8)
        "steps_per_seed": [int(s) if s > 0 else None for s in steps],
        "median_step": float(np.median(over)) if k else None,
        "exponent_at_overflow": [fx.plain(e) for e in run["overflow_exponent"][rows]],
        "largest_exponent_of_survivors": fx.plain(np.max(run["max_exponent"][rows][steps < 0])) if k < n else None,
        "p_overflow_within_horizon_95ci": [rate_lower_bound(k, n, 0.025), rate_upper_bound(k, n, 0.025)],
        "k": k,
        "n": n,
    }


def seeds_needed(more: dict, fewer: dict, level: float) -> dict:
    """The seeds per setting at which the rates seen here would be shown at `level` with 90% chance."""
    rates = (more["k"] / more["n"], fewer["k"] / fewer["n"]) if more["n"] and fewer["n"] else (0.0, 0.0)
    return {"at_rates_seen": [round(r, 4) for r in rates], "seeds_per_setting_for_90%": seeds_to_decide(*rates, level)}


def _contrast(run: dict, more: str, fewer: str, counts: tuple[str, str], batch: int | None) -> str:
    """The decision's name: with the counts for a single look; constant along a continued chain (its ledger's
    parameters cannot change), where each batch's counts are in the ledger."""
    if batch is None:
        return f"overflow rate within {run['steps']} steps: {more} ({counts[0]}) above {fewer} ({counts[1]})"
    return f"overflow rate within {run['steps']} steps: {more} above {fewer}, batch by batch"


def baseline_at_1e_3(run: dict, level: float, batch: int | None = None) -> Finding:
    """The baseline at 1e-3 overflows more often than the proposed method at 1e-4 (rates; steps reported); with a
    `batch`, anytime-valid over the statement's batches (rate_exceeds)."""
    found = baseline_overflow_evidence(run, 1e-3)
    proposed = overflow_counts(run, *PROPOSED)
    what = _contrast(
        run, "baseline 1e-3", "proposed 1e-4", (found["overflowed"], f"{proposed['k']}/{proposed['n']}"), batch
    )
    return Finding(
        headline={
            "baseline_1e3_overflowed": found["overflowed"],
            "proposed_1e4_overflowed": f"{proposed['k']}/{proposed['n']}",
            "median_overflow_step": found["median_step"],
            "horizon": run["steps"],
        },
        record={
            "baseline_1e3": found,
            "float32_exp_threshold": run["threshold_float32"],
            "seeds_a_decision_needs": seeds_needed(found, proposed, level),
            "logbook": LOGBOOK,
        },
        decide=rate_exceeds(found, proposed, what, level, batch),
    )


def baseline_at_1e_4(run: dict, level: float, batch: int | None = None) -> Finding:
    """ "The baseline requires 1e-5", as rates: at 1e-4 it overflows more often than at 1e-5 (so the smaller
    stepsize is what keeps it finite), every seed's overflow step reported; with a `batch`, anytime-valid over the
    statement's batches (rate_exceeds)."""
    found, at_1e5 = baseline_overflow_evidence(run, 1e-4), baseline_overflow_evidence(run, 1e-5)
    assert found["seeds"] == at_1e5["seeds"], "the two stepsizes ran on different seeds"
    what = _contrast(run, "baseline 1e-4", "baseline 1e-5", (found["overflowed"], at_1e5["overflowed"]), batch)
    return Finding(
        headline={
            "baseline_1e4_overflowed": found["overflowed"],
            "overflow_steps": found["steps_per_seed"],
            "baseline_1e5_overflowed": at_1e5["overflowed"],
            "baseline_1e5_overflow_steps": at_1e5["steps_per_seed"],
            "horizon": run["steps"],
        },
        record={
            "baseline_1e4": found,
            "baseline_1e5": at_1e5,
            "per_seed": {
                seed: {"1e-4": a, "1e-5": b}
                for seed, a, b in zip(found["seeds"], found["steps_per_seed"], at_1e5["steps_per_seed"])
            },
            "seeds_a_decision_needs": seeds_needed(found, at_1e5, level),
            "logbook": LOGBOOK,
        },
        decide=rate_exceeds(found, at_1e5, what, level, batch),
    )


def final_or_inf(run: dict, rows: np.ndarray, column: int) -> np.ndarray:
    """F at a checkpoint; +inf for a run that overflowed before it (it never gets there)."""
    values = run["F"][rows, column].astype(float)
    gone = (run["overflow_step"][rows] > 0) & (run["overflow_step"][rows] <= run["curve_steps"][column])
    return np.where(gone, np.inf, values)


def one_sided_p(sample: np.ndarray) -> float:
    """p of a one-sided t-test that the mean of `sample` exceeds 0; NaN when it decides nothing (fewer
    than two values, or all equal: zero variance), which the statement counts as a failure."""
    if len(sample) < 2 or not np.all(np.isfinite(sample)) or float(np.std(sample)) == 0.0:
        return float("nan")
    return float(stats.ttest_1samp(sample, 0.0, alternative="greater").pvalue)


def proposed_lower(run: dict, level: float, held_level: float = LOWER_F_LEVEL) -> Finding:
    """The proposed method at 1e-4 ends with a lower F than the baseline at 1e-5, paired by seed (a seed's runs
    share their initialisation and sample stream): shown when the paired one-sided test of the final F
    differences rejects at `held_level`, refuted when the opposite one does at `level`. The t-test needs finite
    differences; where a run overflowed (F = +inf) the exact sign test (kernels.stats) takes its place."""
    prop, base = fx.select(run, *PROPOSED), fx.select(run, *BASELINE)
    steps = run["curve_steps"]
    later = range(1, len(steps))
    mean_prop = {int(steps[c]): float(np.mean(final_or_inf(run, prop, c))) for c in later}
    mean_base = {int(steps[c]): float(np.mean(final_or_inf(run, base, c))) for c in later}
    final_prop, final_base = final_or_inf(run, prop, -1), final_or_inf(run, base, -1)
    diff = final_base - final_prop
    if np.all(np.isfinite(diff)):
        test, p_for, p_against = "paired t-test", one_sided_p(diff), one_sided_p(-diff)
    else:
        test, p_for, p_against = "sign test", sign_test_greater(diff)[0], sign_test_greater(-diff)[0]
    what = f"final F, baseline 1e-5 minus proposed 1e-4, paired over {len(diff)} seeds ({test}), > 0"
    return Finding(
        headline={
            "F_proposed_1e4_final": float(np.mean(final_prop)),
            "F_baseline_1e5_final": float(np.mean(final_base)),
            "seeds_lower": f"{int(np.sum(final_prop < final_base))}/{len(prop)}",
            "at_step": int(steps[-1]),
        },
        record={
            "F_start": float(np.mean(run["F"][prop, 0])),
            "mean_F_proposed": mean_prop,
            "mean_F_baseline": mean_base,
            "final_F_per_seed": {
                "proposed 1e-4": [fx.plain(v) for v in final_prop],
                "baseline 1e-5": [fx.plain(v) for v in final_base],
            },
            "baseline_1e5_on_every_seed": baseline_overflow_evidence(run, 1e-5),
            "final_F_all_settings": {
                fx.setting_name(m, lr): [fx.plain(v) for v in run["F"][fx.select(run, m, lr), -1]]
                for m, lr in settings_in(run)
                if m != "erm"
            },
            "logbook": LOGBOOK,
            "every_checkpoint_mean_lower": all(mean_prop[t] < mean_base[t] for t in mean_prop),
            "every_seed_lower": bool(np.all(final_prop < final_base)),
            "paired_final_differences": [fx.plain(v) for v in diff],
            "paired_test": test,
        },
        decide=lambda: decide_test(p_for, p_against, alpha=level, held_alpha=held_level, what=what),
    )


def accuracy_fall(run: dict, seeds: int, level: float) -> Finding:
    """Figure 4 (left) over the second half of training (step PAPER_STEPS / 2 to the end).

    A run's drop is its clean test accuracy at the middle minus at the end. ERM and the proposed method
    must be finite to the end on every seed; the baseline at 1e-5 on all but at most one (the released
    evaluation leaves one seed, 8, out of the baseline's curves; the seeds it loses are listed); a run that is
    not refutes the statement. Three one-sided t-tests over seeds: ERM's drop is positive, and larger than each
    DRO method's (paired by seed, over the seeds where both are finite). Intersection-union: the statement holds
    when all three reject at FALL_LEVEL; it is refuted when any opposite test (ERM's accuracy rises, or falls
    less than a DRO method's) rejects at level / 3, so that the three together false-alarm at most `level`
    (Bonferroni); inconclusive otherwise, as is a p-value that is not a number (fewer than two pairs, or zero
    variance): not showing a fall is not showing its absence."""
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
    erm_finite = per[erm]["drop"][per[erm]["finite"]]
    erm_mean = float(np.mean(erm_finite)) if len(erm_finite) else float("nan")
    # the one-sided (1 - FALL_LEVEL) upper confidence bound on a mean drop: how large a fall the seeds leave room for
    upper = {
        name: -mean_lower_bound(-p["drop"][p["finite"]], 1 - FALL_LEVEL) if p["finite"].sum() > 1 else float("nan")
        for name, p in per.items()
    }
    tests = [
        (
            f"ERM's clean test accuracy falls from step {steps[mid]} to {steps[end]} (mean drop over "
            f"{len(erm_finite)} seeds {erm_mean:.3g}, its one-sided {1 - FALL_LEVEL:g} upper bound {upper[erm]:.3g})",
            one_sided_p(erm_finite),
            one_sided_p(-erm_finite),
        )
    ]
    paired, mean_drop = {}, {}
    for name in (prop, base):
        both = per[erm]["finite"] & per[name]["finite"]
        difference = per[erm]["drop"][both] - per[name]["drop"][both]
        paired[name] = one_sided_p(difference)
        d = per[name]["drop"][per[name]["finite"]]
        mean_drop[name] = float(np.mean(d)) if len(d) else float("nan")
        tests.append(
            (
                f"ERM's drop exceeds {name}'s, paired over {int(both.sum())} seeds (mean difference "
                f"{float(np.mean(difference)) if both.any() else float('nan'):.3g})",
                paired[name],
                one_sided_p(-difference),
            )
        )
    share = level / len(tests)
    found = {
        "compared_steps": [steps[mid], steps[end]],
        "drops_per_seed": {name: dict(zip(p["seeds"], [fx.plain(v) for v in p["drop"]])) for name, p in per.items()},
        "seeds_not_finite_to_the_end": lost,
        "erm_mean_drop": erm_mean,
        "erm_mean_drop_upper_99": upper[erm],
        "erm_p": tests[0][1],
        "paired_p_erm_drop_exceeds": paired,
        "p_against": {what: p_against for what, _, p_against in tests},
        "refute_level_each": share,
        "dro_mean_drop": mean_drop,
        "dro_mean_drop_upper_99": {name: upper[name] for name in (prop, base)},
    }
    finite_checks = [
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
    ]

    def decide() -> None:
        for condition, message in finite_checks:
            statement_holds(condition, message)
        # a test whose opposite rejects goes first (it refutes), then one that does not reject (inconclusive);
        # only when every test rejects does the last one return and the statement hold
        for what, p_for, p_against in sorted(tests, key=lambda t: (not t[2] < share, t[1] < FALL_LEVEL)):
            decide_test(p_for, p_against, alpha=share, held_alpha=FALL_LEVEL, what=what)

    return Finding(
        headline={
            "erm_mean_drop": erm_mean,
            "erm_mean_drop_upper_99": upper[erm],
            "erm_p": tests[0][1],
            "paired_p": paired,
            "dro_mean_drop": mean_drop,
        },
        record=found,
        decide=decide,
    )


# ---------------------------------------------------------------------------------------------
# The continued statements (registered 2026-12-05): decided from their chains over the continuation's units


def continued(chain) -> Finding:
    """A continued statement's finding from its registered chain (tools.l6_chains.Chain): held at the first
    crossing for, refuted at the first crossing against, inconclusive while it runs or at its cap."""
    from tools import l6_chains

    seeds = chain.seeds
    headline = {
        "looks": len(chain.looks),
        "seeds": (f"{seeds[0]}-{seeds[-1]}" if len(seeds) > 1 else str(seeds[0])) if seeds else "none yet",
        "ln_E_for": round(chain.log_e_for[-1], 3) if chain.looks else 0.0,
        "ln_E_against": round(chain.log_e_against[-1], 3) if chain.looks else 0.0,
        "end": chain.end,
        # where it decides: the report's registered false alarm is the refutation's (1e-4), not the holding's
        "holds_at": f"E_for >= {1.0 / l6_chains.HOLD_AT[chain.statement]:.3g}",
        "refuted_at": f"E_against >= {1.0 / l6_chains.REFUTE_AT:.3g}",
        "cap": f"seed {l6_chains.LAST_SEED[chain.statement]}"
        + (f" ({chain.cap_looks} batches of {chain.seeds_a_look} seeds)" if chain.seeds_a_look > 1 else ""),
        # a second test after seeds 0-9 ended inconclusive: over both reads a false statement is held with at most
        # twice the chain's holding level (docs/l6-evidence.md)
        "held_falsely_at_most": f"{2 * l6_chains.HOLD_AT[chain.statement]:g} over seeds 0-9 and this chain",
    }
    if chain.statement == l6_chains.REQUIRES and chain.looks:
        # what its registered power assumed, beside what the fresh seeds showed
        n = len(chain.seeds)
        k4, k5 = (sum(look[key] for look in chain.looks) for key in ("overflowed_1e-4", "overflowed_1e-5"))
        headline["overflowed"] = (
            f"baseline 1e-4 on {k4} of {n} seeds, 1e-5 on {k5} of {n} (its registered power assumed 1e-5 never "
            "overflows, as on seeds 0-9)"
        )

    def decide() -> None:
        if chain.end == l6_chains.HELD:
            return
        statement_holds(chain.end != l6_chains.REFUTED, f"refuted by its registered chain: {chain.shown()}")
        # raised as it is, not through statement_inconclusive: the chain is continued by the next seeds' units, its
        # e-process valid at any look, so the fixed-sample advice (a fresh run) would send the reader the wrong way
        if chain.end == l6_chains.CAPPED:
            raise StatementInconclusive(f"its registered chain reached its cap without crossing: {chain.shown()}")
        raise StatementInconclusive(
            f"its registered chain has not crossed: {chain.shown()}; the next seeds' units continue it "
            "(python -m tools.l6_continuation run, docs/l6-evidence.md)"
        )

    return Finding(headline=headline, record={"chain": chain.record()}, decide=decide)
