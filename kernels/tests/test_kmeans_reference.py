"""Reference tests of the k-means kernels: the seed's data and results, scikit-learn, brute force,
the Gram and Wishart routes against the explicit one, and NumPy against PyTorch."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose, assert_array_equal
from scipy import stats

from suite_plugin.options import gpu_device, gpu_size
from kernels import kmeans as km
from kernels.backend import to_backend, to_numpy

GOLDEN = json.loads((Path(__file__).parent / "golden" / "kmeans_seed_smoke.json").read_text())
SEED = GOLDEN["master_seed"]
SEED_SMOKE_GRID = [(d, s2) for s2 in (1.0, 100.0) for d in (20, 200, 2_000, 10_000)]
SEED_FULL_GRID = [(d, s2) for s2 in (1.0, 10.0, 50.0, 100.0) for d in (10, 30, 100, 300, 1_000, 3_000, 10_000)]


def _digest(*arrays: np.ndarray) -> str:
    h = hashlib.sha256()
    for a in arrays:
        h.update(np.ascontiguousarray(a).tobytes())
    return h.hexdigest()


@pytest.mark.smoke
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_trial_data_is_the_seed_scripts_bit_for_bit(dtype):
    for rec in GOLDEN["trials"]:
        data, truth, start = km.make_trials(SEED, rec["dimension"], rec["sigma2"], [rec["trial"]], dtype=dtype)
        assert _digest(data[0], truth[0], start[0]) == rec[f"data_sha256_{dtype}"], rec


@pytest.mark.smoke
def test_seed_smoke_results_reproduced_exactly():
    """Explicit route in the seed's float32: every trial's flags, counts and NMI, and the summary."""
    for cell in GOLDEN["summary"]:
        d, s2 = cell["dimension"], cell["sigma2"]
        data, truth, start = km.make_trials(SEED, d, s2, cell["trials"], dtype=np.float32)
        lloyd = km.lloyd(data, start, 2, route="explicit")
        hartigan = km.hartigan(data, start, 2, route="explicit")
        got = {
            "init_lloyd_fixed": lloyd.initial_fixed.astype(int),
            "init_hartigan_fixed": hartigan.initial_fixed.astype(int),
            "lloyd_iterations": lloyd.iterations,
            "hartigan_sweeps": hartigan.iterations,
            "lloyd_nmi": km.nmi(truth, lloyd.labels),
            "hartigan_nmi": km.nmi(truth, hartigan.labels),
        }
        trials = sorted(
            (r for r in GOLDEN["trials"] if r["dimension"] == d and r["sigma2"] == s2), key=lambda r: r["trial"]
        )
        for field, values in got.items():
            assert_array_equal(values, [r[field] for r in trials], err_msg=f"{field} at d={d}, sigma2={s2}")
        assert got["lloyd_nmi"].mean() == pytest.approx(cell["lloyd_nmi_mean"], abs=1e-15)
        assert got["hartigan_nmi"].mean() == pytest.approx(cell["hartigan_nmi_mean"], abs=1e-15)
        assert got["init_lloyd_fixed"].mean() == cell["init_lloyd_fixed_rate"]
        assert got["init_hartigan_fixed"].mean() == cell["init_hartigan_fixed_rate"]


def _routes_agree(grid, trials):
    for d, s2 in grid:
        data, _, partition = km.make_trials(SEED, d, s2, trials)
        gram = km.gram_matrix(data)
        for start in km.STARTS:
            explicit_start = km.start_labels(data, partition, 2, route="explicit", start=start)
            gram_start = km.start_labels(gram, partition, 2, route="gram", start=start)
            assert_array_equal(gram_start, explicit_start)
            for algorithm in (km.lloyd, km.hartigan):
                explicit = algorithm(data, explicit_start, 2, route="explicit")
                via_gram = algorithm(gram, gram_start, 2, route="gram")
                assert_array_equal(
                    via_gram.labels, explicit.labels, err_msg=f"{algorithm.__name__} d={d} s2={s2} {start}"
                )
                assert_array_equal(via_gram.initial_fixed, explicit.initial_fixed)


@pytest.mark.smoke
def test_gram_route_gives_explicit_labels_on_seed_smoke_grid():
    _routes_agree(SEED_SMOKE_GRID, 10)


@pytest.mark.full
@pytest.mark.parametrize("d, sigma2", SEED_FULL_GRID)
def test_gram_route_gives_explicit_labels_on_seed_full_grid(d, sigma2):
    _routes_agree([(d, sigma2)], 50)


@pytest.mark.smoke
@settings(max_examples=200)
@given(
    st.integers(1, 30).flatmap(
        lambda n: st.tuples(
            st.lists(st.integers(0, 3), min_size=n, max_size=n), st.lists(st.integers(0, 4), min_size=n, max_size=n)
        )
    )
)
def test_nmi_equals_scikit_learn(pair):
    from sklearn.metrics import normalized_mutual_info_score

    a, b = (np.array(x)[None] for x in pair)
    assert abs(km.nmi(a, b)[0] - normalized_mutual_info_score(a[0], b[0])) <= 1e-12


@pytest.mark.smoke
def test_nmi_equals_scikit_learn_on_grid_labels():
    from sklearn.metrics import normalized_mutual_info_score

    data, truth, partition = km.make_trials(SEED, 2000, 100.0, 30)
    labels = km.hartigan(data, partition, 2, route="explicit").labels
    ours = km.nmi(truth, labels)
    theirs = [normalized_mutual_info_score(t, p) for t, p in zip(truth, labels)]
    assert np.max(np.abs(ours - theirs)) <= 1e-12


@pytest.mark.smoke
@pytest.mark.parametrize("d, sigma2", [(20, 1.0), (200, 10.0), (2_000, 100.0)])
def test_lloyd_voronoi_start_matches_scikit_learn_kmeans(d, sigma2):
    from sklearn.cluster import KMeans

    data, _, partition = km.make_trials(SEED, d, sigma2, 10)
    start = km.start_labels(data, partition, 2, route="explicit", start="voronoi")
    ours = km.lloyd(data, start, 2, route="explicit").labels
    means, _ = km.cluster_means(data, partition, 2)
    for t in range(len(data)):
        fitted = KMeans(2, init=means[t], n_init=1, tol=0, max_iter=300, algorithm="lloyd").fit(data[t])
        assert_array_equal(ours[t], fitted.labels_, err_msg=f"trial {t}")


def _brute_force_sse(data, labels, k):
    means = np.stack([data[labels == c].mean(axis=0) for c in range(k)])
    return float(((data - means[labels]) ** 2).sum())


@pytest.mark.smoke
@pytest.mark.parametrize("d, sigma2", [(20, 1.0), (200, 100.0), (2_000, 100.0), (10_000, 100.0)])
def test_every_hartigan_endpoint_has_no_improving_single_move(d, sigma2):
    data, _, partition = km.make_trials(SEED, d, sigma2, 8)
    run = km.hartigan(km.gram_matrix(data), partition, 2, route="gram")
    assert run.converged.all()
    for t in range(len(data)):
        labels = run.labels[t]
        base = _brute_force_sse(data[t], labels, 2)
        for i in range(labels.size):
            if np.sum(labels == labels[i]) < 2:
                continue
            moved = labels.copy()
            moved[i] = 1 - labels[i]
            assert _brute_force_sse(data[t], moved, 2) >= base * (1 - 1e-12), (
                f"trial {t}: moving point {i} lowers the SSE"
            )


@pytest.mark.smoke
def test_lloyd_never_moves_a_point_to_an_equally_near_mean():
    # Point 2 is at distance 1 from both means (1 and 3): a strict Lloyd step leaves it alone.
    data = np.array([[[0.0], [2.0], [3.0]]])
    for labels in ([0, 0, 1], [1, 1, 0]):
        run = km.lloyd(data, np.array([labels]), 2, route="explicit")
        assert bool(run.initial_fixed[0]) and run.labels[0].tolist() == labels


@pytest.mark.smoke
def test_hartigan_never_moves_on_an_exact_tie():
    # Point 2: leaving {0, 2} costs 2/1 * 1 = 2, joining {4} costs 1/2 * 2^2 = 2; no strict gain, no move.
    data = np.array([[[0.0], [2.0], [4.0]]])
    for route, arrays in (("explicit", data), ("gram", km.gram_matrix(data))):
        run = km.hartigan(arrays, np.array([[0, 0, 1]]), 2, route=route)
        assert bool(run.initial_fixed[0]) and run.labels[0].tolist() == [0, 0, 1], route


@pytest.mark.smoke
def test_hartigan_stops_on_a_tie_that_rounding_breaks():
    # Found by K1's seeded search (master seed 1): keeping -1 in {-1, -2, -2} costs (2/3)^2 * 3/2 = 2/3 and moving
    # it to {0, 0} costs 1 * 2/3 = 2/3; the rounded costs differ, and a strict '<' on them cycled for ever.
    data = np.array([[[0.0], [0.0], [-1.0], [-2.0], [-2.0]]])
    for route, arrays in (("explicit", data), ("gram", km.gram_matrix(data))):
        run = km.hartigan(arrays, np.array([[0, 1, 0, 0, 0]]), 2, route=route)
        assert bool(run.converged[0]), f"{route}: Hartigan cycled on a tie ({run.labels[0].tolist()})"
        assert _brute_force_sse(data[0], run.labels[0], 2) <= _brute_force_sse(data[0], np.array([0, 1, 0, 0, 0]), 2)


# Wishart route versus explicit route, in distribution. Each comparison is a two-sample test at
# level ALPHA / (number of comparisons), so the whole test false-alarms with probability <= ALPHA.
ALPHA = 1e-3
WISHART_CELLS = [(50, 100.0), (1_000, 100.0), (1_000, 10.0)]


@pytest.mark.smoke
def test_wishart_route_matches_explicit_route_in_distribution():
    trials, comparisons, pvalues = 600, 0, {}
    entries = {"G_00": (0, 0), "G_01 same cluster": (0, 1), "G_0,39 other cluster": (0, 39)}
    for d, s2 in WISHART_CELLS:
        data, _, start_explicit = km.make_trials(SEED, d, s2, trials)
        g_explicit = km.gram_matrix(data)
        g_wishart, _, start_wishart = km.sample_gram_wishart(SEED, d, s2, trials)
        for name, (i, j) in entries.items():
            pvalues[f"d={d} s2={s2} {name}"] = stats.ks_2samp(g_explicit[:, i, j], g_wishart[:, i, j]).pvalue
            # and against the model's exact first moment: E G_ii = d (tau2 + s2), E G_ij = d tau2 or 0
            expected = d * (1 + s2) if i == j else (d if j < 20 else 0.0)
            z = (g_wishart[:, i, j].mean() - expected) / (g_wishart[:, i, j].std(ddof=1) / np.sqrt(trials))
            pvalues[f"d={d} s2={s2} {name} mean"] = 2 * stats.norm.sf(abs(z))
        cells = {
            "explicit": km.paired_cell(SEED, d, s2, trials, source="explicit"),
            "wishart": km.paired_cell(SEED, d, s2, trials, source="wishart"),
        }
        for flag in ("lloyd_initial_fixed", "hartigan_initial_fixed"):
            a, b = (int(c[flag].sum()) for c in cells.values())
            pvalues[f"d={d} s2={s2} {flag}"] = stats.fisher_exact([[a, trials - a], [b, trials - b]]).pvalue
        for score in ("lloyd_nmi", "hartigan_nmi"):
            pvalues[f"d={d} s2={s2} {score}"] = stats.ks_2samp(cells["explicit"][score], cells["wishart"][score]).pvalue
    comparisons = len(pvalues)
    rejected = {k: p for k, p in pvalues.items() if p < ALPHA / comparisons}
    assert not rejected, f"Wishart and explicit routes differ (Bonferroni level {ALPHA / comparisons:.2g}): {rejected}"


@pytest.mark.smoke
def test_wishart_trials_do_not_depend_on_the_trial_count():
    small = km.sample_gram_wishart(SEED, 10**9, 100.0, 5)
    large = km.sample_gram_wishart(SEED, 10**9, 100.0, 12)
    for a, b in zip(small, large):
        assert_array_equal(a, b[:5])


@pytest.mark.smoke
@pytest.mark.parametrize("route", km.ROUTES)
def test_numpy_and_torch_backends_agree(route):
    data, _, partition = km.make_trials(SEED, 2_000, 100.0, 12)
    arrays = data if route == "explicit" else km.gram_matrix(data)
    torch_arrays, torch_partition = to_backend(arrays, "torch"), to_backend(partition, "torch")
    d_np, _ = km.sq_distances(arrays, partition, 2, route)
    d_torch, _ = km.sq_distances(torch_arrays, torch_partition, 2, route)
    assert_allclose(to_numpy(d_torch), d_np, rtol=1e-12)
    for algorithm in (km.lloyd, km.hartigan):
        ours = algorithm(arrays, partition, 2, route=route)
        theirs = algorithm(torch_arrays, torch_partition, 2, route=route)
        assert_array_equal(to_numpy(theirs.labels), ours.labels)
        assert_array_equal(to_numpy(theirs.iterations), ours.iterations)


@pytest.mark.gpu
def test_cuda_backend_agrees_with_numpy(options):
    device = gpu_device(options)  # the CPU in a rehearsal (--gpu-rehearsal), at a tenth of the trials
    trials, cell_trials = gpu_size(options, (2000, 500), (200, 50))
    gram, _, partition = km.sample_gram_wishart(SEED, 10**6, 100.0, trials)
    ours = km.hartigan(gram, partition, 2, route="gram")
    theirs = km.hartigan(to_backend(gram, "torch", device), to_backend(partition, "torch", device), 2, route="gram")
    assert_array_equal(to_numpy(theirs.labels), ours.labels)
    cell_np = km.paired_cell(SEED, 10**9, 100.0, cell_trials, source="wishart")
    cell_cuda = km.paired_cell(SEED, 10**9, 100.0, cell_trials, source="wishart", backend="torch", device=device)
    # Labels, flags and counts agree exactly. The data fingerprint is the trace of G, a sum of n = 40
    # positive diagonal entries, which another backend adds in another order: each is within 39 eps of the
    # exact sum (recursive summation's bound), so within 78 eps of each other, not bit for bit (the
    # rehearsal on the CPU found a difference of 1 ulp).
    for key in cell_np:
        if key == "data_fingerprint":
            assert_allclose(cell_cuda[key], cell_np[key], rtol=78 * np.finfo(np.float64).eps, atol=0, err_msg=key)
        else:
            assert_array_equal(cell_cuda[key], cell_np[key], err_msg=key)
