"""K3: "Hartigan's algorithm does not have this pathology: in the same regime it leaves the random
partition and recovers the clusters as d grows."

Same data and same start as Lloyd in every trial (paired). Full runs both start conventions.
"""
from __future__ import annotations

import pytest

from pytest_claims import statement_holds
from claims.kmeans.common import K3, nmi_summary, rate
from fixtures.kmeans import FULL, SMOKE, grid_for, huge_cells, row_cells
from kernels.stats import sign_test_greater

SIGN_P = 1e-6


def _leaves_start(tier, options, sigma2, evidence):
    grid = grid_for(tier, options)
    stalled_cells = 0
    for d, cell in row_cells(grid, options, sigma2):
        lloyd, hartigan = rate(cell["lloyd_initial_fixed"]), rate(cell["hartigan_initial_fixed"])
        if lloyd["lower99"] < 0.9:
            continue
        stalled_cells += 1
        evidence.record(**{f"sigma2={sigma2:.4g} d={d}": {"lloyd": lloyd, "hartigan": hartigan}})
        evidence.headline(largest_hartigan_upper99=max(hartigan["upper99"], evidence.values.get("largest_hartigan_upper99", 0.0)))
        statement_holds(
            hartigan["upper99"] <= 0.1,
            f"sigma2={sigma2}, d={d}: Lloyd stalls (lower99 {lloyd['lower99']:.3f}) but Hartigan's stall rate "
            f"has upper99 {hartigan['upper99']:.3f} > 0.1",
        )
    evidence.headline(**{f"sigma2={sigma2:.4g} cells where Lloyd stalls": stalled_cells})
    assert stalled_cells > 0, f"no cell of the sigma2={sigma2} row has Lloyd stalling; nothing to compare"


@pytest.mark.smoke
@pytest.mark.claim(K3, statement="leaves-start")
def test_hartigan_leaves_where_lloyd_stalls_smoke(options, evidence):
    for sigma2 in SMOKE.high_noise:
        _leaves_start("smoke", options, sigma2, evidence)


@pytest.mark.full
@pytest.mark.claim(K3, statement="leaves-start")
@pytest.mark.parametrize("sigma2", FULL.high_noise, ids=lambda s: f"sigma2={s:.4g}")
def test_hartigan_leaves_where_lloyd_stalls_full(options, evidence, sigma2):
    _leaves_start("full", options, sigma2, evidence)


def _paired_nmi(tier, options, sigma2, start, evidence):
    grid = grid_for(tier, options)
    d, cell = row_cells(grid, options, sigma2, start)[-1]
    p, positive, negative = sign_test_greater(cell["hartigan_nmi"] - cell["lloyd_nmi"])
    evidence.headline(**{f"sigma2={sigma2:.4g} {start} sign_p": p})
    evidence.headline(largest_sign_p=max(p, evidence.values.get("largest_sign_p", 0.0)))
    evidence.record(**{f"sigma2={sigma2:.4g} d={d} {start}": {"positive": positive, "negative": negative, "ties": grid.trials - positive - negative, "p": p}})
    statement_holds(p < SIGN_P, f"sigma2={sigma2}, d={d}, start={start}: sign test p={p:.3g} >= {SIGN_P} (+{positive}/-{negative})")


@pytest.mark.smoke
@pytest.mark.claim(K3, statement="paired-nmi")
def test_paired_nmi_smoke(options, evidence):
    for sigma2 in SMOKE.high_noise:
        _paired_nmi("smoke", options, sigma2, "partition", evidence)


@pytest.mark.full
@pytest.mark.claim(K3, statement="paired-nmi")
@pytest.mark.parametrize("start", FULL.starts)
@pytest.mark.parametrize("sigma2", FULL.high_noise, ids=lambda s: f"sigma2={s:.4g}")
def test_paired_nmi_full(options, evidence, sigma2, start):
    _paired_nmi("full", options, sigma2, start, evidence)


def _nmi_to_one(cells, sigma2, start, evidence):
    for d, cell in cells:
        summary = nmi_summary(cell["hartigan_nmi"])
        evidence.headline(**{f"sigma2={sigma2:.4g} d={d:.0e} {start} hartigan_nmi_lower99": summary["lower99"]})
        evidence.headline(smallest_hartigan_nmi_lower99=min(summary["lower99"], evidence.values.get("smallest_hartigan_nmi_lower99", 1.0)))
        evidence.record(**{f"sigma2={sigma2:.4g} d={d} {start}": dict(summary, lloyd_mean=float(cell["lloyd_nmi"].mean()))})
        statement_holds(summary["lower99"] >= 0.95, f"sigma2={sigma2}, d={d}, start={start}: Hartigan NMI {summary}")


@pytest.mark.smoke
@pytest.mark.claim(K3, statement="nmi-to-one")
def test_hartigan_nmi_to_one_smoke(options, evidence):
    grid = grid_for("smoke", options)
    for sigma2 in SMOKE.high_noise:
        _nmi_to_one(row_cells(grid, options, sigma2)[-1:], sigma2, "partition", evidence)


@pytest.mark.full
@pytest.mark.claim(K3, statement="nmi-to-one")
@pytest.mark.parametrize("start", FULL.starts)
@pytest.mark.parametrize("sigma2", FULL.high_noise, ids=lambda s: f"sigma2={s:.4g}")
def test_hartigan_nmi_to_one_full(options, evidence, sigma2, start):
    grid = grid_for("full", options)
    _nmi_to_one(row_cells(grid, options, sigma2, start)[-1:], sigma2, start, evidence)


@pytest.mark.full
@pytest.mark.claim(K3, statement="wishart-huge-d")
@pytest.mark.parametrize("sigma2", FULL.high_noise, ids=lambda s: f"sigma2={s:.4g}")
def test_hartigan_at_huge_d_full(options, evidence, sigma2):
    grid = grid_for("full", options)
    cells = huge_cells(grid, options, sigma2)
    for d, cell in cells:
        hartigan = rate(cell["hartigan_initial_fixed"])
        evidence.record(**{f"sigma2={sigma2:.4g} d={d:.0e} hartigan_stall": hartigan})
        statement_holds(hartigan["upper99"] <= 0.1, f"d={d}: Hartigan stalls: {hartigan}")
    _nmi_to_one(cells, sigma2, "partition", evidence)
