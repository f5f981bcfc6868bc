"""Reference tests of the KL-DRO kernel (claim L5): the halved-loss convention of the batched
closed-form SGD against per-run torch.optim.SGD(nesterov=True) with autograd on the same minibatches
(the released convention's update is the claim's statement update-equations, which runs the same
comparison), the objective against SciPy's logsumexp, OLS against numpy.linalg.lstsq, the released
loader's permutations against PyTorch's own DataLoader, and the NumPy and torch backends against each
other."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from scipy.special import logsumexp

from workloads.data import dataset_or_skip
from workloads.kl_dro import compare_with_torch_optim
from suite_plugin.options import gpu_device
from kernels import kl_dro
from kernels.datasets.california import load_california
from kernels.seeding import fixed_rng

LOGBOOK_L0 = 44.0181  # the logbook's L(theta_0), printed to 4 decimals


@pytest.fixture(scope="module")
def problem(options) -> kl_dro.Problem:
    data = dataset_or_skip(load_california, options.data_dir)
    return kl_dro.problem_from(data.data, data.target)


CONFIGS = [
    kl_dro.RunConfig(1e-6, None),
    kl_dro.RunConfig(1e-5, None),
    kl_dro.RunConfig(1e-6, 1e-3),
    kl_dro.RunConfig(1e-5, 0.1),
]


@pytest.mark.smoke
def test_halved_loss_matches_torch_optim_per_run(problem):
    """The loss-scaling convention (l = r^2 / 2, used by the released-configurations evidence) against
    per-run autograd and torch.optim, beside a unit-scale run in the same program (one scale per run).
    The unit-scale update itself is the claim's update-equations statement."""
    configs = [
        kl_dro.RunConfig(1e-5, None, 0.5),
        kl_dro.RunConfig(1e-5, 0.1, 0.5),
        kl_dro.RunConfig(1e-6, 1e-3, 0.5),
        kl_dro.RunConfig(1e-5, None),
    ]
    streams = kl_dro.KeyedStreams([f"kl-dro-reference|halved|{s}" for s in range(2)])
    got = compare_with_torch_optim(problem, 100, configs, streams, 250)  # across the first epoch end (207 batches)
    assert np.min(got["theta_moved"]) > 1e-6 and np.min(got["alpha_moved"][:, 1:3]) > 1e-6, (
        "the runs must move for the comparison to mean anything"
    )
    assert np.max(got["theta_error"]) <= 1e-10 and np.max(got["alpha_error"]) <= 1e-10, (
        got["theta_error"],
        got["alpha_error"],
    )


@pytest.mark.smoke
def test_objective_matches_scipy_logsumexp(problem):
    rng = fixed_rng("kl-dro-reference|objective")
    # near theta_0, and far out where exp(l_i) overflows float64 (l_i up to ~1e6)
    thetas = np.concatenate(
        [problem.theta0 + 0.1 * rng.standard_normal((4, 9)), problem.theta0 + 30.0 * rng.standard_normal((4, 9))]
    )
    for lam in (1.0, 0.3, 5.0):
        losses = (thetas @ problem.X.T - problem.y) ** 2
        expected = lam * (logsumexp(losses / lam, axis=1) - math.log(problem.n))
        assert np.max(losses) / lam > 800  # the overflow regime is exercised
        np.testing.assert_allclose(kl_dro.objective(thetas, problem.X, problem.y, lam), expected, rtol=1e-13)
        # a loss scale per run (the halved convention l = r^2 / 2 beside l = r^2)
        scales = np.array([0.5, 1.0] * 4)
        halved = lam * (logsumexp(scales[:, None] * losses / lam, axis=1) - math.log(problem.n))
        np.testing.assert_allclose(kl_dro.objective(thetas, problem.X, problem.y, lam, scales), halved, rtol=1e-13)
    assert np.isnan(kl_dro.objective(np.full((1, 9), np.nan), problem.X, problem.y))[0]


@pytest.mark.smoke
@pytest.mark.parametrize("backend", ["numpy", "torch"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_objective_does_not_depend_on_the_rest_of_its_batch(problem, backend, dtype):
    """A run's L is a function of its theta alone, bit for bit: the same theta alone, in a batch of
    37, at each place of a batch of 8, and among repeats. Through a matmul a float32 value moved by
    1.5e-5 with the row (44.0180626 vs 44.0180779 at theta_0), enough to flip L_final <= L_0."""
    rng = fixed_rng("kl-dro-reference|batch-invariance")
    thetas = (problem.theta0 + 0.1 * rng.standard_normal((37, 9))).astype(dtype)
    thetas[5] = problem.theta0
    X, y = problem.X.astype(dtype), problem.y.astype(dtype)
    if backend == "torch":
        thetas, X, y = torch.from_numpy(thetas), torch.from_numpy(X), torch.from_numpy(y)
    as_numpy = lambda a: a.numpy() if backend == "torch" else a  # noqa: E731
    together = as_numpy(kl_dro.objective(thetas, X, y, problem.lam))
    alone = np.concatenate([as_numpy(kl_dro.objective(thetas[k : k + 1], X, y, problem.lam)) for k in range(37)])
    differing = np.flatnonzero(together != alone)
    assert differing.size == 0, (
        f"rows {differing.tolist()} change with the batch: {together[differing]} vs {alone[differing]}"
    )
    for place in range(8):
        batch = thetas[[0] * 8]
        batch[place] = thetas[5]
        got = as_numpy(kl_dro.objective(batch, X, y, problem.lam))
        assert got[place] == alone[5], f"theta_0 at place {place} of 8: {got[place]!r} against {alone[5]!r} alone"


@pytest.mark.smoke
def test_least_squares_matches_lstsq(problem):
    expected = np.linalg.lstsq(problem.X, problem.y, rcond=None)[0]
    np.testing.assert_allclose(problem.theta0, expected, rtol=1e-11, atol=1e-12)
    # standardised: the intercept is the target mean, the feature columns have mean 0 and std 1
    np.testing.assert_allclose(problem.X[:, :8].mean(axis=0), 0, atol=1e-10)  # longitude ~ -120 before centring
    np.testing.assert_allclose(problem.X[:, :8].std(axis=0), 1, rtol=1e-12)
    np.testing.assert_allclose(problem.theta0[8], problem.y.mean(), rtol=1e-12)


@pytest.mark.smoke
def test_objective_at_least_squares_start_is_the_logbooks(problem):
    value = float(kl_dro.objective(problem.theta0[None], problem.X, problem.y)[0])
    assert round(value, 4) == LOGBOOK_L0, f"L(theta_0) = {value:.8f}"


@pytest.mark.smoke
def test_released_streams_are_pytorchs_dataloader_permutations():
    from torch.utils.data import DataLoader, TensorDataset

    n, batch, epochs = 2000, 100, 3
    for seed in (0, 7):
        with torch.random.fork_rng(devices=[]):  # the released code's global seeding, kept local here
            torch.manual_seed(seed)
            loader = DataLoader(TensorDataset(torch.arange(n)), batch_size=batch, shuffle=True)
            torch.nn.Linear(8, 1)
            theirs = [torch.cat([b[0] for b in loader]).numpy() for _ in range(epochs)]
        ours = kl_dro.ReleasedStreams([seed], epochs=epochs)
        for e in range(epochs):
            np.testing.assert_array_equal(ours.permutations(e, n)[0], theirs[e])


@pytest.mark.smoke
def test_released_start_is_sklearns_least_squares(problem):
    from sklearn.linear_model import LinearRegression

    fit = LinearRegression(fit_intercept=True).fit(problem.X[:, :8], problem.y)
    theirs = np.append(fit.coef_, fit.intercept_)
    np.testing.assert_allclose(problem.theta0, theirs, rtol=1e-11, atol=1e-12)
    assert np.array_equal(problem.theta0.astype(np.float32), theirs.astype(np.float32))


def _backends_agree(problem: kl_dro.Problem, device: str) -> float:
    streams = kl_dro.KeyedStreams([f"kl-dro-reference|backends|{s}" for s in range(3)])
    configs = CONFIGS + [kl_dro.RunConfig(1e-5, 0.1, 0.5)]  # a halved-loss run beside them: one loss scale per run
    ours = kl_dro.sgd_runs(problem, 100, configs, streams, 2, record_every=1)
    theirs = kl_dro.sgd_runs(problem, 100, configs, streams, 2, record_every=1, backend="torch", device=device)
    np.testing.assert_allclose(theirs["objective"], ours["objective"], rtol=1e-11)
    return float(np.max(np.abs(theirs["theta"] - ours["theta"])))


@pytest.mark.smoke
def test_numpy_and_torch_backends_agree(problem):
    assert _backends_agree(problem, "cpu") <= 1e-10


@pytest.mark.gpu
def test_cuda_backend_agrees_with_numpy(problem, options):
    assert _backends_agree(problem, gpu_device(options)) <= 1e-10  # the CPU in a rehearsal (--gpu-rehearsal)


class _Interrupted(Exception):
    pass


class _MemoryCheckpoint:
    """pytest_claims.store.result_store.Checkpoint's interface, in memory; can interrupt the run right after a save."""

    def __init__(self, every: int, interrupt: bool) -> None:
        self.every, self.interrupt, self.state = every, interrupt, None

    def due(self, step: int) -> bool:
        return step > 0 and step % self.every == 0

    def load(self):
        import copy

        return copy.deepcopy(self.state)

    def save(self, state) -> None:
        import copy

        self.state = copy.deepcopy(state)
        if self.interrupt:
            raise _Interrupted


@pytest.mark.smoke
def test_resumed_run_equals_uninterrupted_run(problem):
    streams = kl_dro.KeyedStreams([f"kl-dro-reference|resume|{s}" for s in range(2)])
    # two that diverge: one leaves the program before the checkpoint (epoch 3), one after it (epoch 4)
    configs = CONFIGS + [kl_dro.RunConfig(1.0, None), kl_dro.RunConfig(0.1, 1e-4)]
    whole = kl_dro.sgd_runs(problem, 1000, configs, streams, 5, record_every=1)
    checkpoint = _MemoryCheckpoint(every=3, interrupt=True)
    with pytest.raises(_Interrupted):
        kl_dro.sgd_runs(problem, 1000, configs, streams, 5, record_every=1, checkpoint=checkpoint)
    assert checkpoint.state["step"] == 3 and len(checkpoint.state["active"]) == len(configs) - 1
    checkpoint.interrupt = False
    resumed = kl_dro.sgd_runs(problem, 1000, configs, streams, 5, record_every=1, checkpoint=checkpoint)
    np.testing.assert_array_equal(whole["first_nonfinite_epoch"][:, -2:], [[3, 4], [3, 4]])
    for name in ("theta", "alpha", "objective", "finite", "first_nonfinite_epoch", "peak_loss"):
        np.testing.assert_array_equal(resumed[name], whole[name], err_msg=name)
