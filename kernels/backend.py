"""Moving arrays between NumPy and PyTorch; kernels themselves are written once via array-api-compat."""

from __future__ import annotations

import contextlib
from typing import Any, Iterator

import numpy as np
from array_api_compat import array_namespace, is_torch_array

BACKENDS = ("numpy", "torch")
DEVICES = ("cpu", "cuda", "auto")


def cuda_available() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available())


def resolve_device(backend: str, device: str) -> str:
    """The concrete device for a backend/device pair; raises ValueError with one clear line."""
    if backend not in BACKENDS:
        raise ValueError(f"unknown backend {backend!r}; choose one of {', '.join(BACKENDS)}")
    if device not in DEVICES:
        raise ValueError(f"unknown device {device!r}; choose one of {', '.join(DEVICES)}")
    if backend == "numpy":
        if device == "cuda":
            raise ValueError("--device cuda needs --backend torch (NumPy runs on the CPU only)")
        return "cpu"
    if device == "auto":
        return "cuda" if cuda_available() else "cpu"
    if device == "cuda" and not cuda_available():
        raise ValueError("--device cuda requested but no CUDA device is available (torch.cuda.is_available() is False)")
    return device


def to_backend(array: np.ndarray, backend: str, device: str = "cpu") -> Any:
    """A NumPy array as an array of the chosen backend (same dtype, on the chosen device)."""
    if backend == "numpy":
        return np.asarray(array)
    import torch

    return torch.as_tensor(np.ascontiguousarray(array), device=device)


def to_numpy(array: Any) -> np.ndarray:
    if is_torch_array(array):
        return array.detach().cpu().numpy()
    return np.asarray(array)


# NumPy implements the array API itself from 2.1 (cumulative_prod, astype, matrix_transpose, linalg.diagonal, ...):
# NumPy arrays then get NumPy's own functions. array-api-compat's Python wrappers of them (clip, concat, astype) cost
# more than the arithmetic in the kernels' steps of a few numbers each: the eOT kernel's 1e4 steps took 8.8 s through
# them and 5.7 s without, with the same bits.
NUMPY_IS_ITS_OWN_NAMESPACE = tuple(int(p) for p in np.__version__.split(".")[:2]) >= (2, 1)


def namespace(*arrays: Any) -> Any:
    """The array namespace of the arrays: NumPy itself for NumPy arrays (from NumPy 2.1), else array-api-compat's."""
    if NUMPY_IS_ITS_OWN_NAMESPACE and arrays and all(isinstance(a, (np.ndarray, np.generic)) for a in arrays):
        return np
    return array_namespace(*arrays)


@contextlib.contextmanager
def torch_cpu_single_thread(backend: str = "torch", device: str = "cpu") -> Iterator[None]:
    """torch on one CPU thread for the block when it computes on the CPU: loops of many small tensors,
    where more threads only spin (ten to a hundred times slower on a loaded 2-core machine); nothing
    changes on CUDA or for NumPy."""
    if backend != "torch" or not str(device).startswith("cpu"):
        yield
        return
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)
