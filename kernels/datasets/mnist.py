"""MNIST with 25% feature-dependent label noise (claim L6).

Looks in the data directory first for the four IDX gzip files and `feature-dependent_25_ytrain.npy`;
verifies the md5 of each uncompressed IDX file, the sha256 of the noisy labels, and the known figures
(pixel mean / std, class counts, exactly 15000 of 60000 labels noisy). Where a file is missing it falls
back to a download into a cache directory (torchvision's `MNIST(download=True)` when torchvision
imports, else the original files by urllib; the noisy labels from their source repository), unless
downloads are forbidden; else it raises DataUnavailable naming the file and the option.

`load_mnist(data_dir)` reads and checks once per process; `split(mnist, seed)` gives the normalised
float32 arrays of the 50000 / 10000 train / validation split keyed by the master seed (training and
validation carry the noisy labels; the test set keeps the clean ones).
"""

from __future__ import annotations

import functools
import gzip
import hashlib
import os
import urllib.request
import zlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from kernels.datasets import DataCorrupt, downloads_allowed, find_file, sha256_of, unavailable
from kernels.seeding import keyed_rng

TRAIN_IMAGES, TRAIN_LABELS = "train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz"
TEST_IMAGES, TEST_LABELS = "t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"
NOISY_LABELS = "feature-dependent_25_ytrain.npy"
IDX_FILES = (TRAIN_IMAGES, TRAIN_LABELS, TEST_IMAGES, TEST_LABELS)
# md5 of the uncompressed bytes (the gzip wrappers differ between copies); sha256 of the npy file.
MD5 = {
    TRAIN_IMAGES: "6bbc9ace898e44ae57da46a324031adb",
    TRAIN_LABELS: "a25bea736e30d166cdddb491f175f624",
    TEST_IMAGES: "2646ac647ad5339dbf082846283269ea",
    TEST_LABELS: "27ae3e4e09519cfbb04c329615203637",
}
NOISY_SHA256 = "de6d039c527ffcbb15fd692fd63e0d0d040f30e79267315febfc04c12fc3d01b"
# Known figures (kernels/datasets/README.md).
PIXEL_MEAN, PIXEL_STD = 0.1307, 0.3081  # of the training pixels / 255, to 4 decimals; also the normalisation
CLASS_COUNTS = (5923, 6742, 5958, 6131, 5842, 5421, 5918, 6265, 5851, 5949)
NOISY_COUNT = 15000
TRAIN_SIZE, VALIDATION_SIZE = 50000, 10000

MIRRORS = ("https://ossci-datasets.s3.amazonaws.com/mnist/", "http://yann.lecun.com/exdb/mnist/")
NOISY_URL = (
    "https://github.com/gorkemalgan/corrupting_labels_with_distillation/raw/refs/heads/master/noisylabels/mnist/"
    + NOISY_LABELS
)
CACHE_ENV = "CLAIMS_CACHE_DIR"


@dataclass(frozen=True, eq=False)  # hashed by identity: loaded once per process
class Mnist:
    train_images: np.ndarray  # (60000, 28, 28) uint8
    train_labels: np.ndarray  # (60000,) int64, the true labels
    noisy_labels: np.ndarray  # (60000,) int64, the 25% feature-dependent noisy labels
    test_images: np.ndarray  # (10000, 28, 28) uint8
    test_labels: np.ndarray  # (10000,) int64, clean
    source: str


@dataclass(frozen=True, eq=False)
class MnistSplit:
    """Normalised float32 images (N, 1, 28, 28) and int64 labels of one keyed split."""

    x_train: np.ndarray
    y_train: np.ndarray  # noisy
    clean_train: np.ndarray  # the true labels of the same images (for reporting only)
    x_val: np.ndarray
    y_val: np.ndarray  # noisy, as the authors' validation set
    x_test: np.ndarray
    y_test: np.ndarray  # clean
    train_index: np.ndarray  # positions in the original 60000 training images
    val_index: np.ndarray


def _idx(raw: bytes, path: Path, dims: int) -> np.ndarray:
    """Decode an IDX file (magic 0x00000800 + ndim, big-endian sizes, uint8 payload)."""
    if len(raw) < 4 + 4 * dims or raw[:2] != b"\0\0" or raw[2] != 0x08 or raw[3] != dims:
        raise DataCorrupt(f"{path}: not an IDX uint8 file with {dims} dimensions (header {raw[:4].hex()})")
    shape = tuple(int.from_bytes(raw[4 + 4 * i : 8 + 4 * i], "big") for i in range(dims))
    payload = raw[4 + 4 * dims :]
    if len(payload) != int(np.prod(shape)):
        raise DataCorrupt(f"{path}: IDX payload of {len(payload)} bytes, header says {shape}")
    return np.frombuffer(payload, dtype=np.uint8).reshape(shape)


def _read_idx(path: Path, dims: int) -> np.ndarray:
    try:
        raw = gzip.decompress(path.read_bytes())
    except (OSError, EOFError, gzip.BadGzipFile, zlib.error) as error:
        raise DataCorrupt(f"{path}: unreadable gzip ({type(error).__name__}: {error})") from None
    md5 = hashlib.md5(raw).hexdigest()
    if md5 != MD5[path.name]:
        raise DataCorrupt(f"{path}: md5 of the uncompressed bytes {md5} differs from the known {MD5[path.name]}")
    return _idx(raw, path, dims)


def _read_noisy(path: Path) -> np.ndarray:
    got = sha256_of(path)
    if got != NOISY_SHA256:
        raise DataCorrupt(f"{path}: sha256 {got} differs from the known {NOISY_SHA256} (truncated or altered file?)")
    try:
        labels = np.load(path, allow_pickle=False)
    except (OSError, ValueError) as error:
        raise DataCorrupt(f"{path}: unreadable npy ({error})") from None
    return np.asarray(labels, dtype=np.int64)


def check_figures(mnist: Mnist) -> None:
    """DataCorrupt unless shapes, pixel mean / std, class counts and the noise count are the known ones."""
    src = mnist.source
    shapes = (
        mnist.train_images.shape,
        mnist.train_labels.shape,
        mnist.noisy_labels.shape,
        mnist.test_images.shape,
        mnist.test_labels.shape,
    )
    if shapes != ((60000, 28, 28), (60000,), (60000,), (10000, 28, 28), (10000,)):
        raise DataCorrupt(f"{src}: shapes {shapes}, expected 60000 / 10000 images of 28 x 28 with labels")
    counts_by_value = np.bincount(mnist.train_images.ravel(), minlength=256).astype(np.float64)  # exact, and fast
    values = np.arange(256) / 255.0
    mean = float(counts_by_value @ values / counts_by_value.sum())
    std = float(np.sqrt(counts_by_value @ (values - mean) ** 2 / counts_by_value.sum()))
    if round(mean, 4) != PIXEL_MEAN or round(std, 4) != PIXEL_STD:
        raise DataCorrupt(
            f"{src}: training pixel mean / std {mean:.5f} / {std:.5f}, expected {PIXEL_MEAN} / {PIXEL_STD}"
        )
    counts = tuple(int(c) for c in np.bincount(mnist.train_labels, minlength=10))
    if counts != CLASS_COUNTS:
        raise DataCorrupt(f"{src}: training class counts {counts}, expected {CLASS_COUNTS}")
    if mnist.noisy_labels.min() < 0 or mnist.noisy_labels.max() > 9:
        raise DataCorrupt(f"{src}: noisy labels outside 0..9")
    differ = int(np.sum(mnist.noisy_labels != mnist.train_labels))
    if differ != NOISY_COUNT:
        raise DataCorrupt(f"{src}: {differ} of 60000 noisy labels differ from the true ones, expected {NOISY_COUNT}")


def cache_dir() -> Path:
    root = os.environ.get(CACHE_ENV) or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "claims-verification-suite"
    )
    return Path(root) / "mnist"


def _download(missing: list[str], target: Path) -> None:
    """Fetch the missing files into `target`: torchvision if it imports, else the original files."""
    target.mkdir(parents=True, exist_ok=True)
    idx_missing = [name for name in missing if name in IDX_FILES]
    if idx_missing:
        try:
            from torchvision.datasets import MNIST  # noqa: F401
        except Exception:  # not installed, or not loadable beside this torch
            for name in idx_missing:
                _fetch_first(tuple(mirror + name for mirror in MIRRORS), target / name)
        else:
            for train in (True, False):
                MNIST(root=str(target / "torchvision"), train=train, download=True)
            for name in idx_missing:
                (target / name).write_bytes((target / "torchvision" / "MNIST" / "raw" / name).read_bytes())
    if NOISY_LABELS in missing:
        _fetch_first((NOISY_URL,), target / NOISY_LABELS)


def _fetch_first(urls: tuple[str, ...], path: Path) -> None:
    errors = []
    for url in urls:
        try:
            with urllib.request.urlopen(url, timeout=60) as response:
                data = response.read()
        except Exception as error:
            errors.append(f"{url}: {type(error).__name__}: {' '.join(str(error).split())}")
            continue
        tmp = path.with_suffix(path.suffix + ".part")
        tmp.write_bytes(data)
        os.replace(tmp, path)
        return
    raise OSError("; ".join(errors))


def _locate(data_dir: Path | None) -> dict[str, Path]:
    """Every needed file: from the data directory, else the cache, else downloaded into the cache."""
    names = (*IDX_FILES, NOISY_LABELS)
    found = {name: find_file(data_dir, name) for name in names}
    missing = [name for name, path in found.items() if path is None]
    if not missing:
        return found  # type: ignore[return-value]
    cache = cache_dir()
    for name in missing:
        found[name] = find_file(cache, name)
    still = [name for name in missing if found[name] is None]
    if still:
        if not downloads_allowed():
            raise unavailable(", ".join(still), data_dir, "downloads forbidden (CLAIMS_NO_DOWNLOAD=1)")
        try:
            _download(still, cache)
        except Exception as error:
            raise unavailable(
                ", ".join(still),
                data_dir,
                f"download into {cache} failed ({type(error).__name__}: {' '.join(str(error).split())[:300]})",
            ) from None
        for name in still:
            found[name] = find_file(cache, name)
    return found  # type: ignore[return-value]


@functools.lru_cache(maxsize=4)
def _load(data_dir: Path | None) -> Mnist:
    paths = _locate(data_dir)
    mnist = Mnist(
        train_images=_read_idx(paths[TRAIN_IMAGES], 3),
        train_labels=_read_idx(paths[TRAIN_LABELS], 1).astype(np.int64),
        noisy_labels=_read_noisy(paths[NOISY_LABELS]),
        test_images=_read_idx(paths[TEST_IMAGES], 3),
        test_labels=_read_idx(paths[TEST_LABELS], 1).astype(np.int64),
        source=", ".join(sorted({str(p.parent) for p in paths.values()})),
    )
    check_figures(mnist)
    return mnist


def load_mnist(data_dir: Path | str | None) -> Mnist:
    """MNIST and the noisy labels, verified; read once per process and data directory."""
    return _load(Path(data_dir).resolve() if data_dir is not None else None)


def normalise(images: np.ndarray) -> np.ndarray:
    """uint8 (N, 28, 28) -> float32 (N, 1, 28, 28), (x / 255 - 0.1307) / 0.3081 as the authors."""
    x = images.astype(np.float32) / np.float32(255.0)
    return ((x - np.float32(PIXEL_MEAN)) / np.float32(PIXEL_STD))[:, None, :, :]


@functools.lru_cache(maxsize=4)
def split(mnist: Mnist, seed: int) -> MnistSplit:
    """The 50000 / 10000 train / validation split of the 60000 training images, keyed by the master seed."""
    order = keyed_rng(f"{seed}|mnist|train-validation-split").permutation(60000)
    train_index, val_index = np.sort(order[:TRAIN_SIZE]), np.sort(order[TRAIN_SIZE:])
    x = normalise(mnist.train_images)
    return MnistSplit(
        x_train=x[train_index],
        y_train=mnist.noisy_labels[train_index],
        clean_train=mnist.train_labels[train_index],
        x_val=x[val_index],
        y_val=mnist.noisy_labels[val_index],
        x_test=normalise(mnist.test_images),
        y_test=mnist.test_labels.copy(),
        train_index=train_index,
        val_index=val_index,
    )
