"""K1: "Every Hartigan fixed point is a Lloyd fixed point." (Section 4)

A fixed point is a partition the algorithm leaves unchanged. The converse is false, and is pinned
here as a registered refutation.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import find, given, settings
from hypothesis import strategies as st

from pytest_claims import statement_holds
from claims.ids import K1
from claims.kmeans.common import rate, sigma2_rows
from claims.tiers import tier_parts, tiers
from workloads.kmeans import FULL, SMOKE, cell, grid_for, row_cells
from kernels import kmeans as km


@st.composite
def small_partitions(draw, max_n: int = 12, ks: tuple[int, int] = (2, 3), dims: tuple[int, int] = (1, 4)):
    """A small float64 data set (duplicates and near-ties likely) and a partition with no empty cluster."""
    k = draw(st.integers(*ks))
    n = draw(st.integers(k, max_n))
    d = draw(st.integers(*dims))
    coordinate = st.one_of(
        st.integers(-3, 3).map(float),
        st.sampled_from([0.0, 0.5, 1e-9, -1e-9, 1.0 + 2**-40]),
        st.floats(-10, 10, allow_nan=False, allow_infinity=False),
    )
    data = np.array(draw(st.lists(st.lists(coordinate, min_size=d, max_size=d), min_size=n, max_size=n)))
    rest = draw(st.lists(st.integers(0, k - 1), min_size=n - k, max_size=n - k))
    labels = np.array(draw(st.permutations(list(range(k)) + rest)), dtype=np.int64)
    return data[None], labels[None], k


def _fixed(data: np.ndarray, labels: np.ndarray, k: int) -> tuple[bool, bool]:
    """(Lloyd leaves it unchanged, Hartigan leaves it unchanged), by running one step of each."""
    lloyd = km.lloyd(data, labels, k, route="explicit", max_iter=1)
    hartigan = km.hartigan(data, labels, k, route="explicit", max_sweeps=1)
    return bool(lloyd.initial_fixed[0]), bool(hartigan.initial_fixed[0])


# Smoke searches the whole space once; full searches four corners of it (k, d ranges) in parallel tests.
PROPERTY_SEARCHES = tier_parts(
    lambda search: f"k={search[1][0]}-d={search[2][0]}..{search[2][1]}",
    smoke=[(400, (2, 3), (1, 4))],
    full=[(1500, (k, k), dims) for k in (2, 3) for dims in ((1, 2), (3, 4))],
)


def _has_exact_tie(data: np.ndarray, labels: np.ndarray, k: int) -> bool:
    """Some point is exactly as near another cluster's mean as its own (where the tie rules decide)."""
    dist, _ = km.sq_distances_explicit(data, labels, k)
    own = np.take_along_axis(dist, labels[..., None], axis=-1)
    others = np.where(np.arange(k) == labels[..., None], np.inf, dist)
    return bool(np.any(others == own))


@pytest.mark.claim(K1, statement="property")
@pytest.mark.parametrize("tier, search", PROPERTY_SEARCHES)
def test_every_hartigan_fixed_partition_is_lloyd_fixed(evidence, tier, search):
    examples, ks, dims = search
    checked = {
        "examples": 0,
        "hartigan_fixed_checked": 0,
        "from_endpoints": 0,
        "raw_hartigan_fixed": 0,
        "hartigan_fixed_with_exact_tie": 0,
    }

    @settings(max_examples=examples)
    @given(small_partitions(ks=ks, dims=dims))
    def check(instance):
        data, labels, k = instance
        checked["examples"] += 1
        # Every strict Hartigan move lowers the SSE, so Hartigan must stop, at a partition it leaves
        # unchanged; a run that cycles (a move on a tie) or stops elsewhere is a broken kernel.
        run = km.hartigan(data, labels, k, route="explicit")
        assert bool(run.converged[0]), (
            f"Hartigan did not converge in 100 sweeps: data={data[0].tolist()} labels={labels[0].tolist()} k={k}"
        )
        for partition, origin in ((labels, "raw"), (run.labels, "endpoint")):
            if np.unique(partition).size < k:
                continue
            lloyd_fixed, hartigan_fixed = _fixed(data, partition, k)
            if origin == "endpoint":
                assert hartigan_fixed, (
                    f"Hartigan's endpoint is not Hartigan-fixed: data={data[0].tolist()} "
                    f"labels={partition[0].tolist()} k={k}"
                )
            if hartigan_fixed:
                checked["hartigan_fixed_checked"] += 1
                checked["from_endpoints"] += origin == "endpoint"
                checked["raw_hartigan_fixed"] += origin == "raw"
                checked["hartigan_fixed_with_exact_tie"] += _has_exact_tie(data, partition, k)
                statement_holds(
                    lloyd_fixed,
                    f"Hartigan-fixed but not Lloyd-fixed: data={data[0].tolist()} labels={partition[0].tolist()} k={k}",
                )

    check()
    evidence.headline(hartigan_fixed_partitions_checked=checked["hartigan_fixed_checked"], violations=0)
    described = f"hypothesis, seeded by (master seed, test), {examples} examples, n<=12, k in {ks}, d in {dims}"
    evidence.record(**checked, search=described)
    # Endpoints are Hartigan-fixed by construction, so they do not show that the search reaches the
    # cases that matter: require Hartigan-fixed partitions that Hartigan did not produce, and some
    # with an exact tie between a point's own and another mean (where the tie rules decide).
    assert checked["raw_hartigan_fixed"] >= 10 and checked["hartigan_fixed_with_exact_tie"] >= 10, (
        f"the search reached too few informative cases: {checked}"
    )


def _grid_endpoints(grid, options, rows) -> dict:
    """Cell by cell (a violation stops the test at the first cell that shows it): every Hartigan run
    converges, and every endpoint is Lloyd-fixed."""
    converged = fixed = 0
    for sigma2 in rows:
        for start in grid.starts:
            for d, source in grid.row:
                found = cell(options.seed, d, sigma2, grid.trials, source, start, options.backend, options.device)
                ok = found["hartigan_converged"]
                assert ok.all(), (
                    f"d={d}, sigma2={sigma2}, start={start}: {int((~ok).sum())} Hartigan runs did not converge"
                )
                converged += int(ok.sum())
                fixed += int((ok & found["hartigan_endpoint_lloyd_fixed"]).sum())
                statement_holds(
                    converged == fixed,
                    f"Hartigan endpoints not Lloyd-fixed at d={d}, sigma2={sigma2}, start={start}: {converged - fixed} "
                    f"so far",
                )
    return {"converged_endpoints": converged, "lloyd_fixed": fixed, "violations": converged - fixed}


# Smoke checks its whole grid in one test, full one sigma^2 row (both starts) per test.
GRID_ROWS = tier_parts(sigma2_rows, smoke=[SMOKE.sigma2s], full=[(s,) for s in FULL.sigma2s])


@pytest.mark.claim(K1, statement="grid-endpoints")
@pytest.mark.parametrize("tier, rows", GRID_ROWS)
def test_grid_endpoints_are_lloyd_fixed(options, evidence, tier, rows):
    grid = grid_for(tier, options)
    counts = _grid_endpoints(grid, options, rows)
    evidence.headline(endpoints_checked=counts["converged_endpoints"], endpoint_violations=counts["violations"])
    evidence.record(
        grid=tier,
        sigma2s=list(rows),
        starts=list(grid.starts),
        trials_per_cell=grid.trials,
        cells=len(grid.row) * len(rows),
    )
    hartigan_runs = len(grid.row) * len(rows) * len(grid.starts) * grid.trials
    assert counts["converged_endpoints"] == hartigan_runs, (
        f"reference check: every one of the {hartigan_runs} Hartigan runs must converge before its endpoint is tested; "
        f"{counts['converged_endpoints']} did"
    )
    statement_holds(counts["violations"] == 0, f"Hartigan endpoints not Lloyd-fixed, sigma2 in {list(rows)}: {counts}")


# The converse, pinned: 1-D points 0 and 2 in one cluster (mean 1), 3.5 alone (mean 3.5).
# Lloyd: point 2 is at distance 1 from its mean and 1.5 from the other, so nothing moves.
# Hartigan: leaving costs 2/(2-1) * 1 = 2, joining costs 1/(1+1) * 1.5^2 = 1.125 < 2, so 2 moves.
PINNED_DATA = np.array([[[0.0], [2.0], [3.5]]])
PINNED_LABELS = np.array([[0, 0, 1]])


@pytest.mark.claim(K1, statement="converse")
@pytest.mark.parametrize("tier", tiers("smoke", "full"))
def test_converse_every_lloyd_fixed_partition_is_hartigan_fixed(options, evidence, tier):
    pinned_lloyd, pinned_hartigan = _fixed(PINNED_DATA, PINNED_LABELS, 2)

    def lloyd_but_not_hartigan(instance) -> bool:
        data, labels, k = instance
        lloyd_fixed, hartigan_fixed = _fixed(data, labels, k)
        return lloyd_fixed and not hartigan_fixed

    found = find(small_partitions(), lloyd_but_not_hartigan, settings=settings(max_examples=2000))
    grid = grid_for(tier, options)
    lloyd_fixed_starts = left_by_hartigan = 0
    for sigma2 in grid.sigma2s:
        if sigma2 <= 40:
            continue
        for _, grid_result in row_cells(grid, options, sigma2):
            stalled = grid_result["lloyd_initial_fixed"]
            lloyd_fixed_starts += int(stalled.sum())
            left_by_hartigan += int((stalled & ~grid_result["hartigan_initial_fixed"]).sum())
    evidence.headline(lloyd_fixed_starts_left_by_hartigan=left_by_hartigan, lloyd_fixed_starts=lloyd_fixed_starts)
    evidence.record(
        pinned_counterexample={"data": PINNED_DATA[0, :, 0].tolist(), "labels": PINNED_LABELS[0].tolist(), "k": 2},
        pinned_lloyd_fixed=pinned_lloyd,
        pinned_hartigan_fixed=pinned_hartigan,
        shrunk_counterexample={"data": found[0][0].tolist(), "labels": found[1][0].tolist(), "k": found[2]},
        high_noise_share=rate(np.array([True] * left_by_hartigan + [False] * (lloyd_fixed_starts - left_by_hartigan))),
    )
    assert pinned_lloyd, "the pinned partition must be Lloyd-fixed for it to test the converse"
    statement_holds(
        pinned_hartigan and left_by_hartigan == 0,
        f"Lloyd-fixed partitions that Hartigan leaves: pinned example, the shrunk {found[0][0].tolist()} "
        f"labels {found[1][0].tolist()}, and {left_by_hartigan} of {lloyd_fixed_starts} high-noise random starts",
    )
