"""UOT-DRO (claim L6): the inner maximisation's gradient for one image per run, run by TorchScript's
interpreter on the CPU and eagerly on CUDA.

An inner ascent step of one run on the CPU is about 60 operator calls around its two convolutions and two
FC-128 reads, and from Python each call measured 5-13 us beyond its own work. TorchScript's interpreter
runs the same operators in the same order without Python between them: the same numbers to the bit (a
reference test compares the two routes) and an inner maximisation 1.1-1.2 times faster
(benchmarks/bench_uot_dro_step.py). The rest of the step is left to Python: its forward and backward are
called once a step, and there the interpreter measured no faster. On CUDA the kernels run asynchronously
and Python's cost hides behind them, so the GPU tier keeps the eager route it was rehearsed with.
"""

from __future__ import annotations

import functools
import warnings
from typing import Callable

import torch

from kernels.uot_dro import model


@functools.cache
def _scripted() -> Callable:
    """model.one_image_loss_input_gradient compiled by torch.jit.script (0.05 s, once a process), or the
    function itself where this torch has no TorchScript."""
    script = getattr(getattr(torch, "jit", None), "script", None)
    if script is None:
        return model.one_image_loss_input_gradient
    with warnings.catch_warnings():  # deprecated in favour of torch.compile, which needs a C++ compiler at run
        # time (a CI machine has none) and measured 2.1 times slower on the inner maximisation
        warnings.filterwarnings("ignore", message=r".*torch\.jit\.script.*deprecated", category=DeprecationWarning)
        return script(model.one_image_loss_input_gradient)


def one_image_loss_input_gradient(z: torch.Tensor, onehot: torch.Tensor, *weights: torch.Tensor) -> torch.Tensor:
    """model.one_image_loss_input_gradient(z, onehot, *weights): by TorchScript on the CPU, eagerly on CUDA."""
    function = model.one_image_loss_input_gradient if z.is_cuda else _scripted()
    return function(z, onehot, *weights)
