"""Paper K kernels: balanced-partition GMM trials, Lloyd, Hartigan, fixed-point tests, SSE and NMI.

Every algorithm is batched over trials (leading axis) and written once for NumPy and PyTorch through
array-api-compat. Two routes reach the same decisions:

* explicit: data X (trials, n, d); squared distances to explicit cluster means, O(n k d) per step.
  This is the reference route (the seed script's arithmetic, operation for operation).
* Gram: G = X X^T (trials, n, n); ||x_i - mean(C)||^2 = G_ii - 2 S_iC / |C| + Q_C / |C|^2 with
  S_iC = sum_{j in C} G_ij and Q_C = sum_{j, l in C} G_jl. Hartigan costs O(n k) per point visit.
  ``sample_gram_wishart`` draws G directly (Bartlett decomposition), at a cost independent of d.

Conventions (CLAIMS.md, Paper K): Lloyd moves a point only to a strictly nearer mean; Hartigan visits
points in index order and moves x from a (|a| >= 2) to the b minimising |b|/(|b|+1) ||x - c_b||^2
when that is strictly below |a|/(|a|-1) ||x - c_a||^2; a singleton never moves; an empty cluster has
no mean (Lloyd never assigns to it; Hartigan may move a point into it at cost 0).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from kernels.backend import namespace, to_numpy, torch_cpu_single_thread
from kernels.seeding import key_seed, fixed_rng

ROUTES = ("explicit", "gram")
STARTS = ("partition", "voronoi")


# ---------------------------------------------------------------------------------------------
# Data


def trial_key(master_seed: int, k: int, n: int, dimension: int, sigma2: float, trial: int) -> str:
    """The seed script's per-trial key (its trial data is reproduced bit for bit from it)."""
    return f"section4|{master_seed}|{k}|{n}|{dimension}|{sigma2:.17g}|{trial}"


def true_partition(k: int, n: int) -> np.ndarray:
    if n % k:
        raise ValueError(f"n={n} must be a multiple of k={k} for a balanced partition")
    return np.repeat(np.arange(k, dtype=np.int64), n // k)


def make_trials(
    master_seed: int,
    dimension: int,
    sigma2: float,
    trials: int | Sequence[int],
    *,
    k: int = 2,
    n: int = 40,
    tau2: float = 1.0,
    dtype: Any = np.float64,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Explicit trials: data (T, n, d), true labels (T, n), balanced random start (T, n).

    Per trial: centres ~ N(0, tau2 I), then noise ~ N(0, sigma2 I), then a permutation of the true
    label multiset, all from the generator of ``trial_key`` (so trial t is the same whatever else
    is drawn). The per-trial generator is what makes the data the seed's; it is the one loop here.
    """
    if dimension <= 0:
        raise ValueError(f"dimension must be positive, got {dimension}")
    indices = range(trials) if isinstance(trials, int) else list(trials)
    dtype = np.dtype(dtype)
    labels = true_partition(k, n)
    data = np.empty((len(indices), n, dimension), dtype=dtype)
    initial = np.empty((len(indices), n), dtype=np.int64)
    for row, trial in enumerate(indices):
        rng = np.random.default_rng(key_seed(trial_key(master_seed, k, n, dimension, sigma2, trial)))
        centres = rng.standard_normal((k, dimension), dtype=dtype)
        centres *= np.asarray(np.sqrt(tau2), dtype=dtype)
        noise = rng.standard_normal((n, dimension), dtype=dtype)
        noise *= np.asarray(np.sqrt(sigma2), dtype=dtype)
        data[row] = centres[labels] + noise
        initial[row] = rng.permutation(labels)
    return data, np.broadcast_to(labels, initial.shape).copy(), initial


def sample_gram_wishart(
    master_seed: int,
    dimension: int,
    sigma2: float,
    trials: int,
    *,
    k: int = 2,
    n: int = 40,
    tau2: float = 1.0,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Gram matrices G = X X^T of the same model, drawn without forming X: (T, n, n) float64.

    X = A W with A = [tau onehot(y) | sigma I_n] and W ~ N(0, 1)^{(k+n) x d}, so G = (A L)(A L)^T
    with L L^T = W W^T ~ Wishart(d, I_{k+n}). For d >= k + n, L is drawn by the Bartlett
    decomposition (L_ii^2 ~ chi2(d - i), L_ij ~ N(0, 1) below the diagonal): cost independent of d.
    For smaller d, W itself is drawn. Each quantity has its own keyed stream, filled trial by trial,
    so the first T trials of a cell are the same whatever the trial count.
    """
    if dimension <= 0:
        raise ValueError(f"dimension must be positive, got {dimension}")
    labels = true_partition(k, n)
    m = k + n
    cell = f"kmeans/wishart|{master_seed}|{k}|{n}|{dimension}|{sigma2:.17g}"
    normals = fixed_rng(cell + "|normal")
    if dimension >= m:
        factor = normals.standard_normal((trials, m, m))
        factor = np.tril(factor, -1)
        dof = dimension - np.arange(m, dtype=np.float64)
        chi2 = fixed_rng(cell + "|chi2").chisquare(np.broadcast_to(dof, (trials, m)))
        idx = np.arange(m)
        factor[:, idx, idx] = np.sqrt(chi2)
    else:
        factor = normals.standard_normal((trials, m, dimension))
    mixed = np.sqrt(tau2) * factor[:, labels, :] + np.sqrt(sigma2) * factor[:, k:, :]
    gram = mixed @ np.swapaxes(mixed, 1, 2)
    initial = fixed_rng(cell + "|start").permuted(np.broadcast_to(labels, (trials, n)), axis=1)
    return gram, np.broadcast_to(labels, (trials, n)).copy(), initial


def gram_matrix(data: Any) -> Any:
    xp = namespace(data)
    return xp.matmul(data, xp.matrix_transpose(data))


# ---------------------------------------------------------------------------------------------
# Distances to cluster means


def onehot(labels: Any, k: int, dtype: Any) -> Any:
    xp = namespace(labels)
    clusters = xp.arange(k, device=getattr(labels, "device", None))
    return xp.astype(labels[..., None] == clusters, dtype)


def cluster_means(data: Any, labels: Any, k: int) -> tuple[Any, Any]:
    """Means (T, k, d) as masked sums over points (the reference arithmetic) and counts (T, k).

    An empty cluster gets a zero vector and count 0.
    """
    xp = namespace(data)
    sums, counts = [], []
    for cluster in range(k):
        mask = xp.astype(labels == cluster, data.dtype)
        counts.append(xp.sum(mask, axis=1))
        sums.append(xp.sum(data * mask[:, :, None], axis=1))
    count = xp.stack(counts, axis=1)
    means = xp.stack(sums, axis=1) / xp.maximum(count, xp.ones_like(count))[:, :, None]
    return means, count


def sq_distances_explicit(data: Any, labels: Any, k: int) -> tuple[Any, Any]:
    """Squared distances (T, n, k) of every point to every explicit cluster mean, and counts.

    An empty cluster is at distance +inf.
    """
    xp = namespace(data)
    means, count = cluster_means(data, labels, k)
    columns = [xp.sum((data - means[:, cluster, None, :]) ** 2, axis=-1) for cluster in range(k)]
    dist = xp.stack(columns, axis=-1)
    return xp.where(count[:, None, :] > 0, dist, xp.asarray(xp.inf, dtype=dist.dtype)), count


def sq_distances_gram(gram: Any, labels: Any, k: int) -> tuple[Any, Any]:
    """The same squared distances from the Gram matrix alone, O(n^2 k) for all points."""
    xp = namespace(gram)
    member = onehot(labels, k, gram.dtype)
    sums = xp.matmul(gram, member)  # S_iC
    count = xp.sum(member, axis=1)
    within = xp.sum(member * sums, axis=1)  # Q_C
    safe = xp.maximum(count, xp.ones_like(count))
    diag = xp.linalg.diagonal(gram)
    dist = diag[:, :, None] - 2.0 * sums / safe[:, None, :] + (within / safe**2)[:, None, :]
    return xp.where(count[:, None, :] > 0, dist, xp.asarray(xp.inf, dtype=dist.dtype)), count


def sq_distances(data_or_gram: Any, labels: Any, k: int, route: str) -> tuple[Any, Any]:
    if route == "explicit":
        return sq_distances_explicit(data_or_gram, labels, k)
    if route == "gram":
        return sq_distances_gram(data_or_gram, labels, k)
    raise ValueError(f"unknown route {route!r}; choose one of {ROUTES}")


def _own(dist: Any, labels: Any) -> Any:
    xp = namespace(dist)
    return xp.take_along_axis(dist, labels[..., None], axis=-1)[..., 0]


# ---------------------------------------------------------------------------------------------
# Fixed-point tests (strict inequalities; use float64)


def lloyd_step(dist: Any, labels: Any) -> Any:
    """One simultaneous reassignment: a point moves only to a strictly nearer mean."""
    xp = namespace(dist)
    nearest = xp.argmin(dist, axis=-1)
    nearest_dist = xp.min(dist, axis=-1)
    return xp.where(nearest_dist < _own(dist, labels), nearest, labels)


def is_lloyd_fixed(dist: Any, labels: Any) -> Any:
    """(T,) True where no point is strictly closer to another mean than to its own."""
    xp = namespace(dist)
    return xp.all(_own(dist, labels) <= xp.min(dist, axis=-1), axis=-1)


def _hartigan_costs(dist: Any, count: Any, own: Any) -> tuple[Any, Any]:
    """Cost of leaving the own cluster (+inf-safe) and of joining each cluster, seed arithmetic.

    leave = D_a n_a / (n_a - 1) (-inf for a singleton, which never moves);
    join_b = D_b n_b / (n_b + 1) (0 for an empty cluster, +inf for the own cluster).
    """
    xp = namespace(dist)
    own_count = xp.sum(xp.where(own, count, xp.zeros_like(count)), axis=-1)
    own_dist = xp.sum(xp.where(own, dist, xp.zeros_like(dist)), axis=-1)
    one = xp.ones_like(own_count)
    leave = xp.where(
        own_count >= 2,
        own_dist * own_count / xp.maximum(own_count - 1.0, one),
        xp.full_like(own_count, -xp.inf),
    )
    finite = xp.where(count > 0, dist, xp.zeros_like(dist))
    join = finite * count / (count + 1.0)
    join = xp.where(own, xp.full_like(join, xp.inf), join)
    return leave, join


def is_hartigan_fixed(dist: Any, labels: Any, count: Any) -> Any:
    """(T,) True where no single Hartigan move is a strict improvement."""
    xp = namespace(dist)
    own = onehot(labels, dist.shape[-1], dist.dtype) > 0
    leave, join = _hartigan_costs(dist, count[:, None, :], own)
    return xp.all(xp.min(join, axis=-1) >= leave, axis=-1)


# ---------------------------------------------------------------------------------------------
# Algorithms


@dataclass
class Run:
    """Outcome of one batched run: labels (T, n) and per-trial flags/counts."""

    labels: Any
    iterations: Any  # Lloyd steps or Hartigan sweeps, the final no-change one included
    converged: Any
    initial_fixed: Any  # the start was already a fixed point (first step/sweep changed nothing)


def lloyd(data_or_gram: Any, initial_labels: Any, k: int, *, route: str, max_iter: int = 100) -> Run:
    xp = namespace(data_or_gram)
    labels = xp.asarray(initial_labels, copy=True)
    trials = labels.shape[0]
    active = xp.ones(trials, dtype=xp.bool, device=getattr(labels, "device", None))
    iterations = xp.zeros(trials, dtype=xp.int64, device=getattr(labels, "device", None))
    initial_fixed = None
    for step in range(max_iter):
        dist, _ = sq_distances(data_or_gram, labels, k, route)
        proposed = lloyd_step(dist, labels)
        changed = xp.any(proposed != labels, axis=1) & active
        if step == 0:
            initial_fixed = ~changed
        iterations = iterations + xp.astype(active, xp.int64)
        labels = xp.where(changed[:, None], proposed, labels)
        active = changed
        if not bool(xp.any(active)):
            break
    return Run(labels, iterations, ~active, initial_fixed)


# A move must lower the cost by more than this many units of rounding of the larger cost. On a tie in exact
# arithmetic (a point as costly to keep as to move) that its two rounded costs do not show, a strict '<' moved the
# point and then moved it back, for ever: hypothesis found one under master seed 1 (data [0, 0, -1, -2, -2], labels
# [0, 1, 0, 0, 0], k = 2: keeping -1 costs 4/9 * 3/2, moving it 1 * 2/3, both 2/3). A real gain is a factor of at
# least n_a (n_b + 1) / ((n_a - 1) n_b) on the distances, far above this margin.
TIE_ULPS = 64


def _hartigan_decision(dist: Any, count: Any, current: Any, k: int, active: Any) -> tuple[Any, Any]:
    xp = namespace(dist)
    own = onehot(current, k, dist.dtype) > 0
    leave, join = _hartigan_costs(dist, count, own)
    target = xp.argmin(join, axis=-1)
    best = xp.min(join, axis=-1)
    margin = TIE_ULPS * xp.finfo(dist.dtype).eps * xp.maximum(xp.abs(best), xp.abs(leave))  # inf for a singleton
    move = (best < leave - margin) & active
    return move, target


def hartigan(data_or_gram: Any, initial_labels: Any, k: int, *, route: str, max_sweeps: int = 100) -> Run:
    if route not in ROUTES:
        raise ValueError(f"unknown route {route!r}; choose one of {ROUTES}")
    xp = namespace(data_or_gram)
    dtype = data_or_gram.dtype
    labels = xp.asarray(initial_labels, copy=True)
    trials, n = labels.shape
    device = getattr(labels, "device", None)
    active = xp.ones(trials, dtype=xp.bool, device=device)
    iterations = xp.zeros(trials, dtype=xp.int64, device=device)
    initial_fixed = None
    diag = xp.linalg.diagonal(data_or_gram) if route == "gram" else None
    for sweep in range(max_sweeps):
        before = xp.asarray(labels, copy=True)
        # Means (or Gram sums) are rebuilt once per sweep so rounding cannot drift; every accepted
        # move still updates them immediately.
        if route == "explicit":
            means, count = cluster_means(data_or_gram, labels, k)
        else:
            member = onehot(labels, k, dtype)
            count = xp.sum(member, axis=1)
            within = xp.sum(member * xp.matmul(data_or_gram, member), axis=1)
        for i in range(n):
            current = labels[:, i]
            if route == "explicit":
                point = data_or_gram[:, i, :]
                dist = xp.sum((point[:, None, :] - means) ** 2, axis=2)
            else:
                sums = xp.matmul(data_or_gram[:, i, None, :], member)[:, 0, :]
                safe = xp.maximum(count, xp.ones_like(count))
                dist = diag[:, i, None] - 2.0 * sums / safe + within / safe**2
            move, target = _hartigan_decision(dist, count, current, k, active)
            leaving = xp.astype(onehot(current, k, dtype) > 0, dtype) * xp.astype(move, dtype)[:, None]
            joining = xp.astype(onehot(target, k, dtype) > 0, dtype) * xp.astype(move, dtype)[:, None]
            if route == "explicit":
                cnt = count[:, :, None]
                removed = (means * cnt - point[:, None, :]) / xp.maximum(cnt - 1.0, xp.ones_like(cnt))
                added = (means * cnt + point[:, None, :]) / (cnt + 1.0)
                means = xp.where(leaving[:, :, None] > 0, removed, xp.where(joining[:, :, None] > 0, added, means))
            else:
                gii = diag[:, i, None]
                within = within + joining * (2.0 * sums + gii) - leaving * (2.0 * sums - gii)
                member[:, i, :] = xp.where(move[:, None], onehot(target, k, dtype), member[:, i, :])
            count = count + joining - leaving
            labels[:, i] = xp.where(move, target, current)
        changed = xp.any(labels != before, axis=1)
        if sweep == 0:
            initial_fixed = ~changed
        iterations = iterations + xp.astype(active, xp.int64)
        active = active & changed
        if not bool(xp.any(active)):
            break
    return Run(labels, iterations, ~active, initial_fixed)


def start_labels(data_or_gram: Any, partition: Any, k: int, *, route: str, start: str) -> Any:
    """The labels both algorithms start from: the random partition, or its Voronoi reassignment."""
    if start == "partition":
        return partition
    if start == "voronoi":
        xp = namespace(data_or_gram)
        dist, _ = sq_distances(data_or_gram, partition, k, route)
        return xp.argmin(dist, axis=-1)
    raise ValueError(f"unknown start {start!r}; choose one of {STARTS}")


# ---------------------------------------------------------------------------------------------
# Normalised mutual information (arithmetic normalisation, natural log: scikit-learn's default)


def nmi(labels_true: Any, labels_pred: Any) -> np.ndarray:
    """NMI per trial (T,) in float64; labels are non-negative integers."""
    a = to_numpy(labels_true).astype(np.int64)
    b = to_numpy(labels_pred).astype(np.int64)
    if a.shape != b.shape or a.ndim != 2 or a.shape[1] == 0:
        raise ValueError(f"NMI needs two (trials, n) label arrays of equal shape, got {a.shape} and {b.shape}")
    n = a.shape[1]
    onehot_a = (a[:, :, None] == np.arange(a.max() + 1)).astype(np.float64)
    onehot_b = (b[:, :, None] == np.arange(b.max() + 1)).astype(np.float64)
    joint = np.einsum("tia,tib->tab", onehot_a, onehot_b) / n
    pa, pb = joint.sum(axis=2), joint.sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = joint / (pa[:, :, None] * pb[:, None, :])
        mi = np.where(joint > 0, joint * np.log(np.where(joint > 0, ratio, 1.0)), 0.0).sum(axis=(1, 2))
        ha = -np.where(pa > 0, pa * np.log(np.where(pa > 0, pa, 1.0)), 0.0).sum(axis=1)
        hb = -np.where(pb > 0, pb * np.log(np.where(pb > 0, pb, 1.0)), 0.0).sum(axis=1)
        both_trivial = (ha == 0) & (hb == 0)
        value = np.where(both_trivial, 1.0, np.where(mi <= 0, 0.0, 2.0 * mi / (ha + hb)))
    return np.clip(value, 0.0, 1.0)


# ---------------------------------------------------------------------------------------------
# One grid cell: Lloyd and Hartigan on the same data and start, batched over trials


def paired_cell(
    master_seed: int,
    dimension: int,
    sigma2: float,
    trials: int,
    *,
    source: str,
    start: str = "partition",
    backend: str = "numpy",
    device: str = "cpu",
    k: int = 2,
    n: int = 40,
    tau2: float = 1.0,
) -> dict[str, np.ndarray]:
    """Run both algorithms on one (d, sigma2) cell through the Gram route, in float64.

    source "explicit" draws the seed's trial data X and forms G = X X^T; "wishart" draws G directly.
    Returns per-trial NumPy arrays (flags, NMI, iterations, the endpoint fixed-point tests).
    """
    from kernels.backend import to_backend

    if source == "explicit":
        data, truth, partition = make_trials(master_seed, dimension, sigma2, trials, k=k, n=n, tau2=tau2)
        gram = gram_matrix(to_backend(data, backend, device))
        del data
    elif source == "wishart":
        gram_np, truth, partition = sample_gram_wishart(master_seed, dimension, sigma2, trials, k=k, n=n, tau2=tau2)
        gram = to_backend(gram_np, backend, device)
    else:
        raise ValueError(f"unknown source {source!r}; choose explicit or wishart")
    initial = start_labels(gram, to_backend(partition, backend, device), k, route="gram", start=start)
    lloyd_run = lloyd(gram, initial, k, route="gram")
    hartigan_run = hartigan(gram, initial, k, route="gram")
    dist, count = sq_distances_gram(gram, hartigan_run.labels, k)
    trace = xp_sum_diagonal(gram)
    return {
        "lloyd_initial_fixed": to_numpy(lloyd_run.initial_fixed),
        "hartigan_initial_fixed": to_numpy(hartigan_run.initial_fixed),
        "lloyd_converged": to_numpy(lloyd_run.converged),
        "hartigan_converged": to_numpy(hartigan_run.converged),
        "lloyd_iterations": to_numpy(lloyd_run.iterations),
        "hartigan_sweeps": to_numpy(hartigan_run.iterations),
        "lloyd_nmi": nmi(truth, lloyd_run.labels),
        "hartigan_nmi": nmi(truth, hartigan_run.labels),
        "start_nmi": nmi(truth, initial),
        "hartigan_endpoint_lloyd_fixed": to_numpy(is_lloyd_fixed(dist, hartigan_run.labels)),
        "hartigan_endpoint_hartigan_fixed": to_numpy(is_hartigan_fixed(dist, hartigan_run.labels, count)),
        "data_fingerprint": to_numpy(trace),  # trace of G per trial: distinct trials have distinct data
    }


def xp_sum_diagonal(gram: Any) -> Any:
    """trace(G) per trial (T,)."""
    xp = namespace(gram)
    return xp.sum(xp.linalg.diagonal(gram), axis=-1)


def explicit_cell(
    master_seed: int,
    dimension: int,
    sigma2: float,
    trials: int,
    *,
    backend: str = "numpy",
    device: str = "cpu",
    chunk: int | None = None,
    k: int = 2,
    n: int = 40,
    tau2: float = 1.0,
) -> dict[str, Any]:
    """Both algorithms on the seed script's own data by the explicit route (its arithmetic, O(n k d) per
    step), from the random partition, in float64, `chunk` trials at a time so that memory stays at
    chunk x n x d; and the same data through the Gram route, whose labels must be the explicit ones.

    The data are drawn on the host (NumPy, bit for bit the seed's) and moved to the device chunk by
    chunk. Returns per-trial NumPy arrays, and the device the arrays were computed on.
    """
    chunk = chunk or trials
    if chunk <= 0 or trials <= 0:
        raise ValueError(f"trials and chunk must be positive, got {trials} and {chunk}")
    with torch_cpu_single_thread(backend, device):
        return _explicit_cell(master_seed, dimension, sigma2, trials, backend, device, chunk, k, n, tau2)


def _explicit_cell(master_seed, dimension, sigma2, trials, backend, device, chunk, k, n, tau2) -> dict[str, Any]:
    from kernels.backend import to_backend

    parts: list[dict[str, np.ndarray]] = []
    used_device = ""
    for first in range(0, trials, chunk):
        indices = list(range(first, min(first + chunk, trials)))
        host, truth, partition = make_trials(master_seed, dimension, sigma2, indices, k=k, n=n, tau2=tau2)
        data = to_backend(host, backend, device)
        del host
        used_device = str(getattr(data, "device", "cpu"))
        start = to_backend(partition, backend, device)
        lloyd_x = lloyd(data, start, k, route="explicit")
        hartigan_x = hartigan(data, start, k, route="explicit")
        gram = gram_matrix(data)
        del data
        lloyd_g = lloyd(gram, start, k, route="gram")
        hartigan_g = hartigan(gram, start, k, route="gram")
        parts.append(
            {
                "lloyd_initial_fixed": to_numpy(lloyd_x.initial_fixed),
                "hartigan_initial_fixed": to_numpy(hartigan_x.initial_fixed),
                "lloyd_converged": to_numpy(lloyd_x.converged),
                "hartigan_converged": to_numpy(hartigan_x.converged),
                "lloyd_nmi": nmi(truth, lloyd_x.labels),
                "hartigan_nmi": nmi(truth, hartigan_x.labels),
                "gram_lloyd_agrees": np.all(to_numpy(lloyd_g.labels) == to_numpy(lloyd_x.labels), axis=1),
                "gram_hartigan_agrees": np.all(to_numpy(hartigan_g.labels) == to_numpy(hartigan_x.labels), axis=1),
                "data_fingerprint": to_numpy(xp_sum_diagonal(gram)),
            }
        )
    out: dict[str, Any] = {name: np.concatenate([p[name] for p in parts]) for name in parts[0]}
    out["device"] = used_device
    return out
