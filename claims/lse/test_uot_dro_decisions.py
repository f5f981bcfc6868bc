"""L6's paper-scale decisions (uot_dro_decisions) on constructed run records: records built to hold, to be refuted
and to be undecided, decided at the level a paper-scale run registers. Harness tests of the statements' logic, not
statements: they run in the smoke tier, so a night at the paper's scale never meets an untested decision."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from claims.lse import uot_dro_decisions as decisions
from claims.lse.uot_dro_decisions import BASELINE, ERM, PROPOSED
from workloads import uot_dro as fx
from pytest_claims import ClaimRefuted, StatementInconclusive

# The gpu tier's level per statement (its registered 4.2e-4 over 6 statements, rounded down), as
# registered_false_alarm() gives it inside a paper-scale statement test.
GPU_LEVEL = 7e-5


def constructed(
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


def outcome(finding: decisions.Finding) -> str:
    try:
        finding.decide()
    except ClaimRefuted:
        return "refuted"
    except StatementInconclusive:
        return "undecided"
    return "held"


@pytest.mark.smoke
def test_never_overflows():
    """proposed-never-overflows: no proposed run overflowing holds; one seed overflowing (at step 61,000) refutes
    it, naming the seed. A count has no undecided case: one overflow is the counterexample."""

    def decide(overflowed: int) -> str:
        overflow = {PROPOSED: [-1] * (fx.PAPER_SEEDS - overflowed) + [61_000] * overflowed}
        return outcome(decisions.proposed_never(constructed(overflow)))

    assert (decide(0), decide(1), decide(10)) == ("held", "refuted", "refuted")
    with pytest.raises(ClaimRefuted, match="61000"):
        decisions.proposed_never(constructed({PROPOSED: [-1] * 9 + [61_000]})).decide()


@pytest.mark.smoke
def test_requires_1e_5():
    """baseline-requires-1e-5: the baseline overflowing on 10/10 seeds at 1e-4 against 0/10 at 1e-5 holds; 0/10
    against 10/10 is refuted; 3/10 against 1/10 is undecided; 9/10 against 0/10 holds at the gpu level (Fisher's
    p = 5.95e-5) and is undecided at a ten times smaller one."""

    def decide(k_1e4: int, k_1e5: int, level: float = GPU_LEVEL) -> str:
        overflow = {
            ("baseline", 1e-4): [900] * k_1e4 + [-1] * (10 - k_1e4),
            BASELINE: [40_000] * k_1e5 + [-1] * (10 - k_1e5),
        }
        return outcome(decisions.baseline_at_1e_4(constructed(overflow), level))

    assert (decide(10, 0), decide(0, 10), decide(3, 1)) == ("held", "refuted", "undecided")
    assert (decide(9, 0), decide(9, 0, GPU_LEVEL / 10)) == ("held", "undecided")


@pytest.mark.smoke
def test_lower_objective():
    """proposed-lower-objective, paired by seed: the proposed method ending 0.2 below the baseline on every seed
    (with a spread) holds, by the paired t-test; 0.2 above is refuted; differences centred on 0 are undecided; a
    baseline that overflowed on every seed (F = +inf) holds by the exact sign test (p = 2^-10 < 0.01)."""
    spread = [0.01 * ((7 * s) % fx.PAPER_SEEDS) for s in range(fx.PAPER_SEEDS)]

    def decide(gap: float, centred: bool = False, overflowed: bool = False) -> str:
        base = [1.0 + 0.01 * s for s in range(fx.PAPER_SEEDS)]
        shift = [gap + (d - 0.045 if centred else d) for d in spread]
        final = {BASELINE: base, PROPOSED: [b - g for b, g in zip(base, shift)]}
        overflow = {BASELINE: [30_000] * fx.PAPER_SEEDS} if overflowed else {}
        return outcome(decisions.proposed_lower(constructed(overflow, final_f=final), GPU_LEVEL))

    assert (decide(0.2), decide(-0.2), decide(0.0, centred=True), decide(0.0, overflowed=True)) == (
        "held",
        "refuted",
        "undecided",
        "held",
    )


@pytest.mark.smoke
def test_overflows_at_1e_3():
    """baseline-overflows-at-1e-3: 10/10 baseline overflows against 0/10 proposed holds; 0/10 against 10/10 is
    refuted; 2/10 against 1/10 is undecided."""

    def decide(k_base: int, k_prop: int) -> str:
        overflow = {
            ("baseline", 1e-3): [500] * k_base + [-1] * (10 - k_base),
            PROPOSED: [700] * k_prop + [-1] * (10 - k_prop),
        }
        return outcome(decisions.baseline_at_1e_3(constructed(overflow), GPU_LEVEL))

    assert (decide(10, 0), decide(0, 10), decide(2, 1)) == ("held", "refuted", "undecided")


@pytest.mark.smoke
def test_the_cpu_horizon_contrasts_decide_batch_by_batch():
    """baseline-overflows-at-1e-3-cpu-horizon and baseline-requires-1e-5-cpu-horizon, registered anytime: a batch of
    4 seeds a setting decides by its two-proportions e-value. At 1e-5 no batch decides alone (4/4 against 0/4 is
    e^4.07); at 0.05 the same batch holds (e^4.07 >= 20), the mirror one is refuted, 2/4 against 1/4 is undecided;
    and the decision's name holds no counts, which differ from batch to batch while a ledger's parameters cannot."""

    def decide(k_more: int, k_fewer: int, level: float, contrast=decisions.baseline_at_1e_3) -> str:
        more, fewer = (
            (("baseline", 1e-3), PROPOSED)
            if contrast is decisions.baseline_at_1e_3
            else (
                ("baseline", 1e-4),
                BASELINE,
            )
        )
        overflow = {more: [500] * k_more + [-1] * (4 - k_more), fewer: [700] * k_fewer + [-1] * (4 - k_fewer)}
        return outcome(contrast(constructed(overflow, seeds=4), level, 0))

    for contrast in (decisions.baseline_at_1e_3, decisions.baseline_at_1e_4):
        assert decide(4, 0, 1e-5, contrast) == "undecided"
        assert (decide(4, 0, 0.05, contrast), decide(0, 4, 0.05, contrast), decide(2, 1, 0.05, contrast)) == (
            "held",
            "refuted",
            "undecided",
        )
    run = constructed({("baseline", 1e-3): [500, -1, -1, -1]}, seeds=4)
    with pytest.raises(StatementInconclusive, match="batch by batch") as ended:
        decisions.baseline_at_1e_3(run, 1e-5, 0).decide()
    assert "1/4" not in str(ended.value).split(":")[0]  # the name; the counts are the ledger's
    with pytest.raises(StatementInconclusive, match=r"baseline 1e-3 \(1/4\) above proposed 1e-4 \(0/4\)"):
        decisions.baseline_at_1e_3(run, 1e-5).decide()  # read once (the gpu tier): Fisher's, named with its counts


@pytest.mark.smoke
def test_accuracy_falls_late():
    """erm-accuracy-falls-late: ERM falling 5 points on every seed while the DRO methods hold their accuracy
    holds; ERM holding while the DRO methods fall 5 points is refuted (the paired opposite test rejects); drops
    that scatter about zero for every method, as the paper-scale evidence's ERM drops do, are undecided."""

    def decide(erm: float, dro: float) -> str:
        jitter = [0.001 * s for s in range(fx.PAPER_SEEDS)]  # seeds differ, so the t-tests have a spread
        shuffled = [0.001 * ((3 * s) % fx.PAPER_SEEDS) for s in range(fx.PAPER_SEEDS)]  # and the paired differences
        drops = {
            ERM: [erm + j for j in jitter],
            PROPOSED: [dro + j for j in shuffled],
            BASELINE: [dro + j for j in shuffled],
        }
        return outcome(decisions.accuracy_fall(constructed({}, drops), fx.PAPER_SEEDS, GPU_LEVEL))

    centred = -0.001 * (fx.PAPER_SEEDS - 1) / 2  # the jitter's mean: every method's drops scatter about zero
    assert (decide(0.05, 0.0), decide(0.0, 0.05), decide(centred, centred)) == ("held", "refuted", "undecided")


@pytest.mark.smoke
def test_fisher_power_is_the_chance_of_a_shown_contrast():
    """fisher_power against scipy's fisher_exact table by table, and against a count of simulated decisions."""
    from scipy import stats

    seeds, more_rate, fewer_rate, level = 6, 0.8, 0.1, 0.05
    rng = np.random.default_rng(0)
    more, fewer = rng.binomial(seeds, more_rate, 20000), rng.binomial(seeds, fewer_rate, 20000)
    shown = {
        (a, b): stats.fisher_exact([[a, seeds - a], [b, seeds - b]], alternative="greater").pvalue <= level
        for a in range(seeds + 1)
        for b in range(seeds + 1)
    }
    simulated = np.mean([shown[a, b] for a, b in zip(more, fewer)])
    exact = decisions.fisher_power(seeds, more_rate, fewer_rate, level)
    assert abs(simulated - exact) < 4 * np.sqrt(exact * (1 - exact) / 20000)  # four standard errors
    assert decisions.fisher_power(seeds, 0.0, 0.0, level) == 0.0  # no table can show a contrast that is not there


@pytest.mark.smoke
@pytest.mark.parametrize("more_rate, level, power", [(0.6, 1e-2, 0.5), (0.6, 1e-2, 0.9), (0.9, 1e-3, 0.9)])
def test_anytime_batches_are_the_first_crossings_of_every_path(more_rate, level, power):
    """anytime_batches_to_decide against every sequence of batch outcomes (batches of 2 seeds a setting), each
    path's product of e-values checked for a crossing at each batch, its chance summed where it crossed."""
    import itertools
    import math

    from scipy import stats

    from pytest_claims.anytime.evalues import two_proportions_log_evalue

    batch = 2
    steps = [two_proportions_log_evalue(k, batch, 0, batch) for k in range(batch + 1)]
    chance = stats.binom.pmf(range(batch + 1), batch, more_rate)

    def crossed_by(batches: int) -> float:
        total = 0.0
        for path in itertools.product(range(batch + 1), repeat=batches):
            walk = np.cumsum([steps[k] for k in path])
            if np.any(walk >= math.log(1 / level)):
                total += math.prod(chance[k] for k in path)
        return total

    least = next(m for m in range(1, 10) if crossed_by(m) >= power)
    assert decisions.anytime_batches_to_decide(more_rate, level, batch=batch, power=power) == least
    assert decisions.anytime_batches_to_decide(more_rate, level, batch=batch, power=power, most=least - 1) is None


@pytest.mark.smoke
@pytest.mark.parametrize(
    "statement, rates",
    [
        ("baseline-overflows-at-1e-3-cpu-horizon", [(0.75, 0.0), (0.5, 0.0)]),
        ("baseline-requires-1e-5-cpu-horizon", [(0.4, 0.0), (0.25, 0.0)]),
    ],
)
def test_registered_seed_counts_are_the_computed_ones(statement, rates):
    """The CPU-horizon statements say how many seeds a decision would need at the rates they saw: the numbers in
    their registered text are the ones seeds_to_decide computes at their registered false alarm (1e-5)."""
    import re
    import tomllib

    registry = tomllib.loads((Path(__file__).parents[1] / "registry.toml").read_text())
    (record,) = [s for c in registry["claim"] for s in c.get("statement", []) if s["name"] == statement]
    level = record["false_alarm"]["full"]
    computed = [decisions.seeds_to_decide(more, fewer, level) for more, fewer in rates]
    said = [int(n) for n in re.findall(r"needs (\d+)(?: to (\d+))? seeds per setting", record["text"])[0] if n]
    said += [int(n) for n in re.findall(r"would need (\d+)", record["text"])]
    assert sorted(said) == sorted(computed), (said, computed)
    # and the anytime-valid continuation's: batches of 4 seeds a setting, at the same rates and level
    batches = [decisions.anytime_batches_to_decide(more, level) for more, _ in rates]
    said = [int(n) for n in re.findall(r"(\d+) batches of 4 seeds", record["text"])]
    assert sorted(said) == sorted(batches), (said, batches)


@pytest.mark.smoke
def test_a_continued_statement_ends_as_its_chain_and_says_the_way_on():
    """decisions.continued over constructed chains: held at the crossing for, refuted at the crossing against; a
    running chain is inconclusive and names the runner that continues it (never the fixed-sample advice of a fresh
    run, which would throw its registered chain away); a chain at its cap is inconclusive and says so."""
    from tools import l6_chains as lc
    from tools.tests.test_l6_chains import _units

    def ended(units: dict) -> tuple[str, str]:
        try:
            decisions.continued(lc.chains_of(units)[lc.LOWER]).decide()
        except ClaimRefuted as refuted:
            return "refuted", str(refuted)
        except StatementInconclusive as inconclusive:
            return "undecided", str(inconclusive)
        return "held", ""

    assert ended(_units([True] * 9))[0] == "held"
    assert ended(_units([False] * 17))[0] == "refuted"  # E_against = 2^18 / 18 > 1e4 at the 17th loss
    running, why = ended(_units([True] * 5))
    assert running == "undecided" and "python -m tools.l6_continuation run" in why
    assert "fresh run" not in why and "claims-continue" not in why
    capped, why = ended(_units([True, False] * 15))  # seeds 10-39, 15 wins and 15 losses: no crossing by seed 39
    assert capped == "undecided" and "reached its cap without crossing" in why and "l6_continuation run" not in why
    # its headline: the level over both reads (seeds 0-9, then the chain), and for the overflow statement the counts
    # its registered power assumed away
    lower = decisions.continued(lc.chains_of(_units([True] * 9))[lc.LOWER]).headline
    assert lower["held_falsely_at_most"] == "0.02 over seeds 0-9 and this chain" and "overflowed" not in lower
    requires = decisions.continued(lc.chains_of(_units([], overflows_1e4=[1, 0, 1, 1, 1, 1, 0, 1]))[lc.REQUIRES])
    assert requires.headline["held_falsely_at_most"] == "0.0002 over seeds 0-9 and this chain"
    assert requires.headline["overflowed"].startswith("baseline 1e-4 on 6 of 8 seeds, 1e-5 on 0 of 8 (")


@pytest.mark.smoke
def test_a_chain_chart_counts_looks_in_whole_numbers_up_to_the_cap():
    """The chain's chart: looks on an axis of whole looks from 1 to the cap's look (15 batches of 4 seeds for the
    overflow statement, 30 seeds for the lower objective), so a reader sees how far the chain is from its cap."""
    from claims.lse import uot_dro_figures as figures
    from tools import l6_chains as lc
    from tools.tests.test_l6_chains import _units

    chains = lc.chains_of(_units([True] * 3, overflows_1e4=[1, 0, 1, 1, 1, 1, 0, 1]))
    for name, last in ((lc.REQUIRES, 15), (lc.LOWER, 30), (lc.ERM_FALLS, 20)):
        fig = figures.chain_figure(chains[name])
        ax = fig.axes[0]
        ticks = [t for t in ax.get_xticks() if ax.get_xlim()[0] <= t <= ax.get_xlim()[1]]
        assert all(float(t).is_integer() for t in ticks), (name, ticks)
        assert ax.get_xlim()[1] >= last and ax.get_xlim()[1] < last + 1, (name, ax.get_xlim())
        assert ("batch" in ax.get_xlabel()) == (name == lc.REQUIRES)


@pytest.mark.smoke
def test_a_continued_statements_headline_names_its_thresholds_and_cap():
    """The report shows the registered false alarm (1e-4: refutation) beside a held statement; the headline must
    say where the chain holds (E_for >= 100 for the lower objective, 1e4 for the overflow statement), where it is
    refuted, and its cap, or a reader takes the held for a 1e-4 decision."""
    from tools import l6_chains as lc
    from tools.tests.test_l6_chains import _units

    chains = lc.chains_of(_units([True] * 9, overflows_1e4=[1, 0, 1, 1]))
    lower = decisions.continued(chains[lc.LOWER]).headline
    assert lower["holds_at"] == "E_for >= 100" and lower["refuted_at"] == "E_against >= 1e+04"
    assert lower["cap"] == "seed 39"
    requires = decisions.continued(chains[lc.REQUIRES]).headline
    assert requires["holds_at"] == "E_for >= 1e+04" and requires["cap"] == "seed 69 (15 batches of 4 seeds)"
