"""Reference tests of the UOT-DRO kernel (claim L6): the batched program against R separate nn.Module
models trained with torch.optim.SGD, the inner maximisation's ascent, objectives (21) and (22) at
hand-checkable points, the float32 overflow threshold, the sample stream and checkpoint / resume.

Synthetic images (keyed Gaussian noise with random labels) keep these tests independent of the MNIST
files; the statement tests use the real data.
"""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from fixtures.uot_dro import cpu_threads
from kernels import uot_dro
from kernels.seeding import key_seed

SEED = 4242  # the reference tests' own master seed


def _images(count: int, key: str) -> tuple[torch.Tensor, torch.Tensor]:
    generator = torch.Generator().manual_seed(key_seed(f"uot-dro-reference|{key}"))
    x = torch.randn(count, 1, 28, 28, generator=generator)
    y = torch.randint(0, 10, (count,), generator=generator)
    return x, y


def _relative(update: dict, reference: dict) -> float:
    num = sum(float((update[k].double() - reference[k].double()).pow(2).sum()) for k in reference)
    den = sum(float(reference[k].double().pow(2).sum()) for k in reference)
    return math.sqrt(num / max(den, 1e-300))


def _single(run: uot_dro.Run, dtype=torch.float32) -> uot_dro.SingleRun:
    single = uot_dro.SingleRun(run, SEED)
    if dtype != torch.float32:
        single.model.to(dtype)
        single.alpha = torch.nn.Parameter(single.alpha.detach().to(dtype))
        params = list(single.model.parameters()) + ([single.alpha] if run.method == "proposed" else [])
        single.optimizer = torch.optim.SGD(params, lr=run.lr)
    return single


def _load(single: uot_dro.SingleRun, params: dict, alpha: torch.Tensor) -> dict:
    with torch.no_grad():
        for name, p in single.model.named_parameters():
            p.copy_(params[name].to(p.dtype))
        single.alpha.copy_(alpha.reshape(1).to(single.alpha.dtype))
    return {**{k: v.detach().clone().double() for k, v in single.model.named_parameters()}, "alpha": single.alpha.detach().clone().double()}


def _state(single: uot_dro.SingleRun) -> dict:
    return {**{k: v.detach().clone().double() for k, v in single.model.named_parameters()}, "alpha": single.alpha.detach().clone().double()}


@pytest.mark.smoke
def test_batched_program_equals_single_runs_with_torch_sgd():
    """Every step, from the batched program's current state: its update of each run equals the update
    of that run's own nn.Module trained by torch.optim.SGD on the same image, to float32 rounding (its
    error against the float64 update is of the size of the loop's own); overflow steps and the frozen
    parameters are the same. One run per objective, plus a baseline that overflows."""
    with cpu_threads("cpu"):  # one thread, as the statement runs (see fixtures/uot_dro.py)
        _compare_with_single_runs()


def _compare_with_single_runs() -> None:
    runs = [uot_dro.Run("baseline", 1e-3, 0), uot_dro.Run("proposed", 1e-3, 1), uot_dro.Run("erm", 1e-2, 2), uot_dro.Run("baseline", 1e-1, 3)]
    steps, yardstick_every = 30, 3
    x_train, y_train = _images(500, "train")
    program = uot_dro.Program(runs, SEED, keep_frozen=True)
    singles = {i: _single(r) for i, r in enumerate(program.runs)}
    doubles = {i: _single(r, torch.float64) for i, r in enumerate(program.runs)}
    streams = {r.seed: uot_dro.sample_indices(SEED, r.seed, 0, steps, len(y_train)) for r in program.runs}
    errors = {"batched": [], "loop": []}
    for t in range(steps):
        rows = program.rows.copy()
        before = {}
        for row, i in enumerate(rows):
            params = {k: v[row] for k, v in program.params.items()}
            before[i] = _load(singles[i], params, program.alpha[row])
            if t % yardstick_every == 0:
                _load(doubles[i], params, program.alpha[row])
        chosen = torch.as_tensor([streams[program.runs[i].seed][t] for i in rows])
        program.step(x_train[chosen].unsqueeze(1), y_train[chosen].unsqueeze(1))
        for i in rows:
            j = int(streams[program.runs[i].seed][t])
            singles[i].step(x_train[j : j + 1], y_train[j : j + 1])
            assert (singles[i].overflow_step > 0) == (program.overflow_step[i] > 0), f"{program.runs[i].name}: overflow at step {t + 1} in one route only"
            if program.overflow_step[i] > 0:
                continue
            if t % yardstick_every == 0:
                doubles[i].step(x_train[j : j + 1].double(), y_train[j : j + 1])
                reference = {k: v - before[i][k] for k, v in _state(doubles[i]).items()}
                after = {**{k: v.double() for k, v in program.parameters_of(i).items()}, "alpha": program.alpha[list(program.rows).index(i)].double().reshape(1)}
                loop = {k: v - before[i][k] for k, v in _state(singles[i]).items()}
                errors["batched"].append(_relative({k: after[k] - before[i][k] for k in reference}, reference))
                errors["loop"].append(_relative(loop, reference))
    for i, single in singles.items():
        assert program.overflow_step[i] == (single.overflow_step if single.overflow_step > 0 else -1), f"{program.runs[i].name}: overflow steps differ"
    overflowed = [i for i in singles if program.overflow_step[i] > 0]
    assert overflowed, "the run at eta = 1e-1 should overflow within the test's steps"
    for i in overflowed:  # frozen at the last finite parameters, in both routes
        frozen, last = program.parameters_of(i), singles[i].parameters()
        assert all(torch.equal(frozen[k], last[k]) for k in last)
    batched, loop = np.array(errors["batched"]), np.array(errors["loop"])
    # Both are float32 computations of the same update in different operation orders; a batching error
    # (another run's parameters, image or stepsize, a sign) is an O(1) relative error.
    assert np.quantile(batched, 0.5) <= 10 * np.quantile(loop, 0.5) + 1e-7, (np.quantile(batched, 0.5), np.quantile(loop, 0.5))
    assert np.quantile(batched, 0.9) <= 10 * np.quantile(loop, 0.9) + 1e-7, (np.quantile(batched, 0.9), np.quantile(loop, 0.9))
    assert batched.max() < 1e-2, batched.max()


@pytest.mark.smoke
def test_erm_trajectory_equals_single_run_over_200_steps():
    """Without the inner maximisation the dynamics are smooth, so whole trajectories agree: ERM trained
    200 steps in the batched program and by torch.optim.SGD end at the same parameters to 1e-5."""
    x_train, y_train = _images(500, "erm")
    run = uot_dro.Run("erm", 1e-2, 5)
    program, single = uot_dro.Program([run], SEED), uot_dro.SingleRun(run, SEED)
    stream = uot_dro.sample_indices(SEED, run.seed, 0, 200, len(y_train))
    for j in stream:
        program.step(x_train[[j]].unsqueeze(1), y_train[[j]].unsqueeze(1))
        single.step(x_train[j : j + 1], y_train[j : j + 1])
    start = uot_dro.init_parameters(SEED, run.seed)
    ours, theirs = program.parameters_of(0), single.parameters()
    moved = max(float((theirs[k] - start[k]).abs().max()) for k in theirs)
    assert moved > 1e-2  # the run went somewhere
    assert max(float((ours[k] - theirs[k]).abs().max()) for k in theirs) <= 1e-5 * max(1.0, moved)


def _objective64(params: dict, z: torch.Tensor, x: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """l(theta; z) - lambda ||z - x||^2 per image and its gradient in z, in float64."""
    p64 = {k: v.double() for k, v in params.items()}
    z64 = z.double().requires_grad_(True)
    value = uot_dro.inner_objective(p64, z64, x.double(), y)
    (grad,) = torch.autograd.grad(value.sum(), z64)
    return value.detach(), grad


@pytest.mark.smoke
@pytest.mark.parametrize("sharpness", [1.0, 30.0], ids=["initial", "confident"])
def test_inner_maximisation_increases_its_objective_at_every_step(sharpness):
    """Each of the 5 Nesterov steps raises l(theta; z) - lambda ||z - x||^2 (evaluated in float64 at the
    float32 iterates), up to what rounding z to float32 can cost: half a float32 spacing per pixel times
    |gradient|. 'confident' scales the last layer so the network is sharp, as a trained one is."""
    params = {k: v.unsqueeze(0) for k, v in uot_dro.init_parameters(SEED, 7).items()}
    params["fc2.weight"] = params["fc2.weight"] * sharpness
    x, y = _images(16, f"inner-{sharpness}")
    x, y = x.unsqueeze(0), y.unsqueeze(0)
    _, trace = uot_dro.inner_maximise(params, x, y, trace=True)
    assert trace.shape[0] == uot_dro.INNER_STEPS + 1
    # the iterates themselves, replayed, to evaluate in float64
    lr, m = uot_dro.INNER_LR / uot_dro.LAMBDA, uot_dro.INNER_MOMENTUM
    u, v = x.clone(), torch.zeros_like(x)
    iterates = [u]
    for _ in range(uot_dro.INNER_STEPS):
        z = (u + m * v).requires_grad_(True)
        (g,) = torch.autograd.grad(uot_dro.inner_objective(params, z, x, y).sum(), z)
        v = m * v + lr * g
        u = (u + v).detach()
        iterates.append(u)
    assert torch.equal(iterates[-1], uot_dro.inner_maximise(params, x, y))  # the kernel's iterate
    values, slack = [], []
    for z in iterates:
        value, grad = _objective64(params, z, x, y)
        spacing = torch.abs(torch.nextafter(z, torch.full_like(z, math.inf)) - z).double()
        values.append(value)
        slack.append((grad.abs() * spacing).sum(dim=(-3, -2, -1)))
    for k in range(uot_dro.INNER_STEPS):
        increase = values[k + 1] - values[k]
        assert torch.all(increase >= -(slack[k] + slack[k + 1])), f"step {k + 1}: decrease {float(-increase.min()):.3g}"
    assert torch.all(values[-1] > values[0])  # and the five steps make progress on every image


@pytest.mark.smoke
def test_objectives_at_hand_checkable_points():
    """(21) and (22) with lambda = beta = 1, rho = 0.1, in float64: at lhat = alpha = 0, (22) is
    10 ln(1.1); at lhat = ln 9, alpha = 0, (22) is 10 ln(1.9), its lhat-derivative 10 * 0.9 / 1.9 and its
    alpha-derivative 1 - 10 * 0.9 / 1.9; (21) at lhat = ln 9 is 9 with derivative 9."""
    assert (uot_dro.LAMBDA, uot_dro.BETA, uot_dro.RHO) == (1.0, 1.0, 0.1)
    zero = torch.zeros((), dtype=torch.float64)
    assert abs(float(uot_dro.proposed_loss(zero, zero)) - 10 * math.log(1.1)) <= 1e-14
    lhat = torch.tensor(math.log(9.0), dtype=torch.float64, requires_grad=True)
    alpha = torch.zeros((), dtype=torch.float64, requires_grad=True)
    value = uot_dro.proposed_loss(lhat, alpha)
    d_lhat, d_alpha = torch.autograd.grad(value, (lhat, alpha))
    assert abs(float(value.detach()) - 10 * math.log(1.9)) <= 1e-14
    assert abs(float(d_lhat) - 9 / 1.9) <= 1e-14 and abs(float(d_alpha) - (1 - 9 / 1.9)) <= 1e-14
    base = uot_dro.baseline_loss(lhat)
    (d_base,) = torch.autograd.grad(base, lhat)
    assert abs(float(base.detach()) - 9.0) <= 1e-13 and abs(float(d_base) - 9.0) <= 1e-13
    # large arguments: (22) grows linearly (no overflow) where (21) is infinite in float32
    big = torch.tensor([100.0, 1e4], dtype=torch.float32)
    assert torch.all(torch.isfinite(uot_dro.proposed_loss(big, torch.zeros(2))))
    assert torch.all(torch.isinf(uot_dro.baseline_loss(big)))
    expected = 10 * (big.double() + math.log(0.1))  # softplus(t) = t to rounding for t >> 1
    assert torch.allclose(uot_dro.proposed_loss(big, torch.zeros(2)).double(), expected, rtol=1e-6)


@pytest.mark.smoke
def test_float32_overflow_threshold_by_bisection():
    """The threshold is computed (bisection on torch.exp), and it is ln(float32 max) = 88.7228...:
    exp is finite at the float32 number just below it and infinite at it."""
    z32 = uot_dro.overflow_threshold(torch.float32)
    assert abs(z32 - math.log(float(torch.finfo(torch.float32).max))) < 1e-5
    at = torch.tensor(z32, dtype=torch.float32)
    below = torch.nextafter(at, torch.tensor(0.0))
    assert torch.isinf(torch.exp(at)) and torch.isfinite(torch.exp(below))
    assert abs(uot_dro.overflow_threshold(torch.float64) - math.log(float(torch.finfo(torch.float64).max))) < 1e-10
    # the baseline's loss overflows exactly there
    assert torch.isinf(uot_dro.baseline_loss(at * uot_dro.LAMBDA * uot_dro.BETA)) and torch.isfinite(uot_dro.baseline_loss(below * uot_dro.LAMBDA * uot_dro.BETA))


@pytest.mark.smoke
def test_sample_stream_is_keyed_and_chunk_independent():
    whole = uot_dro.sample_indices(SEED, 3, 0, 10_000, 50_000)
    pieces = np.concatenate([uot_dro.sample_indices(SEED, 3, s, 1_234, 50_000)[: min(1_234, 10_000 - s)] for s in range(0, 10_000, 1_234)])
    assert np.array_equal(whole, pieces)
    assert whole.min() >= 0 and whole.max() < 50_000
    assert not np.array_equal(whole, uot_dro.sample_indices(SEED, 4, 0, 10_000, 50_000))
    assert not np.array_equal(whole, uot_dro.sample_indices(SEED + 1, 3, 0, 10_000, 50_000))
    counts = np.bincount(whole // 5_000, minlength=10)  # uniform over ten bins: chi-square, 9 dof
    assert ((counts - 1_000) ** 2 / 1_000).sum() < 27.9  # the 0.999 quantile


class _Interrupted(Exception):
    pass


class _MemoryCheckpoint:
    """The result store's Checkpoint interface, in memory; optionally interrupts after its first save."""

    def __init__(self, every: int, interrupt: bool) -> None:
        self.every, self.interrupt, self.saved, self.resumed_from_step = every, interrupt, None, None

    def due(self, step: int) -> bool:
        return step > 0 and step % self.every == 0

    def load(self):
        if self.saved is not None:
            self.resumed_from_step = self.saved["step"]
        return self.saved

    def save(self, state) -> None:
        import pickle

        self.saved = pickle.loads(pickle.dumps(state))  # what the store keeps survives a round trip
        if self.interrupt:
            self.interrupt = False
            raise _Interrupted


@pytest.mark.smoke
def test_interrupted_training_resumes_to_the_same_result():
    x, y = _images(200, "resume")
    data = uot_dro.Data(x, y, x[:4], y[:4], x[:16], y[:16], x[:0], y[:0])
    runs = [uot_dro.Run("baseline", 1e-1, 0), uot_dro.Run("proposed", 1e-3, 0), uot_dro.Run("erm", 1e-2, 1)]
    straight = uot_dro.train(runs, data, 12, (6,), SEED)
    checkpoint = _MemoryCheckpoint(every=4, interrupt=True)
    with pytest.raises(_Interrupted):
        uot_dro.train(runs, data, 12, (6,), SEED, checkpoint=checkpoint)
    resumed = uot_dro.train(runs, data, 12, (6,), SEED, checkpoint=checkpoint)
    assert checkpoint.resumed_from_step == 4
    for key in ("overflow_step", "final_alpha", "max_exponent", "F", "test_accuracy", "lhat"):
        assert np.array_equal(np.asarray(straight[key]), np.asarray(resumed[key]), equal_nan=True), key


@pytest.mark.smoke
def test_bad_runs_are_refused_with_one_line():
    with pytest.raises(ValueError, match="unknown method 'sgd'"):
        uot_dro.order_runs([uot_dro.Run("sgd", 1e-3, 0)])
    with pytest.raises(ValueError, match="stepsize must be a positive number"):
        uot_dro.order_runs([uot_dro.Run("erm", -1.0, 0)])
