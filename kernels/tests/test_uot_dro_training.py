"""Reference tests of the UOT-DRO kernel's training loop (claim L6): the sample stream is keyed and independent
of how it is cut, an interrupted training resumes to the same result (with its evaluations in line or in a
background thread still pending at the interrupt), bad runs are refused with one line, and a batch whose every run
overflows empties cleanly. The batched step against single runs is test_uot_dro_reference.py's.
"""

from __future__ import annotations

import threading

import numpy as np
import pytest
import torch

from kernels import uot_dro
from kernels.tests.uot_dro_synthetic import SEED, images

pytestmark = pytest.mark.usefixtures("one_torch_thread")  # kernels/tests/conftest.py


@pytest.mark.smoke
def test_sample_stream_is_keyed_and_chunk_independent():
    whole = uot_dro.sample_indices(SEED, 3, 0, 10_000, 50_000)
    pieces = np.concatenate(
        [uot_dro.sample_indices(SEED, 3, s, 1_234, 50_000)[: min(1_234, 10_000 - s)] for s in range(0, 10_000, 1_234)]
    )
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
        from pytest_claims.store import codec

        self.saved = codec.loads(codec.dumps({}, state))[1]  # what the store keeps survives its data-only format
        if self.interrupt:
            self.interrupt = False
            raise _Interrupted


@pytest.mark.smoke
def test_interrupted_training_resumes_to_the_same_result():
    x, y = images(200, "resume")
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


class _HeldEvaluations:
    """uot_dro.trainer.evaluate held back until released, recording the thread that ran each evaluation."""

    def __init__(self) -> None:
        self.release, self.threads = threading.Event(), []
        self.evaluate = uot_dro.trainer.evaluate

    def __call__(self, program, data):
        self.threads.append(threading.current_thread().name)
        assert self.release.wait(timeout=60), "never released"
        return self.evaluate(program, data)


class _SaveThenInterrupt(_MemoryCheckpoint):
    """Releases the held evaluations after its first save, then interrupts (the save keeps them pending)."""

    def __init__(self, every: int, held: _HeldEvaluations) -> None:
        super().__init__(every, interrupt=True)
        self.held, self.pending_at_save = held, None

    def save(self, state) -> None:
        if self.pending_at_save is None:
            self.pending_at_save = [entry["step"] for entry in state["pending"]]
            self.held.release.set()
        super().save(state)


@pytest.mark.smoke
def test_evaluations_aside_give_the_same_curves_and_survive_an_interrupt(monkeypatch):
    """train(evaluate_aside=True), as the CPU units of the paper's scale run: the evaluations in a
    background thread give the curves of evaluations in line to the bit; an interrupt while one is still
    pending (held back here until the checkpoint has been saved) keeps it in the checkpoint, and the
    resumed run evaluates it and ends with the same curves."""
    x, y = images(200, "aside")
    data = uot_dro.Data(x, y, x[:4], y[:4], x[:16], y[:16], x[16:24], y[16:24])
    runs = [uot_dro.Run("baseline", 1e-1, 0), uot_dro.Run("proposed", 1e-3, 0), uot_dro.Run("erm", 1e-2, 1)]
    straight = uot_dro.train(runs, data, 12, (6,), SEED)
    held = _HeldEvaluations()
    monkeypatch.setattr(uot_dro.trainer, "evaluate", held)
    checkpoint = _SaveThenInterrupt(every=4, held=held)
    with pytest.raises(_Interrupted):
        uot_dro.train(runs, data, 12, (6,), SEED, checkpoint=checkpoint, evaluate_aside=True)
    assert checkpoint.pending_at_save == [0], "the step-0 evaluation was not pending at the first save"
    resumed = uot_dro.train(runs, data, 12, (6,), SEED, checkpoint=checkpoint, evaluate_aside=True)
    assert checkpoint.resumed_from_step == 4
    assert held.threads and "MainThread" not in held.threads, held.threads
    for key in ("overflow_step", "curve_steps", *uot_dro.CURVES[1:]):
        assert np.array_equal(np.asarray(straight[key]), np.asarray(resumed[key]), equal_nan=True), key


@pytest.mark.smoke
def test_bad_runs_are_refused_with_one_line():
    with pytest.raises(ValueError, match="unknown method 'sgd'"):
        uot_dro.order_runs([uot_dro.Run("sgd", 1e-3, 0)])
    with pytest.raises(ValueError, match="stepsize must be a positive number"):
        uot_dro.order_runs([uot_dro.Run("erm", -1.0, 0)])


@pytest.mark.smoke
def test_a_batch_whose_every_run_overflows_empties():
    """Two baseline runs at stepsize 10 overflow within a few steps: both are recorded and frozen at finite
    parameters, and the batch keeps its parameters' shapes with no rows (the small parameters' shared buffer
    rebuilt for zero runs: the freeze of the last run in a batch once crashed there)."""
    program = uot_dro.Program(
        [uot_dro.Run("baseline", 10.0, 0), uot_dro.Run("baseline", 10.0, 1)], SEED, keep_frozen=True
    )
    x_train, y_train = images(40, "overflow")
    for t in range(30):
        if len(program.rows) == 0:
            break
        program.step(x_train[[t, t]].unsqueeze(1), y_train[[t, t]].unsqueeze(1))
    assert len(program.rows) == 0, f"still {len(program.rows)} runs in the batch after {t} steps"
    assert all(program.overflow_step > 0), program.overflow_step
    assert {k: tuple(v.shape) for k, v in program.params.items()} == {
        k: (0, *shape) for k, shape in uot_dro.PARAMETER_SHAPES.items()
    }
    for run in (0, 1):
        assert all(bool(torch.isfinite(v).all()) for v in program.parameters_of(run).values())
