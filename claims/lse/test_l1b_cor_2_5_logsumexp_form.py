"""L1b: Corollary 2.5 as the logbook quotes it: "LogSumExp - rho <= approx <= LogSumExp".

Read with mu the counting measure (LogSumExp(x) = ln sum_i e^(x_i) is then F itself), the inequality
survives an adversarial search that maximises gap/rho; read with mu the uniform probability measure
it fails, and that reading's counterexample is pinned.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import find, given, settings, target

from pytest_claims import statement_holds
from claims.lse.common import L1b, ROUNDING, TIERS, instances, values
from fixtures.safe_kl import adversarial_instances
from kernels import safe_kl as sk


def _gap_over_rho(instance) -> float:
    phi, mu, rho = instance
    return float((sk.logsumexp_weighted(phi, mu) - sk.f_rho_value(phi, mu, rho))[0] / rho[0])


@pytest.mark.claim(L1b, statement="as-quoted")
@pytest.mark.parametrize("examples", [pytest.param(600, marks=pytest.mark.smoke), pytest.param(6000, marks=pytest.mark.full)])
def test_as_quoted_counting_measure(evidence, examples):
    worst = {"gap_over_rho": -np.inf, "instance": None}

    @settings(max_examples=examples)
    @given(adversarial_instances(weights="counting"))
    def search(instance):
        ratio = _gap_over_rho(instance)
        target(ratio)
        if ratio > worst["gap_over_rho"]:
            worst.update(gap_over_rho=ratio, instance={"phi": instance[0][0].tolist(), "rho": float(instance[2][0])})
        statement_holds(-ROUNDING <= ratio <= 1.0, f"LogSumExp - rho <= F_rho <= LogSumExp fails: gap/rho = {ratio} at {instance}")

    search()
    evidence.headline(largest_gap_over_rho=worst["gap_over_rho"], examples=examples)
    evidence.record(largest_at=worst["instance"], reading="mu = counting measure; LogSumExp(x) = ln sum_i e^(x_i) = F")


@pytest.mark.claim(L1b, statement="random-families")
@pytest.mark.parametrize("tier", TIERS)
def test_random_families_counting_measure(options, evidence, tier):
    batch = instances(options.seed, tier, weights="counting")
    f, f_rho = values(options.seed, tier, weights="counting")
    ratio = (f - f_rho) / batch.rho
    worst = {fam: float(ratio[batch.family == fam].max()) for fam in sorted(set(batch.family.tolist()))}
    evidence.headline(instances=len(f), worst_gap_over_rho=float(ratio.max()), violations=int(np.sum(ratio > 1)))
    evidence.record(worst_by_family=worst, logbook_worst=0.826)
    statement_holds(np.all(ratio <= 1) and np.all(ratio >= -ROUNDING), f"{int(np.sum(ratio > 1))} violations")


# Uniform probability weights, n = 2, phi = (3, 0), rho = 0.5: gap/rho = 1.29 > 1.
PINNED = (np.array([[3.0, 0.0]]), np.array([[0.5, 0.5]]), np.array([0.5]))


@pytest.mark.claim(L1b, statement="probability-measure-reading")
@pytest.mark.parametrize("tier", TIERS)
def test_probability_measure_reading(options, evidence, tier):
    found = find(adversarial_instances(weights="uniform"), lambda inst: _gap_over_rho(inst) > 1.0, settings=settings(max_examples=2000))
    batch = instances(options.seed, tier, weights="uniform")
    f, f_rho = sk.logsumexp_weighted(batch.phi, batch.mu), sk.f_rho_value(batch.phi, batch.mu, batch.rho)
    ratio = (f - f_rho) / batch.rho
    atoms = np.sum(batch.mu > 0, axis=1)
    evidence.headline(pinned_gap_over_rho=_gap_over_rho(PINNED), random_violations=int(np.sum(ratio > 1)), instances=len(f))
    evidence.record(
        shrunk_counterexample={"phi": found[0][0].tolist(), "n": int(found[0].shape[1]), "rho": float(found[2][0]), "gap_over_rho": _gap_over_rho(found)},
        violations_with_rho_n_le_1=int(np.sum((ratio > 1) & (batch.rho * atoms <= 1))),
        violations_with_rho_n_gt_1=int(np.sum((ratio > 1) & (batch.rho * atoms > 1))),
        worst_gap_over_rho=float(ratio.max()),
        depends_on="the spread of phi: the density cap binds once the Gibbs measure puts more than 1/rho times mu's weight on an atom",
    )
    statement_holds(_gap_over_rho(PINNED) <= 1.0, f"uniform probability weights: gap/rho = {_gap_over_rho(PINNED):.4f} > 1 at n=2, phi=(3, 0), rho=0.5")
