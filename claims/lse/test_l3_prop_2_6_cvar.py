"""L3: "The approximation family is shown to bound and connect to the CVaR functional, recovering CVaR
and LogSumExp as limiting cases (Proposition 2.6)."

Band: CVaR_rho(phi) <= lambda F_rho(phi/lambda) - lambda (ln rho - 1) <= CVaR_rho(phi) + lambda/rho.
"""
from __future__ import annotations

import math

import numpy as np
import pytest

from pytest_claims import statement_holds
from claims.lse.common import L3, MAIN_TIERS, ROUNDING, TIERS, instances, rate_in_rho, slope_fit
from kernels import safe_kl as sk
from fixtures import safe_kl as families
from kernels import seeding
from kernels.seeding import keyed_rng
from pytest_claims import current_store


def band_position(seed: int, tier: str):
    """(instances, lambda, CVaR, middle term) for a tier's instances, lambda log-uniform in [1e-3, 30]."""
    batch = instances(seed, tier, key="cvar")

    def compute(_):
        lam = np.exp(keyed_rng(f"{seed}|lse/cvar-lambda|{tier}").uniform(np.log(1e-3), np.log(30), len(batch)))
        cvar = sk.cvar_variational(batch.phi, batch.mu, batch.rho)
        middle = lam * sk.f_rho_value(batch.phi / lam[:, None], batch.mu, batch.rho) - lam * (np.log(batch.rho) - 1)
        return lam, cvar, middle

    lam, cvar, middle = current_store().get_or_compute("lse/cvar-band", dict(seed=seed, tier=tier), compute, code=[sk, families, seeding])
    return batch, lam, cvar, middle


def _band_figure(position):
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5, 3))
    ax.hist(position, bins=50, color="#0072b2")
    ax.set_xlabel("(middle - CVaR) / (lambda / rho): 0 = lower end, 1 = upper end of the band", fontsize=7)
    ax.set_ylabel("instances", fontsize=8)
    ax.set_title("position of lambda F_rho(phi/lambda) - lambda(ln rho - 1) in the CVaR band", fontsize=8)
    return fig


@pytest.mark.claim(L3, statement="band")
@pytest.mark.parametrize("tier", MAIN_TIERS)
def test_cvar_band(options, evidence, tier):
    batch, lam, cvar, middle = band_position(options.seed, tier)
    width = lam / batch.rho
    scale = np.maximum(1.0, np.abs(cvar)) + np.abs(middle)
    position = (middle - cvar) / width
    lower_ok = middle - cvar >= -ROUNDING * scale
    upper_ok = cvar + width - middle >= -ROUNDING * scale
    evidence.headline(instances=len(lam), lower_violations=int(np.sum(~lower_ok)), upper_violations=int(np.sum(~upper_ok)))
    evidence.record(position_min=float(position.min()), position_max=float(position.max()))
    if tier == "smoke":
        evidence.figure("position inside the CVaR band", _band_figure(position))
    statement_holds(lower_ok.all() and upper_ok.all(), f"band fails: {int(np.sum(~lower_ok))} below, {int(np.sum(~upper_ok))} above")


@pytest.mark.claim(L3, statement="band-constant-tightness")
@pytest.mark.parametrize("tier", TIERS)
def test_band_constant_tightness(options, evidence, tier):
    batch, lam, cvar, middle = band_position(options.seed, tier)
    needed = (middle - cvar) / (lam / batch.rho)  # the c each instance needs
    c_min = float(needed.max())
    fails_099 = int(np.sum(needed > 0.99 * c_min))
    fails_half = int(np.sum(needed > 0.5))
    evidence.headline(smallest_constant_that_holds=c_min, violations_at_half=fails_half)
    evidence.record(violations_at_0_99_c_min=fails_099, printed_constant=1.0)
    assert fails_099 >= 1 and fails_half >= 1, "tighter constants must fail on some instance"
    statement_holds(c_min <= 1.0, f"the printed constant 1 is not enough: c_min = {c_min}")


@pytest.mark.claim(L3, statement="limit-lambda-to-0")
@pytest.mark.parametrize("tier", TIERS)
def test_limit_lambda_to_zero_gives_cvar(options, evidence, tier):
    batch = instances(options.seed, tier, key="cvar").subset(np.arange(60 if tier == "smoke" else 400))
    lams = np.geomspace(1e-3, 1e-1, 7)
    count = len(batch)
    phi = np.repeat(batch.phi, len(lams), axis=0) / np.tile(lams, count)[:, None]
    mu, rho = np.repeat(batch.mu, len(lams), axis=0), np.repeat(batch.rho, len(lams))
    middle = (np.tile(lams, count) * (sk.f_rho_value(phi, mu, rho) - (np.log(rho) - 1))).reshape(count, len(lams))
    error = middle - sk.cvar_variational(batch.phi, batch.mu, batch.rho)[:, None]
    keep = np.all(error > 1e-13 * (1 + np.abs(middle)), axis=1)  # fit where the error is above rounding
    slope, _ = slope_fit(np.log(np.broadcast_to(lams, error.shape)[keep]), np.log(error[keep]))
    evidence.headline(max_error_at_smallest_lambda=float(np.abs(error[:, 0]).max()), median_rate=float(np.median(slope)), min_rate=float(slope.min()))
    evidence.record(instances=count, fitted=int(keep.sum()), lambdas=lams)
    statement_holds(np.all(error >= -ROUNDING * (1 + np.abs(middle))) and slope.min() >= 0.9, f"rate {slope.min():.3f} < 0.9 or error below zero")


@pytest.mark.claim(L3, statement="limit-rho-to-0")
@pytest.mark.parametrize("tier", TIERS)
def test_limit_rho_to_zero_gives_logsumexp(options, evidence, tier):
    batch = instances(options.seed, tier, key="cvar").subset(np.arange(60 if tier == "smoke" else 400))
    lam = 0.5
    count = len(batch)
    # lambda F_rho(phi/lambda) -> lambda F(phi/lambda): the factor lambda leaves the exponent unchanged.
    slope = rate_in_rho(batch.phi / lam, batch.mu)["slope"]
    mean = float(slope.mean())
    evidence.headline(mean_exponent=mean, exponent_standard_error=float(slope.std(ddof=1) / math.sqrt(count)))
    evidence.record(lam=lam, instances=count)
    statement_holds(abs(mean - 1) < 0.02, f"fitted exponent {mean:.4f}")


@pytest.mark.claim(L3, statement="cvar-two-ways")
@pytest.mark.parametrize("tier", TIERS)
def test_cvar_variational_equals_tail_average(options, evidence, tier):
    batch = instances(options.seed, tier, key="cvar")
    a = sk.cvar_variational(batch.phi, batch.mu, batch.rho)
    b = sk.cvar_tail_average(batch.phi, batch.mu, batch.rho)
    scale = np.max(np.abs(np.where(batch.mu > 0, batch.phi, 0)), axis=1) + 1
    worst = float(np.max(np.abs(a - b) / scale))
    evidence.headline(max_scaled_difference=worst, instances=len(a))
    statement_holds(worst <= 1e-14, f"CVaR two ways differ by {worst:.3g}")
