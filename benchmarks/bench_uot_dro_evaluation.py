"""UOT-DRO (claim L6): the checkpoint evaluation per image, the current code against the code before its
layout, pooling and chunks were changed, and the batch-1 training step alone against the step with an
evaluation running beside it in a background thread (what a paper-scale CPU unit does:
`train(evaluate_aside=True)`).

    .venv/bin/python benchmarks/bench_uot_dro_evaluation.py [--images 300] [--rounds 3] [--steps 200]

A checkpoint of a paper-scale CPU unit evaluates the adversarial and clean losses of 10,000 training
images (F) and the accuracy of 10,000 test and 10,000 validation images; the per-image rates below times
those counts are its cost. "before" is the grouped-convolution forward as it was (ReLU, then max_pool2d,
on conv1's default layout; chunks of 200 images for the adversarial loss and 1000 for the accuracy), rebuilt here
and timed in alternating rounds with the current one in one process on one thread; each one's fastest
round counts. The step is timed alone and with an evaluation of --images images looping in a background
thread; their ratio is what a unit's training loses to its own evaluations on this machine (they share
its memory bandwidth and last-level cache).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from kernels import uot_dro  # noqa: E402

# per checkpoint: F's subset (adversarial losses); the test and validation accuracies and F's clean losses
# (forward passes alike: the accuracy's rate)
PAPER_IMAGES = {"adversarial loss": 10_000, "accuracy": 30_000}


def features_grouped_before(params: dict[str, torch.Tensor], x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """kernels.uot_dro.model.features_grouped as it was before its layout was fixed (for the comparison only)."""
    runs, batch = x.shape[:2]
    h = x.transpose(0, 1).reshape(batch, runs, 28, 28).contiguous(memory_format=torch.channels_last)
    weight1, bias1 = params["conv1.weight"].reshape(runs * 32, 1, 3, 3), params["conv1.bias"].reshape(-1)
    h = F.relu(F.conv2d(h, weight1, bias1, groups=runs))
    weight2, bias2 = params["conv2.weight"].reshape(runs * 64, 32, 3, 3), params["conv2.bias"].reshape(-1)
    h = F.max_pool2d(F.relu(F.conv2d(h, weight2, bias2, groups=runs)), 2)
    a = h.reshape(batch, runs, 9216).transpose(0, 1)
    return a, torch.baddbmm(params["fc1.bias"].unsqueeze(1), a, params[uot_dro.FC1].transpose(1, 2))


@contextlib.contextmanager
def before():
    original = uot_dro.model.features_grouped  # forward_features reads it from its own module
    uot_dro.model.features_grouped = features_grouped_before
    try:
        yield
    finally:
        uot_dro.model.features_grouped = original


def seconds_per_image(function, images: int) -> float:
    started = time.process_time()
    function()
    return (time.process_time() - started) / images


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--images", type=int, default=300, help="images of the adversarial-loss timing")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--steps", type=int, default=200, help="training steps of each step timing")
    args = parser.parse_args()
    if min(args.images, args.rounds, args.steps) < 1:
        parser.error("--images, --rounds and --steps must be positive")
    torch.set_num_threads(1)
    program = uot_dro.Program([uot_dro.Run("proposed", 1e-4, 0)], 1)
    params = {k: v[0].clone() for k, v in program.params.items()}
    generator = torch.Generator().manual_seed(0)
    x = torch.rand(max(args.images, 2000), 1, 28, 28, generator=generator)
    y = torch.randint(0, 10, (x.shape[0],), generator=generator)
    xa, ya = x[: args.images], y[: args.images]
    timers = {
        ("adversarial loss", "before"): lambda: uot_dro.adversarial_losses(params, xa, ya, chunk=200),
        ("adversarial loss", "now"): lambda: uot_dro.adversarial_losses(params, xa, ya),
        ("accuracy", "before"): lambda: uot_dro.accuracy(params, x[:2000], y[:2000], chunk=1000),
        ("accuracy", "now"): lambda: uot_dro.accuracy(params, x[:2000], y[:2000]),
    }
    best = dict.fromkeys(timers, float("inf"))
    for _ in range(args.rounds):
        for (part, code), function in timers.items():
            with before() if code == "before" else contextlib.nullcontext():
                images = args.images if part == "adversarial loss" else 2000
                best[part, code] = min(best[part, code], seconds_per_image(function, images))
    print(
        f"torch {torch.__version__}, 1 thread, load average {os.getloadavg()[0]:.2f}; "
        f"CPU time, fastest of {args.rounds} rounds"
    )
    checkpoint = {"before": 0.0, "now": 0.0}
    for part in PAPER_IMAGES:
        ms = {code: best[part, code] * 1e3 for code in ("before", "now")}
        for code in ms:
            checkpoint[code] += best[part, code] * PAPER_IMAGES[part]
        print(
            f"  {part:<18} before {ms['before']:.3f} ms an image, now {ms['now']:.3f}: {ms['before'] / ms['now']:.2f}x"
        )
    print(
        f"  a paper-scale checkpoint (10,000 adversarial + 30,000 forward images): "
        f"before {checkpoint['before']:.1f} s, now {checkpoint['now']:.1f} s "
        f"({checkpoint['before'] / checkpoint['now']:.2f}x)"
    )
    step_beside_evaluation(program, xa, ya, params, args.steps)


def step_beside_evaluation(program, xa, ya, params, steps: int) -> None:
    """The training step's wall time alone and with evaluations looping in a background thread."""
    generator = torch.Generator().manual_seed(1)
    images = torch.rand(steps, 1, 1, 1, 28, 28, generator=generator)
    labels = torch.randint(0, 10, (steps, 1, 1), generator=generator)

    def step_ms() -> float:
        started = time.perf_counter()
        for t in range(steps):
            program.step(images[t], labels[t])
        return (time.perf_counter() - started) / steps * 1e3

    step_ms()  # warm-up
    stop = threading.Event()

    def evaluations() -> None:
        while not stop.is_set():
            uot_dro.adversarial_losses(params, xa, ya)

    alone = [step_ms()]
    thread = threading.Thread(target=evaluations, daemon=True)
    thread.start()
    time.sleep(0.5)
    beside = [step_ms()]
    stop.set()
    thread.join()
    alone.append(step_ms())
    print(
        f"  training step alone {min(alone):.2f} ms (before and after), beside an evaluation thread {beside[0]:.2f} ms:"
        f" {beside[0] / min(alone):.2f}x"
    )


if __name__ == "__main__":
    main()
