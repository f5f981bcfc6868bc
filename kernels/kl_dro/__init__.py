"""Paper L, Section 3.2 (claim L5): KL-regularised DRO on California Housing, linear model, squared loss.

Conventions (CLAIMS.md, L5, and the authors' released `kl-dro/` code):

* Design: the eight features standardised on the full data (population variance, as scikit-learn's
  StandardScaler), plus an intercept column (last); theta_0 = ordinary least squares on that design.
* Loss l_i(theta) = (x_i . theta - y_i)^2, not halved (as released); lambda = 1. A configuration may
  scale it (RunConfig.loss_scale: 0.5 is the halved convention r^2 / 2, with its objective, weights and
  gradients all from the scaled loss), so both conventions run in one program.
* Objective L(theta) = lambda ln((1/n) sum_i exp(l_i / lambda)) on the full data, shifted by its
  maximum so it never overflows while theta is finite.
* Baseline estimator (18): gradient sum_B p_i grad l_i with p = softmax(l_B / lambda) held fixed.
* Proposed estimator (19): alpha + (lambda / rho) mean_B softplus((l_i - alpha) / lambda + ln rho) over
  (theta, alpha), alpha_0 = 0; its gradient is mean_B w_i grad l_i with the per-sample weight
  w_i = sigmoid((l_i - alpha) / lambda + ln rho) / rho = e^s / (1 + rho e^s) <= 1 / rho.
* SGD with Nesterov momentum 0.9, PyTorch's semantics (no dampening): buf <- 0.9 buf + g (the first
  buf is g), p <- p - eta (g + 0.9 buf).
* Minibatches: every epoch a fresh permutation of the n rows per stream, cut into consecutive batches;
  the last, partial batch of an epoch is kept (PyTorch's DataLoader default, drop_last=False, as the
  released code): 20640 rows give 2064 batches of 10; 206 of 100 and one of 40; 20 of 1000 and one
  of 640. Estimators average over the batch actually drawn.

Runs are batched as (streams S, runs per stream R, parameters d): every run of one stream (a seed)
sees the same minibatches, as in the released code where the seed alone fixes the loader; all S x R
runs of one batch size advance together, one Python loop over steps. Gradients are closed-form
(2 c_i r_i x_i with the estimator's coefficients c), so no autograd in the loop.

The package, one concern a module (each imports only those above it):

* problem: the constants, the design and its OLS start, the objective L, the estimators' coefficients and
  the Nesterov update;
* streams: the minibatch streams (keyed, or the released loader's permutations replayed);
* program: the configurations (RunConfig), the batched program (Program) and sgd_runs.

Callers import the names below from `kernels.kl_dro`; a result store entry names MODULES as its code.
"""

from __future__ import annotations

from kernels.kl_dro import problem, program, streams
from kernels.kl_dro.problem import (
    BATCHES,
    EPOCHS,
    ETAS,
    LAMBDA,
    MOMENTUM,
    RHOS,
    Problem,
    baseline_weights,
    design,
    least_squares,
    nesterov_update,
    objective,
    problem_from,
    proposed_weights,
)
from kernels.kl_dro.program import Program, RunConfig, batch_slices, grid_configs, sgd_runs
from kernels.kl_dro.streams import KeyedStreams, ReleasedStreams

MODULES = (problem, streams, program)  # the source a run's result depends on

__all__ = [
    "BATCHES", "EPOCHS", "ETAS", "LAMBDA", "MODULES", "MOMENTUM", "RHOS", "KeyedStreams", "Problem", "Program",
    "ReleasedStreams", "RunConfig", "baseline_weights", "batch_slices", "design", "grid_configs", "least_squares",
    "nesterov_update", "objective", "problem_from", "proposed_weights", "sgd_runs",
]  # fmt: skip
