"""Reference tests of the hidden-unit sampler and the Gibbs chain kernels: deterministic, so that any
error in the sampler's probabilities shows at any sample size.

`sample_hidden` draws h by inverse CDF from one uniform per chain. Fed uniforms just below and just
above every exact cut point of p(. | v) (SciPy's normal densities, no kernel code), it must return
the bin the exact CDF gives: an error larger than eps (relative) in any probability moves some probe
into the wrong bin. A sampler whose logits were scaled by 1.02 passes a 6000-chain band, not this.
"""

from __future__ import annotations

import numpy as np
import pytest
from numpy.testing import assert_array_equal

from workloads.boltzmann import (
    CLUSTER_MEANS,
    GIBBS_MEANS,
    GIBBS_VARIANCES,
    PI,
    UNEQUAL_VARIANCES,
    FixedUniforms,
    exact_posterior,
    sampler_cut_point_check,
)
from kernels import boltzmann as bm
from kernels.backend import to_backend

MIXTURES = {"gibbs": (GIBBS_MEANS, GIBBS_VARIANCES), "unequal variances": (CLUSTER_MEANS, UNEQUAL_VARIANCES)}


@pytest.mark.smoke
@pytest.mark.parametrize("backend", ["numpy", "torch"])
@pytest.mark.parametrize("mixture", sorted(MIXTURES))
def test_hidden_sampler_is_the_exact_inverse_cdf_float64(backend, mixture):
    means, variances = MIXTURES[mixture]
    check = sampler_cut_point_check(means, variances, PI, backend=backend, eps=1e-9, grid=25)
    assert check["draws"] > 500 and check["wrong_bin"] == 0, check


@pytest.mark.smoke
@pytest.mark.parametrize("backend", ["numpy", "torch"])
def test_hidden_sampler_is_the_inverse_cdf_to_float32_rounding(backend):
    check = sampler_cut_point_check(GIBBS_MEANS, GIBBS_VARIANCES, PI, backend=backend, dtype="float32", eps=1e-5)
    assert check["wrong_bin"] == 0, check


@pytest.mark.smoke
def test_cut_point_probes_see_a_two_percent_logit_error():
    """The probes' power, without the kernel: bins read off posteriors from logits scaled by 1.02
    differ from the exact bins on many probes (and a 1e-8 relative error in p moves some)."""
    v = np.stack(np.meshgrid(np.linspace(-3, 3, 15), np.linspace(-3, 3, 15), indexing="ij"), axis=-1).reshape(-1, 2)
    exact = exact_posterior(v, GIBBS_MEANS, GIBBS_VARIANCES, PI)
    logits = np.log(exact)
    scaled = np.exp(1.02 * logits - np.max(1.02 * logits, axis=1, keepdims=True))
    scaled /= scaled.sum(axis=1, keepdims=True)
    cuts = np.cumsum(exact, axis=1)[:, :-1]
    probes = np.concatenate([cuts * (1 - 1e-9), cuts * (1 + 1e-9)], axis=1)
    exact_bins = np.sum(cuts[:, None, :] < probes[:, :, None], axis=-1)
    scaled_bins = np.sum(np.cumsum(scaled, axis=1)[:, None, :-1] < probes[:, :, None], axis=-1)
    assert np.mean(exact_bins != scaled_bins) > 0.3


@pytest.mark.smoke
def test_fixed_uniforms_reach_the_sampler_unchanged():
    # With p = (1, 0, 0) up to rounding every uniform below 1 - 1e-12 lands in bin 0.
    v = np.tile(np.array([[0.0, 30.0]]), (4, 1))
    u = np.array([0.0, 0.25, 0.5, 0.999])
    labels = bm.sample_hidden(v, GIBBS_MEANS, GIBBS_VARIANCES, PI, FixedUniforms(u))
    assert_array_equal(labels, [0, 0, 0, 0])


@pytest.mark.smoke
@pytest.mark.parametrize("backend", ["numpy", "torch"])
def test_chunked_counts_are_sums_of_independent_chunks(backend):
    arrays = [to_backend(x, backend) for x in (GIBBS_MEANS, GIBBS_VARIANCES, PI)]
    key = "ref|gibbs-chunked"
    total = bm.gibbs_counts_chunked(2_500, 6, *arrays, key, chunk=1_000, backend=backend)
    assert total.dtype == np.int64 and total.shape == (7, 3)
    assert_array_equal(total.sum(axis=1), 2_500)
    assert_array_equal(total[0], [2_500, 0, 0])
    parts = [
        bm.gibbs_counts(size, 6, *arrays, bm.KeyedNormalUniform(f"{key}|chunk={c}", backend))
        for c, size in enumerate((1_000, 1_000, 500))
    ]
    assert_array_equal(total, sum(parts))
    one_chunk = bm.gibbs_counts_chunked(1_000, 6, *arrays, key, chunk=5_000, backend=backend)
    assert_array_equal(one_chunk, parts[0])
    occupancy = bm.gibbs_occupancy(1_000, 6, *arrays, bm.KeyedNormalUniform(f"{key}|chunk=0", backend))
    assert_array_equal(occupancy, parts[0] / 1_000)


class _Recording(bm.KeyedNormalUniform):
    """Keyed draws that log every request (which conditional asked, and for how many values)."""

    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.log: list[tuple[str, tuple[int, ...]]] = []

    def normal(self, shape):
        self.log.append(("normal", tuple(shape)))
        return super().normal(shape)

    def uniform(self, shape):
        self.log.append(("uniform", tuple(shape)))
        return super().uniform(shape)


@pytest.mark.smoke
def test_every_sweep_draws_v_given_h_then_h_given_v():
    draws = _Recording("ref|gibbs-order")
    bm.gibbs_counts(500, 4, GIBBS_MEANS, GIBBS_VARIANCES, PI, draws)
    assert draws.log == [("normal", (500, 2)), ("uniform", (500, 1))] * 4
