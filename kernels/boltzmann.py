"""Paper B kernels: the Gaussian mixture read as a Gaussian-categorical Boltzmann machine.

E(v, h = e_k) = 1/2 sum_i (v_i - mu_ki)^2 / sigma_ki^2 + 1/2 sum_i ln sigma_ki^2 - ln pi_k.
Arrays: v (N, D), means (K, D), variances (K, D), weights pi (K,). NumPy and PyTorch through
array-api-compat; random draws come from keyed generators (NumPy PCG64, or a seeded torch.Generator).
"""

from __future__ import annotations

import itertools
import math
from typing import Any

import numpy as np
from scipy.special import roots_hermite

from kernels.backend import namespace, to_numpy, torch_cpu_single_thread
from kernels.seeding import key_seed, fixed_rng


def component_energies(v: Any, means: Any, variances: Any, weights: Any, *, log_det: bool = True) -> Any:
    """E(v, e_k) for every point and cluster: (N, K). log_det=False drops 1/2 sum ln sigma^2 (a mutant)."""
    xp = namespace(v, means)
    diff = v[:, None, :] - means[None, :, :]
    energy = 0.5 * xp.sum(diff**2 / variances[None, :, :], axis=-1) - xp.log(weights)[None, :]
    if log_det:
        energy = energy + 0.5 * xp.sum(xp.log(variances), axis=-1)[None, :]
    return energy


def cluster_logits(v: Any, means: Any, variances: Any, weights: Any, *, log_det: bool = True) -> Any:
    """theta(v) = -E(v, e_k): (N, K)."""
    return -component_energies(v, means, variances, weights, log_det=log_det)


def softmax(logits: Any) -> Any:
    xp = namespace(logits)
    shifted = logits - xp.max(logits, axis=-1, keepdims=True)
    expo = xp.exp(shifted)
    return expo / xp.sum(expo, axis=-1, keepdims=True)


def responsibilities(v: Any, means: Any, variances: Any, weights: Any) -> Any:
    """p(h = e_k | v) = softmax(theta(v)): (N, K)."""
    return softmax(cluster_logits(v, means, variances, weights))


def component_densities(v: Any, means: Any, variances: Any) -> Any:
    """N(v | mu_k, diag sigma_k^2) evaluated directly (normalised): (N, K)."""
    xp = namespace(v, means)
    diff = v[:, None, :] - means[None, :, :]
    quad = xp.sum(diff**2 / variances[None, :, :], axis=-1)
    norm = xp.sqrt(xp.prod(2.0 * math.pi * variances, axis=-1))
    return xp.exp(-0.5 * quad) / norm[None, :]


def mixture_moments(means: np.ndarray, variances: np.ndarray, weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Mean and per-coordinate variance of the mixture."""
    mean = weights @ means
    second = weights @ (variances + means**2)
    return mean, second - mean**2


# ---------------------------------------------------------------------------------------------
# Linear visible-hidden coupling (shared sigma)


def coupling_from_means(
    a: np.ndarray, sigma: np.ndarray, weights_w: np.ndarray, pi: np.ndarray, *, complete_square: bool = True
):
    """mu_k = a + diag(sigma) W_:k and c_k = ln pi_k - a^T diag(sigma)^-1 W_:k - 1/2 ||W_:k||^2.

    W: (D, K). complete_square=False drops the -1/2 ||W_:k||^2 term (a mutant).
    """
    means = a[None, :] + (sigma[:, None] * weights_w).T
    bias = np.log(pi) - (a / sigma) @ weights_w
    if complete_square:
        bias = bias - 0.5 * np.sum(weights_w**2, axis=0)
    return means, bias


def coupling_energies(
    v: np.ndarray, a: np.ndarray, sigma: np.ndarray, weights_w: np.ndarray, bias: np.ndarray
) -> np.ndarray:
    """E_lin(v, e_k) = sum_i (v_i - a_i)^2 / (2 sigma_i^2) - c_k - sum_i (v_i / sigma_i) W_ik: (N, K)."""
    visible = 0.5 * np.sum((v - a) ** 2 / sigma**2, axis=-1)
    return visible[:, None] - bias[None, :] - (v / sigma) @ weights_w


# ---------------------------------------------------------------------------------------------
# Sampling and block Gibbs


class KeyedNormalUniform:
    """Standard normals and uniforms from one stable key, for NumPy or torch (CPU or CUDA)."""

    def __init__(self, key: str, backend: str = "numpy", device: str = "cpu", dtype: str = "float64") -> None:
        self.backend, self.device, self.dtype = backend, device, dtype
        seed = key_seed(key)
        if backend == "numpy":
            self.rng = np.random.default_rng(seed)
        else:
            import torch

            self.rng = torch.Generator(device=device)
            self.rng.manual_seed(seed & 0x7FFF_FFFF_FFFF_FFFF)
            self.torch_dtype = getattr(torch, dtype)

    def normal(self, shape: tuple[int, ...]) -> Any:
        if self.backend == "numpy":
            return self.rng.standard_normal(shape, dtype=np.dtype(self.dtype))
        import torch

        return torch.randn(shape, generator=self.rng, device=self.device, dtype=self.torch_dtype)

    def uniform(self, shape: tuple[int, ...]) -> Any:
        if self.backend == "numpy":
            return self.rng.random(shape, dtype=np.dtype(self.dtype))
        import torch

        return torch.rand(shape, generator=self.rng, device=self.device, dtype=self.torch_dtype)


def sample_visible(labels: Any, means: Any, variances: Any, draws: KeyedNormalUniform) -> Any:
    """v ~ N(mu_h, diag sigma_h^2) for every chain: (N, D)."""
    xp = namespace(means)
    mu = xp.take(means, labels, axis=0)
    sd = xp.sqrt(xp.take(variances, labels, axis=0))
    return mu + sd * draws.normal(tuple(mu.shape))


def sample_hidden(v: Any, means: Any, variances: Any, weights: Any, draws: KeyedNormalUniform) -> Any:
    """h ~ softmax(theta(v)) for every chain, by inverse CDF on one uniform each: (N,) int64.

    h = #{j < K-1 : p_0 + ... + p_j < u}; the last bin takes any rounding remainder. The cut points
    are summed column by column (K is small), in cumsum's order, with no scan kernel on the device.
    """
    xp = namespace(v, means)
    probs = responsibilities(v, means, variances, weights)
    u = draws.uniform((v.shape[0], 1))[:, 0]
    cut = probs[:, 0]
    h = xp.astype(cut < u, xp.int64)
    for j in range(1, probs.shape[-1] - 1):
        cut = cut + probs[:, j]
        h = h + xp.astype(cut < u, xp.int64)
    return h


def sample_mixture(
    points: int, means: np.ndarray, variances: np.ndarray, weights: np.ndarray, key: str, dtype: str = "float64"
) -> tuple[np.ndarray, np.ndarray]:
    """A labelled mixture sample: counts ~ Multinomial(points, pi) from the stream `key|counts`, labels
    sorted by cluster, then v | h = e_k ~ N(mu_k, Sigma_k) from the stream `key|visible`."""
    counts = fixed_rng(key + "|counts").multinomial(points, weights)
    labels = np.repeat(np.arange(len(weights)), counts)
    draws = KeyedNormalUniform(key + "|visible", dtype=dtype)
    v = sample_visible(labels, means.astype(dtype), variances.astype(dtype), draws)
    return v, labels


def label_counts(labels: Any, k: int) -> Any:
    """How many chains hold each label: (K,) int64, on the labels' device."""
    xp = namespace(labels)
    onehot = labels[:, None] == xp.arange(k, device=getattr(labels, "device", None))
    return xp.sum(xp.astype(onehot, xp.int64), axis=0)


def gibbs_counts(
    chains: int,
    sweeps: int,
    means: Any,
    variances: Any,
    weights: Any,
    draws: KeyedNormalUniform,
    *,
    start: int = 0,
) -> np.ndarray:
    """Block Gibbs from every chain in cluster `start`; label counts after each sweep: (sweeps + 1, K) int64.

    One sweep: v ~ p(v | h), then h ~ p(h | v), for all chains at once.
    """
    xp = namespace(means)
    k = means.shape[0]
    labels = xp.full((chains,), start, dtype=xp.int64, device=getattr(means, "device", None))
    counts = [label_counts(labels, k)]
    for sweep in range(sweeps):
        v = sample_visible(labels, means, variances, draws)
        labels = sample_hidden(v, means, variances, weights, draws)
        counts.append(label_counts(labels, k))
    return np.stack([to_numpy(c) for c in counts]).astype(np.int64)


def gibbs_occupancy(
    chains: int,
    sweeps: int,
    means: Any,
    variances: Any,
    weights: Any,
    draws: KeyedNormalUniform,
    *,
    start: int = 0,
) -> np.ndarray:
    """Occupancy after each sweep, the fractions of `gibbs_counts`: (sweeps + 1, K) float64."""
    return gibbs_counts(chains, sweeps, means, variances, weights, draws, start=start) / chains


def gibbs_counts_chunked(
    chains: int,
    sweeps: int,
    means: Any,
    variances: Any,
    weights: Any,
    key: str,
    *,
    chunk: int,
    backend: str = "numpy",
    device: str = "cpu",
    dtype: str = "float64",
    start: int = 0,
) -> np.ndarray:
    """`gibbs_counts` over `chains` chains run `chunk` at a time (memory bounded by the chunk), chunk c
    drawing from the stream `key|chunk=c`; the counts are summed: (sweeps + 1, K) int64.

    The chains of different chunks are independent, so the summed counts are those of `chains`
    independent chains, whatever the chunk size; the chunk size only decides which draws they get.
    """
    if chains <= 0 or chunk <= 0:
        raise ValueError(f"chains and chunk must be positive, got {chains} and {chunk}")
    total = np.zeros((sweeps + 1, means.shape[0]), dtype=np.int64)
    with torch_cpu_single_thread(backend, device):
        for index, first in enumerate(range(0, chains, chunk)):
            draws = KeyedNormalUniform(f"{key}|chunk={index}", backend, device, dtype)
            total += gibbs_counts(min(chunk, chains - first), sweeps, means, variances, weights, draws, start=start)
    return total


# ---------------------------------------------------------------------------------------------
# The hidden chain's exact transition matrix


def transition_matrix(means: np.ndarray, variances: np.ndarray, weights: np.ndarray, order: int = 240) -> np.ndarray:
    """P_kk' = E_{v ~ N(mu_k, Sigma_k)} softmax(theta(v))_k' by tensor Gauss-Hermite quadrature (float64)."""
    nodes, w = roots_hermite(order)
    dim = means.shape[1]
    grid = np.stack(np.meshgrid(*([nodes] * dim), indexing="ij"), axis=-1).reshape(-1, dim)
    grid_w = np.prod(np.stack(np.meshgrid(*([w] * dim), indexing="ij"), axis=-1).reshape(-1, dim), axis=-1)
    grid_w = grid_w / math.pi ** (dim / 2)
    rows = []
    for k in range(means.shape[0]):
        v = means[k] + np.sqrt(2.0 * variances[k]) * grid
        resp = responsibilities(v, means, variances, weights)
        # Pairwise summation of each column (np.sum over a contiguous vector): accurate, and the same
        # bits whatever the BLAS thread count (a BLAS product here changes with it: -n 2 vs serial).
        rows.append(np.array([np.sum(grid_w * column) for column in resp.T]))
    return np.stack(rows)


def relaxation_time(transition: np.ndarray) -> tuple[float, float]:
    """(|second eigenvalue|, relaxation time -1 / ln |lambda_2|) of a transition matrix."""
    eig = np.sort(np.abs(np.linalg.eigvals(transition)))[::-1]
    return float(eig[1]), float(-1.0 / math.log(eig[1]))


# ---------------------------------------------------------------------------------------------
# Winner-take-all penalty over K binary units


def wta_enumerated(k: int, lam: float) -> tuple[np.ndarray, np.ndarray]:
    """Exact Boltzmann probabilities of all 2^K binary states under lambda (sum z - 1)^2, and the states."""
    states = np.array(list(itertools.product((0, 1), repeat=k)), dtype=np.int64)
    energy = lam * (states.sum(axis=1) - 1.0) ** 2
    weights = np.exp(-(energy - energy.min()))
    return weights / weights.sum(), states


def wta_onehot_mass_closed_form(k: int, lam: float) -> float:
    """K / (K + sum_{m != 1} C(K, m) exp(-lambda (m - 1)^2))."""
    rest = sum(math.comb(k, m) * math.exp(-lam * (m - 1) ** 2) for m in range(k + 1) if m != 1)
    return k / (k + rest)
