"""The MNIST loader (claim L6): the known figures of the files, the noise rate of the noisy labels, the
keyed train / validation split, and the two failure modes (corrupt file, missing file without a network)."""

from __future__ import annotations

import gzip
import shutil

import numpy as np
import pytest

from workloads.data import dataset_or_skip
from kernels.datasets import DataCorrupt, DataUnavailable, mnist


@pytest.fixture
def loaded(options):
    return dataset_or_skip(mnist.load_mnist, options.data_dir)


@pytest.mark.smoke
def test_known_figures_and_noise_rate(loaded, options):
    m = loaded
    assert m.train_images.shape == (60000, 28, 28) and m.test_images.shape == (10000, 28, 28)
    assert tuple(np.bincount(m.train_labels, minlength=10)) == mnist.CLASS_COUNTS
    pixels = m.train_images[::7].astype(np.float64) / 255.0  # a seventh of the pixels, independently of check_figures
    assert abs(pixels.mean() - mnist.PIXEL_MEAN) < 5e-4 and abs(pixels.std() - mnist.PIXEL_STD) < 5e-4
    differ = m.noisy_labels != m.train_labels
    assert int(differ.sum()) == 15000  # exactly 25%
    assert m.noisy_labels.dtype == np.int64 and set(np.unique(m.noisy_labels)) == set(range(10))
    assert tuple(np.bincount(m.test_labels, minlength=10)) == (
        980,
        1135,
        1032,
        1010,
        982,
        892,
        958,
        1028,
        974,
        1009,
    )  # clean test labels
    assert mnist.load_mnist(options.data_dir) is m  # read once per process


@pytest.mark.smoke
def test_split_is_keyed_disjoint_and_normalised(loaded):
    a, again, other = mnist.split(loaded, 29589), mnist.split(loaded, 29589), mnist.split(loaded, 1)
    assert again is a
    assert len(a.train_index) == 50000 and len(a.val_index) == 10000
    assert len(np.intersect1d(a.train_index, a.val_index)) == 0
    assert np.array_equal(np.union1d(a.train_index, a.val_index), np.arange(60000))
    assert not np.array_equal(a.val_index, other.val_index)
    assert np.array_equal(a.y_train, loaded.noisy_labels[a.train_index]) and np.array_equal(
        a.y_val, loaded.noisy_labels[a.val_index]
    )
    assert np.array_equal(a.y_test, loaded.test_labels)  # the test set keeps its clean labels
    assert a.x_train.dtype == np.float32 and a.x_train.shape == (50000, 1, 28, 28)
    expected = (loaded.train_images[a.train_index[:5]].astype(np.float32) / 255 - 0.1307) / 0.3081
    assert np.allclose(a.x_train[:5, 0], expected, atol=1e-6)
    noise = float(np.mean(a.y_train != a.clean_train))
    assert 0.24 < noise < 0.26  # the split keeps the 25% noise rate (random split of exactly 25%)


def _copy_all(source, target):
    for name in (*mnist.IDX_FILES, mnist.NOISY_LABELS):
        shutil.copy(source / name, target / name)


@pytest.mark.smoke
def test_corrupt_files_raise_data_corrupt(options, tmp_path, monkeypatch):
    if options.data_dir is None or not (options.data_dir / mnist.TRAIN_LABELS).is_file():
        pytest.skip(f"data file {mnist.TRAIN_LABELS} needed: pass --data-dir or set $CLAIMS_DATA_DIR")
    monkeypatch.setenv("CLAIMS_NO_DOWNLOAD", "1")
    monkeypatch.setenv(mnist.CACHE_ENV, str(tmp_path / "cache"))
    truncated = tmp_path / "truncated"
    truncated.mkdir()
    _copy_all(options.data_dir, truncated)
    raw = (truncated / mnist.TRAIN_IMAGES).read_bytes()
    (truncated / mnist.TRAIN_IMAGES).write_bytes(raw[: len(raw) // 2])
    with pytest.raises(DataCorrupt, match="train-images-idx3-ubyte.gz"):
        mnist.load_mnist(truncated)
    altered = tmp_path / "altered"
    altered.mkdir()
    _copy_all(options.data_dir, altered)
    labels = bytearray(gzip.decompress((altered / mnist.TRAIN_LABELS).read_bytes()))
    labels[100] = (labels[100] + 1) % 10  # one label changed, a valid gzip all the same
    (altered / mnist.TRAIN_LABELS).write_bytes(gzip.compress(bytes(labels)))
    with pytest.raises(DataCorrupt, match="md5"):
        mnist.load_mnist(altered)
    flipped = tmp_path / "flipped"
    flipped.mkdir()
    _copy_all(options.data_dir, flipped)
    raw = bytearray((flipped / mnist.TRAIN_LABELS).read_bytes())
    raw[len(raw) // 2] ^= 0xFF  # one byte of the deflate stream: zlib.error, not a gzip header error
    (flipped / mnist.TRAIN_LABELS).write_bytes(bytes(raw))
    with pytest.raises(DataCorrupt, match=f"{mnist.TRAIN_LABELS}: unreadable gzip"):
        mnist.load_mnist(flipped)


@pytest.mark.smoke
def test_missing_data_without_network_names_the_file_and_option(tmp_path, monkeypatch):
    monkeypatch.setenv("CLAIMS_NO_DOWNLOAD", "1")
    monkeypatch.setenv(mnist.CACHE_ENV, str(tmp_path / "cache"))
    empty = tmp_path / "empty"
    empty.mkdir()
    for where in (empty, None):
        with pytest.raises(DataUnavailable) as caught:
            mnist.load_mnist(where)
        message = str(caught.value)
        assert "\n" not in message
        assert (
            mnist.TRAIN_IMAGES in message
            and mnist.NOISY_LABELS in message
            and "--data-dir" in message
            and "CLAIMS_NO_DOWNLOAD" in message
        )
