"""B1: "Fixing v, the joint energy gives p(h = e_k given v) = softmax(theta(v)), the GMM responsibilities." """

from __future__ import annotations

import numpy as np
import pytest

from pytest_claims import statement_allclose, statement_ge
from claims.ids import B1
from claims.boltzmann.common import TIERS
from workloads.boltzmann import CLUSTER_MEANS, CLUSTER_VARIANCES, PI, UNEQUAL_VARIANCES, clustering_data
from kernels import boltzmann as bm
from kernels.backend import to_backend, to_numpy


def _responsibilities(options, v, means, variances, dtype="float64"):
    arrays = [
        to_backend(np.asarray(x, dtype=dtype), options.backend, options.device) for x in (v, means, variances, PI)
    ]
    return to_numpy(bm.responsibilities(*arrays))


@pytest.mark.claim(B1, statement="rows-sum-to-one")
@pytest.mark.parametrize("tier", TIERS)
def test_rows_sum_to_one(options, evidence, tier):
    v, _ = clustering_data(options.seed, tier)
    sums = np.stack(
        [
            _responsibilities(options, v, CLUSTER_MEANS, variances).sum(axis=1)
            for variances in (CLUSTER_VARIANCES, UNEQUAL_VARIANCES)
        ]
    )
    evidence.headline(max_row_sum_error=float(np.max(np.abs(sums - 1))))
    evidence.record(points=len(v), dtype="float64")
    statement_allclose(sums, 1.0, rtol=0, atol=1e-12, what="row sums (shared, unequal variances) by point")


def _density_responsibilities(v, means, variances):
    joint = PI * bm.component_densities(v, means, variances)
    return joint / joint.sum(axis=1, keepdims=True)


@pytest.mark.claim(B1, statement="softmax-equals-responsibilities")
@pytest.mark.parametrize("dtype, tolerance", [("float64", 1e-12), ("float32", 1e-5)])
@pytest.mark.parametrize("tier", TIERS)
def test_softmax_of_energies_equals_density_responsibilities(options, evidence, tier, dtype, tolerance):
    v, _ = clustering_data(options.seed, tier)
    errors, mutant_errors, pairs = {}, {}, {}
    for name, variances in (("shared variances", CLUSTER_VARIANCES), ("unequal variances", UNEQUAL_VARIANCES)):
        reference = _density_responsibilities(v, CLUSTER_MEANS, variances)  # float64, from densities
        got = _responsibilities(options, v, CLUSTER_MEANS, variances, dtype)
        errors[name] = float(np.max(np.abs(got - reference)))
        pairs[name] = (got, reference)
        mutant = bm.softmax(bm.cluster_logits(v, CLUSTER_MEANS, variances, PI, log_det=False))
        mutant_errors[name] = float(np.max(np.abs(mutant - reference)))
    evidence.headline(**{f"max_error {dtype}": max(errors.values())})
    evidence.record(errors=errors, tolerance=tolerance, mutant_without_log_det=mutant_errors)
    # The check has power: without the log-determinant the unequal-variance case is far off.
    assert mutant_errors["unequal variances"] > 1e-2 and mutant_errors["shared variances"] < 1e-12, (
        "reference check: dropping the log-determinant must move the unequal-variance responsibilities by over 1e-2 "
        f"and leave the shared-variance ones within 1e-12; got {mutant_errors}"
    )
    for name, (got, reference) in pairs.items():
        statement_allclose(
            got, reference, rtol=0, atol=tolerance, what=f"softmax(-E) vs density responsibilities, {name}"
        )


@pytest.mark.claim(B1, statement="hard-accuracy")
@pytest.mark.parametrize("tier", TIERS)
def test_hard_assignment_accuracy(options, evidence, tier):
    v, labels = clustering_data(options.seed, tier)
    hard = np.argmax(_responsibilities(options, v, CLUSTER_MEANS, CLUSTER_VARIANCES), axis=1)
    accuracy = float(np.mean(hard == labels))
    evidence.headline(accuracy=accuracy)
    evidence.record(
        points=len(v),
        soft_boundary_fraction=float(
            np.mean(_responsibilities(options, v, CLUSTER_MEANS, CLUSTER_VARIANCES).max(axis=1) < 0.92)
        ),
    )
    evidence.figure("soft assignments and hard labels", _assignment_figure(v[:3000], hard[:3000]))
    statement_ge(accuracy, 0.99, strict=True, what="hard-assignment accuracy")


def _assignment_figure(v, hard):
    import matplotlib.pyplot as plt

    xs, ys = np.meshgrid(np.linspace(-5, 5, 160), np.linspace(-4.5, 5.5, 160))
    grid = np.stack([xs.ravel(), ys.ravel()], axis=1)
    field = bm.responsibilities(grid, CLUSTER_MEANS, CLUSTER_VARIANCES, PI).reshape(160, 160, 3)
    colours = np.array([[0.84, 0.37, 0.0], [0.0, 0.45, 0.70], [0.0, 0.62, 0.45]])
    fig, ax = plt.subplots(figsize=(4.5, 4.5))
    ax.imshow(field @ colours * 0.45 + 0.55, extent=(-5, 5, -4.5, 5.5), origin="lower")
    ax.scatter(v[:, 0], v[:, 1], c=colours[hard], s=2)
    ax.set_title("p(k | v) field and hard labels", fontsize=8)
    return fig
