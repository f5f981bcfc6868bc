"""Reference tests of the UOT-DRO kernel (claim L6): the batched program against R separate nn.Module
models trained with torch.optim.SGD (step by step, and whole runs of train(), the statements' path, each
on its own seed's sample stream), the inner maximisation against an objective written here, objectives
(21) and (22) at hand-checkable points and the float32 overflow threshold; the training loop's sample stream,
checkpoints and refusals are test_uot_dro_training.py's.

Synthetic images (keyed Gaussian noise with random labels: uot_dro_synthetic.py) keep these tests independent of
the MNIST files; the statement tests use the real data.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from kernels import uot_dro
from kernels.tests.uot_dro_synthetic import SEED, images

pytestmark = pytest.mark.usefixtures("one_torch_thread")  # kernels/tests/conftest.py

LAMBDA = 1.0  # the setup's lambda, written here (the kernel's is asserted equal to it below)
EPS64 = float(torch.finfo(torch.float64).eps)
LONGEST_SUM = 9216 + 576 + 288  # terms of the longest reduction chain of one forward / backward (FC-128, conv2's
# weight gradient over 24 x 24 positions, a conv2 output over 32 x 3 x 3): float rounding of one evaluation
# is at most LONGEST_SUM * eps relative to the magnitudes summed (Higham's gamma_n, no cancellation assumed)
U32 = 2.0**-24  # float32 unit roundoff
STEP_SUMS = 6 * LONGEST_SUM  # one training step: the inner maximisation's 5 gradients and the outer one


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
    return {
        **{k: v.detach().clone().double() for k, v in single.model.named_parameters()},
        "alpha": single.alpha.detach().clone().double(),
    }


def _state(single: uot_dro.SingleRun) -> dict:
    return {
        **{k: v.detach().clone().double() for k, v in single.model.named_parameters()},
        "alpha": single.alpha.detach().clone().double(),
    }


@pytest.mark.parametrize(
    "steps", [pytest.param(30, marks=pytest.mark.smoke), pytest.param(300, marks=pytest.mark.full)]
)
def test_batched_program_equals_single_runs_with_torch_sgd(steps):
    """Every step, from the batched program's current state: its update of each run equals the update
    of that run's own nn.Module trained by torch.optim.SGD on the same image, to float32 rounding (its
    error against the float64 update is of the size of the loop's own); overflow steps and the frozen
    parameters are the same. One run per objective, plus a baseline that overflows; 30 steps in every
    CI run, 300 (the issue's "a few hundred") in the full tier."""
    _compare_with_single_runs(steps)


def _compare_with_single_runs(steps: int) -> None:
    runs = [
        uot_dro.Run("baseline", 1e-3, 0),
        uot_dro.Run("proposed", 1e-3, 1),
        uot_dro.Run("erm", 1e-2, 2),
        uot_dro.Run("baseline", 1e-1, 3),
    ]
    yardstick_every = 3
    x_train, y_train = images(500, "train")
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
            assert (singles[i].overflow_step > 0) == (program.overflow_step[i] > 0), (
                f"{program.runs[i].name}: overflow at step {t + 1} in one route only"
            )
            if program.overflow_step[i] > 0:
                continue
            if t % yardstick_every == 0:
                doubles[i].step(x_train[j : j + 1].double(), y_train[j : j + 1])
                reference = {k: v - before[i][k] for k, v in _state(doubles[i]).items()}
                after = {
                    **{k: v.double() for k, v in program.parameters_of(i).items()},
                    "alpha": program.alpha[list(program.rows).index(i)].double().reshape(1),
                }
                loop = {k: v - before[i][k] for k, v in _state(singles[i]).items()}
                errors["batched"].append(_relative({k: after[k] - before[i][k] for k in reference}, reference))
                errors["loop"].append(_relative(loop, reference))
    for i, single in singles.items():
        assert program.overflow_step[i] == (single.overflow_step if single.overflow_step > 0 else -1), (
            f"{program.runs[i].name}: overflow steps differ"
        )
    overflowed = [i for i in singles if program.overflow_step[i] > 0]
    assert overflowed, "the run at eta = 1e-1 should overflow within the test's steps"
    for i in overflowed:  # frozen at the last finite parameters, in both routes
        frozen, last = program.parameters_of(i), singles[i].parameters()
        assert all(torch.equal(frozen[k], last[k]) for k in last)
    batched, loop = np.array(errors["batched"]), np.array(errors["loop"])
    # Both are float32 computations of the same update in different operation orders; a batching error
    # (another run's parameters, image or stepsize, a sign) is an O(1) relative error.
    assert np.quantile(batched, 0.5) <= 10 * np.quantile(loop, 0.5) + 1e-7, (
        np.quantile(batched, 0.5),
        np.quantile(loop, 0.5),
    )
    assert np.quantile(batched, 0.9) <= 10 * np.quantile(loop, 0.9) + 1e-7, (
        np.quantile(batched, 0.9),
        np.quantile(loop, 0.9),
    )
    assert batched.max() < 1e-2, batched.max()


@pytest.mark.smoke
def test_inner_gradient_compiled_and_eager_give_the_same_bits(monkeypatch):
    """The CPU's inner ascent gradient runs under TorchScript (kernels.uot_dro.compiled); the eager function,
    which CUDA runs, is the same operators in the same order. Three programs' steps (one run per objective,
    and a group of four proposed runs) and an inner maximisation give the same numbers to the bit by both
    routes, and the CPU route really is TorchScript's where this torch has it."""
    from kernels.uot_dro import compiled, model

    assert isinstance(compiled._scripted(), torch.jit.ScriptFunction) or not hasattr(torch.jit, "script")
    x_train, y_train = images(40, "routes")
    params = {k: v.unsqueeze(0) for k, v in uot_dro.init_parameters(SEED, 5).items()}

    def trajectories():
        out = [uot_dro.inner_maximise(params, x_train[:1].unsqueeze(0), y_train[:1].unsqueeze(0))]
        for runs in (
            [uot_dro.Run(m, 1e-2, s) for s, m in enumerate(uot_dro.METHODS)],
            [uot_dro.Run("proposed", 1e-2, s) for s in range(4)],
        ):
            program = uot_dro.Program(runs, SEED)
            for t in range(4):
                chosen = torch.arange(len(runs)) * 7 + t
                program.step(x_train[chosen].unsqueeze(1), y_train[chosen].unsqueeze(1))
            out += [program.params[name] for name in sorted(program.params)] + [program.alpha]
        return out

    by_script = trajectories()
    monkeypatch.setattr(compiled, "_scripted", lambda: model.one_image_loss_input_gradient)
    by_eager = trajectories()
    assert all(torch.equal(a, b) for a, b in zip(by_script, by_eager, strict=True))
    moved = uot_dro.inner_maximise(params, x_train[:1].unsqueeze(0), y_train[:1].unsqueeze(0))
    assert not torch.equal(moved, x_train[:1].unsqueeze(0))  # the ascent moved: the comparison is not of inputs


@pytest.mark.full
def test_erm_trajectory_in_float64_equals_single_run_over_200_steps():
    """Whole trajectories: ERM trained 200 steps by the batched program's update code and by
    torch.optim.SGD on the module, both in float64, end at the same parameters to 1e-12 (measured 7e-17
    under the default and the avx2 dispatch; float64 rounding, ~1e-16 per step, stays orders below, and a
    ReLU or max-pool input within float64 rounding of its kink is not to be expected). A mismatch as small
    as the stepsize rounded to float32 (2e-8 relative) moves it by 9e-10.

    In float32 the trajectories are not comparable end to end: they are smooth only between kinks, and
    one activation rounded to the other side of a kink by another summation order (the avx2 dispatch on
    one thread, at step 68 of this stream) parts them by 1e-4, 300 times the float32 reference's own
    distance to float64. The float32 path is compared step by step (one update from the same state, by
    quantiles) in _compare_with_single_runs."""
    x_train, y_train = images(500, "erm")
    x_train = x_train.double()
    run = uot_dro.Run("erm", 1e-2, 5)
    program, single = uot_dro.Program([run], SEED, dtype=torch.float64), uot_dro.SingleRun(run, SEED)
    single.model.double()
    stream = uot_dro.sample_indices(SEED, run.seed, 0, 200, len(y_train))
    for j in stream:
        program.step(x_train[[j]].unsqueeze(1), y_train[[j]].unsqueeze(1))
        single.step(x_train[j : j + 1], y_train[j : j + 1])
    start = uot_dro.init_parameters(SEED, run.seed)
    ours, theirs = program.parameters_of(0), single.parameters()
    assert all(v.dtype == torch.float64 for v in ours.values())
    moved = max(float((theirs[k] - start[k].double()).abs().max()) for k in theirs)
    assert moved > 1e-2  # the run went somewhere
    apart = max(float((ours[k] - theirs[k]).abs().max()) for k in theirs)
    assert apart <= 1e-12 * max(1.0, moved), f"float64 trajectories 200 steps apart by {apart:.3g}"


class _StateAt:
    """The result store's Checkpoint interface (load / due / save) keeping the program's state at one
    step: the only place where train() hands out its runs' parameters (the state a resumed run continues
    from; runs that overflowed have left it)."""

    def __init__(self, step: int) -> None:
        self.step, self.state = step, None

    def load(self):
        return None

    def due(self, step: int) -> bool:
        return step == self.step

    def save(self, state) -> None:
        self.state = state["program"]


@pytest.mark.smoke
def test_train_feeds_every_run_its_own_seeds_sample_stream():
    """uot_dro.train(), the path every statement runs, against separate single runs on the same sample
    stream: 2 seeds x 3 settings (passed out of the program's block order; the baseline at 1e-1 overflows
    within a few steps, so the batch shrinks while the others train on) for 20 steps. Every run of train()
    ends where its own nn.Module trained by torch.optim.SGD on sample_indices(master, seed, 0, 20, n)
    ends, and overflows at the same step; evaluate() writes each run's curves from that run's parameters.

    The bound on the distance between the two float32 trajectories is the rounding they can differ by,
    summed over the steps (the propagation of an early difference through later gradients, a factor
    1 + eta ||Hessian|| per step, is negligible at these stepsizes): storing each update (u |theta_t| per
    route and step) and computing it (at most STEP_SUMS u relative to the update: Higham's gamma_n for the
    step's longest reduction chain), 2 u (sum_t |theta_t| + STEP_SUMS sum_t |theta_t - theta_t-1|). Here
    that is 3-5e-2 of the distance moved; a run fed another seed's images, or its own stream shifted by
    one step, ends 0.6-1.2 of the distance moved away (and the two float32 routes agree to ~1e-6 of it)."""
    steps, seeds = 20, (2, 5)
    settings = [("erm", 1e-2), ("proposed", 1e-3), ("baseline", 1e-1)]
    runs = [uot_dro.Run(method, lr, seed) for seed in seeds for method, lr in settings]  # seed-major: not block order
    x, y = images(300, "routing")
    data = uot_dro.Data(x, y, x[:6], y[:6], x[:10], y[:10], x[:0], y[:0])
    checkpoint = _StateAt(steps)
    result = uot_dro.train(runs, data, steps, (), SEED, checkpoint=checkpoint)
    state = checkpoint.state
    assert state is not None and sorted(result["runs"]) == sorted((r.method, r.lr, r.seed) for r in runs)
    rows = list(state["rows"])
    report, finished = {}, []
    for i, (method, lr, seed) in enumerate(result["runs"]):
        run = uot_dro.Run(method, lr, seed)
        single = uot_dro.SingleRun(run, SEED)
        previous = {k: v.clone() for k, v in {**single.parameters(), "alpha": single.alpha.detach()}.items()}
        sizes, path = [], 0.0
        for j in uot_dro.sample_indices(SEED, seed, 0, steps, len(y)):
            single.step(x[j : j + 1], y[j : j + 1])
            if single.overflow_step > 0:
                break
            now = {**single.parameters(), "alpha": single.alpha.detach()}
            path += math.sqrt(sum(float((now[k].double() - previous[k].double()).pow(2).sum()) for k in now))
            sizes.append(math.sqrt(sum(float(v.double().pow(2).sum()) for v in now.values())))
            previous = {k: v.clone() for k, v in now.items()}
        assert result["overflow_step"][i] == (single.overflow_step if single.overflow_step > 0 else -1), (
            f"{run.name}: overflow at step {result['overflow_step'][i]} in train(), {single.overflow_step} alone"
        )
        if single.overflow_step > 0:
            assert i not in rows
            continue
        row = rows.index(i)
        ours = {
            **{k: v[row] for k, v in state["params"].items() if k in uot_dro.PARAMETER_SHAPES},
            "alpha": state["alpha"][row].reshape(1),
        }
        theirs = {**single.parameters(), "alpha": single.alpha.detach()}
        start = {**uot_dro.init_parameters(SEED, seed), "alpha": torch.zeros(1)}
        distance = math.sqrt(sum(float((ours[k].double() - theirs[k].double()).pow(2).sum()) for k in theirs))
        moved = math.sqrt(sum(float((theirs[k].double() - start[k].double()).pow(2).sum()) for k in theirs))
        bound = 2 * U32 * (sum(sizes) + STEP_SUMS * path)
        report[run.name] = (distance / moved, bound / moved)
        assert moved > 0 and distance <= bound, (
            f"{run.name}: train() ended {distance / moved:.3g} of the distance moved from the single run on its seed's "
            f"stream (bound {bound / moved:.3g})"
        )
        finished.append((i, ours))
    assert any(s > 0 for s in result["overflow_step"]) and len(finished) == 2 * (len(settings) - 1), (
        result["overflow_step"],
        report,
    )
    # evaluate(): each run's final curves come from its own parameters (the two proposed runs: one per seed)
    dro = [(i, p) for i, p in finished if result["runs"][i][0] != "erm"]
    assert len(dro) == 2
    own = {
        i: uot_dro.adversarial_losses(
            {k: v for k, v in p.items() if k in uot_dro.PARAMETER_SHAPES}, data.x_objective, data.y_objective
        )
        .double()
        .numpy()
        for i, p in dro
    }
    for i, _ in dro:
        recorded = result["lhat"][i, -1].astype(np.float64)
        nearest = min(own, key=lambda j: float(np.abs(recorded - own[j]).max()))
        assert nearest == i and np.abs(recorded - own[i]).max() < np.abs(own[dro[0][0]] - own[dro[1][0]]).max(), (
            f"run {i}'s final adversarial losses are not its own"
        )


def _network64(params: dict, z: torch.Tensor) -> torch.Tensor:
    """The CNN's logits (n, 10) for images z (n, 1, 28, 28), written here with torch.nn.functional's
    ungrouped convolutions and dense layers (independent of the kernel's batched forward), in float64."""
    p = {k: v.double() for k, v in params.items()}
    h = F.relu(F.conv2d(z, p["conv1.weight"], p["conv1.bias"]))
    h = F.max_pool2d(F.relu(F.conv2d(h, p["conv2.weight"], p["conv2.bias"])), 2).flatten(1)
    return F.linear(F.relu(F.linear(h, p["fc1.weight"], p["fc1.bias"])), p["fc2.weight"], p["fc2.bias"])


def _objective64(params: dict, z: torch.Tensor, x: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """l(theta; z, y) - lambda ||z - x||^2 per image and its gradient in z, in float64, written here
    (F.cross_entropy of _network64; lambda = 1, the setup's, as test_objectives_at_hand_checkable_points
    asserts of the kernel): the kernel's inner_objective is what is under test, not the reference."""
    z64 = z.double().requires_grad_(True)
    value = F.cross_entropy(_network64(params, z64), y, reduction="none") - LAMBDA * ((z64 - x.double()) ** 2).sum(
        dim=(1, 2, 3)
    )
    (grad,) = torch.autograd.grad(value.sum(), z64)
    return value.detach(), grad


@pytest.mark.smoke
@pytest.mark.parametrize("sharpness", [1.0, 30.0], ids=["initial", "confident"])
def test_inner_maximisation_increases_its_objective_at_every_step(sharpness):
    """Against l(theta; z) - lambda ||z - x||^2 written here (_objective64), not the kernel's inner_objective:

    (a) float64: the kernel's z* is this objective's Nesterov ascent (step 0.1 / lambda, momentum 0.4,
    gradient at the look-ahead point) replayed here, to 1e-9 of the distance moved (float64 rounding is at
    most LONGEST_SUM eps64 = 2e-12 of each gradient; 5 steps, 2 routes and a growth of at most 100 through
    the remaining steps stay below 1e-9, while a wrong lambda, step, momentum, look-ahead or sign is an
    O(1e-2) or larger change); and the kernel's traced values are this objective at the iterates, to
    LONGEST_SUM eps64 of their size plus the iterates' allowed distance times the gradient;
    (b) float32, as the kernel runs: each of the 5 steps raises this objective (evaluated in float64 at the
    kernel's iterates), up to what rounding z to float32 can cost: half a float32 spacing per pixel times
    |gradient|, and the 5 steps make progress on every image.

    'confident' scales the last layer so the network is sharp, as a trained one is."""
    assert uot_dro.LAMBDA == LAMBDA and uot_dro.INNER_STEPS == 5
    lr, m = 0.1 / LAMBDA, 0.4  # the setup's inner step and momentum, written here
    params = {k: v.unsqueeze(0) for k, v in uot_dro.init_parameters(SEED, 7).items()}
    params["fc2.weight"] = params["fc2.weight"] * sharpness
    plain = {k: v[0] for k, v in params.items()}
    x, y = images(16, f"inner-{sharpness}")

    # (a) float64: the kernel's final iterate and its traced values at z_0 = x, z_1, ..., z_5, against the replay
    p64, x64 = {k: v.double() for k, v in params.items()}, x.double()
    final64, trace64 = uot_dro.inner_maximise(p64, x64.unsqueeze(0), y.unsqueeze(0), trace=True)
    assert trace64.shape[:2] == (6, 1)
    u, v = x64.clone(), torch.zeros_like(x64)
    replay = [u]
    for _ in range(5):
        _, g = _objective64(plain, u + m * v, x64, y)
        v = m * v + lr * g
        u = u + v
        replay.append(u)
    moved = (replay[-1] - x64).flatten(1).norm(dim=1)
    error = (final64[0] - replay[-1]).flatten(1).norm(dim=1)
    assert torch.all(error <= 1e-9 * moved), (
        f"the kernel's z* is {float((error / moved).max()):.3g} of the distance moved from the Nesterov ascent of l - "
        f"lambda ||z - x||^2"
    )
    for k, z in enumerate(
        replay
    ):  # its value at the kernel's k-th iterate: within rounding, and the iterate's distance to z times |gradient|
        value, grad = _objective64(plain, z, x64, y)
        allowed = LONGEST_SUM * EPS64 * value.abs().clamp_min(1.0) + grad.flatten(1).norm(dim=1) * 1e-9 * (
            z - x64
        ).flatten(1).norm(dim=1)
        assert torch.all((trace64[k, 0] - value).abs() <= allowed), (
            f"step {k}: the kernel's inner objective differs from l - lambda ||z - x||^2 by "
            f"{float((trace64[k, 0] - value).abs().max()):.3g}"
        )

    # (b) float32: the kernel's own iterates z_0 = x, z_1, ..., z_5
    iterates = [uot_dro.inner_maximise(params, x.unsqueeze(0), y.unsqueeze(0), steps=k)[0] for k in range(6)]
    assert torch.equal(iterates[0], x) and torch.equal(
        iterates[-1], uot_dro.inner_maximise(params, x.unsqueeze(0), y.unsqueeze(0))[0]
    )
    values, slack = [], []
    for z in iterates:
        value, grad = _objective64(plain, z, x, y)
        spacing = torch.abs(torch.nextafter(z, torch.full_like(z, math.inf)) - z).double()
        values.append(value)
        slack.append((grad.abs() * spacing).sum(dim=(-3, -2, -1)))
    for k in range(5):
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
    assert torch.isinf(uot_dro.baseline_loss(at * uot_dro.LAMBDA * uot_dro.BETA)) and torch.isfinite(
        uot_dro.baseline_loss(below * uot_dro.LAMBDA * uot_dro.BETA)
    )
