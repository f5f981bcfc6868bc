"""B4: "Block Gibbs from the all-cluster-0 start relaxes so that population occupancy approaches pi."

Stronger than the tutorial's check: the hidden chain's exact transition matrix P (quadrature) predicts
the occupancy after every sweep, e_0 P^t, and the observed occupancy of N independent chains is
Multinomial(N, e_0 P^t) at each sweep.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest
from scipy import stats

from pytest_claims import registered_false_alarm, statement_allclose, statement_ge, statement_in_interval
from claims.ids import B4
from claims.boltzmann.common import TIERS
from workloads.boltzmann import (
    GIBBS_MEANS,
    GIBBS_VARIANCES,
    PI,
    SIZES,
    chunked_counts,
    gibbs_trace,
    sampler_cut_point_check,
    transition,
)
from suite_plugin.options import scale_and_device
from kernels import boltzmann as bm


def predicted(sweeps: int) -> np.ndarray:
    curve = [np.eye(len(PI))[0]]
    for _ in range(sweeps):
        curve.append(curve[-1] @ transition())
    return np.array(curve)


def check_sampler(evidence, backend: str, device: str) -> None:
    """The chains' hidden-unit draws are the exact inverse CDF of p(h | v) (fixed uniforms at every
    exact cut point, to 1e-9 relative): a statement about the chains' occupancy rests on it, and a
    sampler error too small for the band at this many chains (logits off by 2%) shows here."""
    check = sampler_cut_point_check(GIBBS_MEANS, GIBBS_VARIANCES, PI, backend=backend, device=device)
    evidence.record(sampler_cut_points=check)
    assert check["wrong_bin"] == 0, f"the hidden-unit sampler is not the inverse CDF of p(h | v): {check}"


def band(chains: int, curve: np.ndarray) -> tuple[np.ndarray, np.ndarray, float]:
    """Per-sweep, per-cluster binomial quantiles at the registered false alarm / (cells): a simultaneous band."""
    cells = (curve.shape[0] - 1) * curve.shape[1]
    level = registered_false_alarm() / cells
    low = stats.binom.ppf(level / 2, chains, curve) / chains
    high = stats.binom.isf(level / 2, chains, curve) / chains
    return low, high, level


# The tutorial's own check at the tutorial's size (6000 chains, 30 sweeps), in either tier.
@pytest.mark.smoke  # scale-free (registry): the tutorial's own size in every tier
@pytest.mark.claim(B4, statement="tutorial-check")
def test_back_half_occupancy_near_pi(options, evidence):
    check_sampler(evidence, options.backend, options.device)
    trace = gibbs_trace(options.seed, "smoke", "float64", options.backend, options.device)
    back = trace[len(trace) // 2 :].mean(axis=0)
    deviation = float(np.max(np.abs(back - PI)))
    evidence.headline(start_in_cluster_0=float(trace[0, 0]), back_half_max_deviation=deviation)
    evidence.record(back_half_occupancy=back, chains=SIZES["smoke"].chains, sweeps=SIZES["smoke"].sweeps)
    # The check's false alarm from an argument: each chain's back-half occupancy lies in [0, 1] and the
    # chains are independent, so (Hoeffding) P(|back - E back| >= t) <= 2 exp(-2 chains t^2) per
    # cluster, with E back = the back-half mean of e_0 P^t (the transition matrix) and t = 0.04 - |E back - pi|.
    expected = predicted(len(trace) - 1)[len(trace) // 2 :].mean(axis=0)
    slack = 0.04 - float(np.max(np.abs(expected - PI)))
    bound = 2 * len(PI) * float(np.exp(-2 * SIZES["smoke"].chains * slack**2))
    evidence.record(expected_back_half_occupancy=expected, hoeffding_false_alarm=bound)
    assert bound <= registered_false_alarm(), (
        f"the registered false alarm is below the tolerance check's Hoeffding bound {bound:.3g}"
    )
    statement_ge(trace[0, 0], 0.95, strict=True, what="the start's occupancy of cluster 0")
    statement_allclose(back, PI, rtol=0, atol=0.04, what="back-half occupancy vs pi")


@pytest.mark.smoke  # scale-free (registry): quadrature, the same in every tier
@pytest.mark.claim(B4, statement="transition-matrix")
def test_transition_matrix_is_reversible_with_stationary_pi(evidence):
    matrix = transition()
    refined = bm.transition_matrix(GIBBS_MEANS, GIBBS_VARIANCES, PI, order=480)
    quadrature_error = float(np.max(np.abs(matrix - refined)))
    flow = PI[:, None] * matrix
    balance = float(np.max(np.abs(flow - flow.T)))
    stationarity = float(np.max(np.abs(PI @ matrix - PI)))
    lam2, tau = bm.relaxation_time(matrix)
    evidence.headline(detailed_balance_error=balance, stationarity_error=stationarity, relaxation_time_sweeps=tau)
    evidence.record(transition=matrix, quadrature_error_by_refinement=quadrature_error, second_eigenvalue=lam2)
    assert quadrature_error < 1e-13, f"quadrature not converged: {quadrature_error:.3g}"
    statement_allclose(flow, flow.T, rtol=0, atol=1e-12, what="detailed balance pi_k P_kk' vs pi_k' P_k'k")
    statement_allclose(PI @ matrix, PI, rtol=0, atol=1e-12, what="stationarity pi P vs pi")


MUTANT_SWEEPS = 8
BAND_WHAT = "occupancy per (sweep - 1, cluster) against the band, to rounding"


def _band_check(options, evidence, tier, dtype):
    size = SIZES[tier]
    check_sampler(evidence, options.backend, options.device)
    trace = gibbs_trace(options.seed, tier, dtype, options.backend, options.device)
    curve = predicted(size.sweeps)
    low, high, level = band(size.chains, curve)
    inside = (trace >= low - 1e-12) & (trace <= high + 1e-12)
    outside = [(int(t), int(k)) for t, k in zip(*np.nonzero(~inside[1:]))]
    # The band has power: a Gibbs step that reuses the first v never moves past e_0 P
    # (its first MUTANT_SWEEPS sweeps are enough to leave the band).
    draws = bm.KeyedNormalUniform(f"{options.seed}|boltzmann/gibbs-mutant|{tier}", dtype="float64")
    frozen_v = bm.sample_visible(np.zeros(size.chains, dtype=np.int64), GIBBS_MEANS, GIBBS_VARIANCES, draws)
    mutant = np.array(
        [
            np.bincount(bm.sample_hidden(frozen_v, GIBBS_MEANS, GIBBS_VARIANCES, PI, draws), minlength=3) / size.chains
            for _ in range(MUTANT_SWEEPS)
        ]
    )
    mutant_outside = int(np.sum(~((mutant >= low[1 : MUTANT_SWEEPS + 1]) & (mutant <= high[1 : MUTANT_SWEEPS + 1]))))
    _, tau = bm.relaxation_time(transition())
    evidence.headline(**{f"{dtype} sweeps outside band": len(outside), "relaxation_time_sweeps": tau})
    evidence.record(
        chains=size.chains,
        sweeps=size.sweeps,
        per_cell_level=level,
        false_alarm_rate=registered_false_alarm(),
        outside=outside[:20],
        mutant_cells_outside=mutant_outside,
    )
    if dtype == "float64":
        evidence.figure(f"occupancy per sweep ({tier})", _occupancy_figure(trace, curve, low, high))
    assert mutant_outside > 0, "a Gibbs step reusing v stayed inside the band: the band has no power"
    statement_in_interval(trace[1:], low[1:] - 1e-12, high[1:] + 1e-12, what=BAND_WHAT)


@pytest.mark.claim(B4, statement="occupancy-band")
@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("tier", TIERS)
def test_occupancy_inside_predicted_band(options, evidence, tier, dtype):
    _band_check(options, evidence, tier, dtype)


@dataclass(frozen=True)
class ChainScale:
    chains: int
    sweeps: int
    chunk: int  # chains run at once: memory is bounded by the chunk, not by the chain count
    rehearsal: ChainScale | None = None  # the gpu tier's: the slice standing in for it on the CPU (--gpu-rehearsal)


# The same code path at two sizes: a tiny torch run on the CPU in every smoke run, and the nightly's
# 1e8 chains on CUDA, 1e7 at a time (about 2 GB of float64 temporaries per chunk); its rehearsal runs
# the nightly's 30 sweeps on 30,000 chains on the CPU, ending on a partial chunk.
CHAIN_SCALES = [
    pytest.param(ChainScale(20_000, 12, 8_000), marks=pytest.mark.smoke, id="tiny-cpu"),
    pytest.param(
        ChainScale(100_000_000, 30, 10_000_000, rehearsal=ChainScale(30_000, 30, 7_000)),
        marks=pytest.mark.gpu,
        id="nightly-1e8-cuda",
    ),
]


@pytest.mark.claim(B4, statement="occupancy-band")
@pytest.mark.parametrize("scale", CHAIN_SCALES)
def test_occupancy_band_chunked(options, evidence, scale):
    """The band statement on torch, chunked: tiny on the CPU (smoke), 1e8 chains on CUDA (gpu tier)."""
    # The nightly size runs on CUDA whatever --device says (the gpu tier is skipped without CUDA), and
    # must be seen to: the chains' tensors are asserted to be on it.
    scale, device = scale_and_device(options, scale)
    check_sampler(evidence, "torch", device)
    counts = chunked_counts(options.seed, scale.chains, scale.sweeps, scale.chunk, device)
    curve = predicted(scale.sweeps)
    low, high, level = band(scale.chains, curve)
    occupancy = counts / scale.chains
    inside = (occupancy >= low - 1e-12) & (occupancy <= high + 1e-12)
    outside = [(int(t), int(k)) for t, k in zip(*np.nonzero(~inside[1:]))]
    # The band has power at this size: a Gibbs step that reuses the first v leaves every chain's label
    # distributed as e_0 P at every sweep, which the band excludes at some sweep t >= 2.
    frozen_outside = int(np.sum((curve[1] < low[2:]) | (curve[1] > high[2:])))
    evidence.headline(**{"sweeps outside band": len(outside), "chains": scale.chains})
    evidence.record(
        device=device,
        chunk=scale.chunk,
        sweeps=scale.sweeps,
        per_cell_level=level,
        false_alarm_rate=registered_false_alarm(),
        outside=outside[:20],
        frozen_v_cells_outside=frozen_outside,
        largest_band_halfwidth=float(np.max(high - low) / 2),
    )
    assert counts.sum(axis=1).tolist() == [scale.chains] * (scale.sweeps + 1), (
        "chains lost or counted twice across chunks"
    )
    assert frozen_outside > 0, "e_0 P stays inside the band: the band has no power against a Gibbs step that reuses v"
    statement_in_interval(occupancy[1:], low[1:] - 1e-12, high[1:] + 1e-12, what=BAND_WHAT)


def _occupancy_figure(trace, curve, low, high):
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3.4))
    sweeps = np.arange(len(trace))
    for k, colour in enumerate(("#d55e00", "#0072b2", "#009e73")):
        ax.fill_between(sweeps, low[:, k], high[:, k], color=colour, alpha=0.2)
        ax.plot(sweeps, curve[:, k], color=colour, lw=1, ls="--")
        ax.plot(sweeps, trace[:, k], color=colour, lw=1.2, label=f"cluster {k}")
        ax.axhline(PI[k], color=colour, lw=0.6, ls=":")
    ax.set_xlabel("sweep", fontsize=8)
    ax.set_ylabel("occupancy", fontsize=8)
    ax.legend(fontsize=7)
    ax.set_title("observed (solid), e_0 P^t (dashed) with its simultaneous band, pi (dotted)", fontsize=8)
    return fig
