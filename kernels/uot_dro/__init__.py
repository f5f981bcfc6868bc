"""Paper L, Section 3.3 (claim L6): DRO with unbalanced optimal transport on MNIST with label noise.

Setup (CLAIMS.md, "DRO (L5, L6)"; the authors' released `uot-dro/` code for what the text leaves open):

* model: conv 32 (3x3) - ReLU - conv 64 (3x3) - ReLU - 2x2 max-pool - FC 128 - ReLU - FC 10 (one pool,
  after the second convolution: 28 -> 26 -> 24 -> 12, so FC 128 reads 64 x 12 x 12 = 9216 features);
  PyTorch's default initialisation, drawn from a generator keyed by (master seed, seed);
* adversarial loss lhat(theta; x, y) = sup_z l(theta; z, y) - lambda ||z - x||^2, l the cross-entropy,
  approximated by 5 Nesterov ascent steps from z = x (step 0.1 / lambda, momentum 0.4, the gradient
  taken at the look-ahead point); lambda = beta = 1, rho = 0.1;
* objectives per training image: ERM l(theta; x, y); baseline (21) exp(lhat / (lambda beta)); proposed
  (22) alpha + (lambda beta / rho) softplus((lhat - alpha) / (lambda beta) + ln rho), alpha trained
  with theta (alpha_0 = 0); the gradient in theta holds z at the inner maximiser (Danskin);
* training: batch size 1 drawn uniformly with replacement, plain SGD, float32;
* F(theta) = lambda beta ln((1/n) sum_i exp(lhat_i / (lambda beta))) on a fixed subset of the training
  split: the UOT-DRO objective both methods minimise, the released code's `eval_loss`.

Every run (method x stepsize x seed) advances in ONE batched program: the parameters of R runs are
stacked along a leading axis and a step is batched forward / backward passes over all R runs, each on its
own image: grouped convolutions of a batch of one (group r holds run r's filters) with a hand-written
backward that computes only the gradients asked for (`OneImagePerRun`; evaluation, with many images per
run, uses the same grouped convolutions and max-pool under autograd). On the CPU the runs are taken in
groups of RUN_GROUP, so that a group's FC-128 weights (4.7 MB a run, read 13 times per DRO step) are
still in cache when read again. A run whose loss, gradient or parameters become non-finite is recorded as
overflowed at that step and frozen at its last finite parameters; the other runs never see it. CPU and
CUDA.

The package, one concern a module (each imports only those above it):

* batched_autograd: the one-image-per-run feature layers, forward and hand-written backward;
* model: the network, its keyed initialisation and the batched forward pass;
* compiled: the inner ascent's gradient for one image per run, by TorchScript on the CPU (eager on CUDA);
* objectives: the inner maximisation, objectives (21) and (22), evaluation losses, overflow threshold;
* trainer: the batched program (Program), the sample stream, the training loop (train) and its checkpoint
  evaluations (Evaluations: in line, or in a background thread while training goes on);
* single_run: the explicit route (nn.Module + torch.optim.SGD per run), for reference tests.

Callers import the names below from `kernels.uot_dro`; a result store entry names MODULES as its code.
"""

from __future__ import annotations

from kernels.uot_dro import batched_autograd, compiled, model, objectives, single_run, trainer
from kernels.uot_dro.batched_autograd import CONV2_GROUPED, OneImagePerRun, grouped_conv2_weight
from kernels.uot_dro.model import (
    FC1,
    PARAMETER_SHAPES,
    SimpleCNN,
    cross_entropy,
    features_grouped,
    forward,
    forward_features,
    forward_parts,
    init_parameters,
)
from kernels.uot_dro.objectives import (
    BETA,
    INNER_LR,
    INNER_MOMENTUM,
    INNER_STEPS,
    LAMBDA,
    RHO,
    accuracy,
    adversarial_losses,
    baseline_loss,
    inner_maximise,
    inner_objective,
    overflow_threshold,
    proposed_loss,
    run_objectives,
)
from kernels.uot_dro.single_run import SingleRun
from kernels.uot_dro.trainer import (
    CURVES,
    METHODS,
    RUN_GROUP,
    SAFE_MAGNITUDE,
    STREAM_BLOCK,
    Data,
    Program,
    Run,
    evaluate,
    order_runs,
    sample_indices,
    train,
)

MODULES = (batched_autograd, model, compiled, objectives, trainer, single_run)  # the source a trained result depends on

__all__ = [
    "BETA", "CONV2_GROUPED", "CURVES", "FC1", "INNER_LR", "INNER_MOMENTUM", "INNER_STEPS", "LAMBDA", "METHODS",
    "MODULES", "PARAMETER_SHAPES", "RHO", "RUN_GROUP", "SAFE_MAGNITUDE", "STREAM_BLOCK", "Data",
    "OneImagePerRun", "Program", "Run", "SimpleCNN", "SingleRun", "accuracy", "adversarial_losses",
    "baseline_loss", "grouped_conv2_weight", "cross_entropy", "evaluate", "features_grouped", "forward",
    "forward_features", "forward_parts", "inner_maximise", "inner_objective", "init_parameters",
    "order_runs", "overflow_threshold", "proposed_loss", "run_objectives", "sample_indices", "train",
]  # fmt: skip
