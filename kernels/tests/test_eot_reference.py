"""Reference tests of the eOT kernels: the fast Gaussian sums against direct summation, the Sinkhorn
reference against POT, and the samplers against their densities."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from suite_plugin.options import gpu_device
from kernels import eot
from kernels.seeding import fixed_rng


@pytest.mark.smoke
@pytest.mark.parametrize(
    "config",
    [eot.SgdConfig("proposed", 10.0, 10.0, 0.3), eot.SgdConfig("baseline", 0.1, 1e-3)],
    ids=lambda c: c.name,
)
def test_fast_gauss_sums_match_direct_summation_at_1e4_iterations(config):
    run = eot.kernel_sgd(config, [11, 12], 10_000, (10_000,), record_steps=True)
    xs, ys = run["samples"]
    targets = np.broadcast_to(np.linspace(-1.5, 5.5, 300), (2, 300)).copy()
    for sums, sources in ((run["u_sum"], xs), (run["v_sum"], ys)):
        direct = eot.direct_sum(sources, run["steps"], targets, config.sigma2)
        assert np.max(np.abs(sums(targets) - direct)) <= 1e-9
        assert np.all(sums.error_bound() <= 1e-12)  # the truncation part of the error, by its bound


@pytest.mark.smoke
def test_sinkhorn_reference_matches_pot():
    import ot

    n = 120  # the same discretisation on both sides; its size only sets the cost
    x, a, y, b = eot.quadrature(n)
    plan = ot.sinkhorn(
        a, b, (x[:, None] - y[None, :]) ** 2, eot.EPS, method="sinkhorn_log", numItermax=100_000, stopThr=1e-13
    )
    ours = eot.sinkhorn_dual(n)["value"]
    assert abs(eot.primal_value(plan, n) - ours) <= 1e-9


@pytest.mark.smoke
def test_samplers_follow_their_densities():
    rng = fixed_rng("eot/sampler-reference")
    for sample, density in ((eot.sample_mu, eot.density_mu), (eot.sample_nu, eot.density_nu)):
        draws = sample(rng, (20_000,))
        grid = np.linspace(draws.min() - 1, draws.max() + 1, 20_001)
        cdf = np.cumsum(density(grid)) * (grid[1] - grid[0])
        assert stats.kstest(draws, lambda t: np.interp(t, grid, cdf)).pvalue > 1e-4


def _backends_agree(device: str) -> float:
    # 200 iterations: beyond a few hundred, the (rho, C) = (0.3, 10) run amplifies rounding-level
    # differences between backends (sensitive dependence), while every seed stays finite.
    worst = 0.0
    for config in (eot.SgdConfig("proposed", 10.0, 10.0, 0.3), eot.SgdConfig("baseline", 0.1, 1e-3)):
        ours = eot.kernel_sgd(config, [0, 1, 2], 200, (200,))
        theirs = eot.kernel_sgd(config, [0, 1, 2], 200, (200,), backend="torch", device=device)
        worst = max(
            worst, float(np.max(np.abs(ours["snapshots"][200]["v_moments"] - theirs["snapshots"][200]["v_moments"])))
        )
        assert np.array_equal(ours["first_nonfinite_iteration"], theirs["first_nonfinite_iteration"])
    return worst


@pytest.mark.smoke
def test_numpy_and_torch_sgd_agree():
    assert _backends_agree("cpu") <= 1e-9


@pytest.mark.gpu
def test_cuda_sgd_agrees_with_numpy(options):
    assert _backends_agree(gpu_device(options)) <= 1e-9  # the CPU in a rehearsal (--gpu-rehearsal)
