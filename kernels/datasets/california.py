"""California Housing (claim L5): scikit-learn's eight features and target / 1e5, 20640 rows.

Looks in the data directory first (`california_housing.npz`, else the raw StatLib `cal_housing.data`,
converted here), verifies the file's sha256 and the known figures (row 0, target mean); then falls
back to `sklearn.datasets.fetch_california_housing` (its own cache and download) unless downloads are
forbidden; else raises DataUnavailable naming the file and the option.
"""

from __future__ import annotations

import zipfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from kernels.datasets import DataCorrupt, downloads_allowed, find_file, unavailable, verify_sha256

NPZ_NAME, RAW_NAME = "california_housing.npz", "cal_housing.data"
SHA256 = {
    NPZ_NAME: "f6743bf75d07d3360be746911897f2cfd0345b374ac854bba855efef7b346967",
    RAW_NAME: "d3d8a1a722ae78f91134862727d27a70b1415e7d512a89140406248687f4b902",
}
FEATURE_NAMES = ("MedInc", "HouseAge", "AveRooms", "AveBedrms", "Population", "AveOccup", "Latitude", "Longitude")
ROWS = 20640
# Known figures (kernels/datasets/README.md), given to the printed digits.
ROW0 = np.array([8.3252, 41.0, 6.984127, 1.02381, 322.0, 2.555556, 37.88, -122.23])
ROW0_TARGET = 4.526
TARGET_MEAN = 2.068558


@dataclass(frozen=True)
class California:
    data: np.ndarray  # (20640, 8) float64, columns FEATURE_NAMES
    target: np.ndarray  # (20640,) float64, median house value / 1e5
    source: str  # the file read, or "sklearn.datasets.fetch_california_housing"


def from_statlib(table: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The raw StatLib columns (longitude, latitude, housingMedianAge, totalRooms, totalBedrooms,
    population, households, medianIncome, medianHouseValue) in scikit-learn's form."""
    lon, lat, age, rooms, bedrooms, population, households, income, value = table.T
    data = np.column_stack(
        [income, age, rooms / households, bedrooms / households, population, population / households, lat, lon]
    )
    return data, value / 100_000.0


def check_figures(data: np.ndarray, target: np.ndarray, source: str) -> None:
    """DataCorrupt unless the shapes, row 0 and the target mean are the known ones."""
    if data.shape != (ROWS, 8) or target.shape != (ROWS,):
        raise DataCorrupt(f"{source}: shapes {data.shape} and {target.shape}, expected ({ROWS}, 8) and ({ROWS},)")
    if not (np.all(np.isfinite(data)) and np.all(np.isfinite(target))):
        raise DataCorrupt(f"{source}: non-finite values")
    # row 0 is printed to at most 6 decimals, the target mean to 6
    if not np.allclose(data[0], ROW0, rtol=0, atol=5e-6) or abs(target[0] - ROW0_TARGET) > 1e-12:
        raise DataCorrupt(
            f"{source}: row 0 is {data[0].tolist()} / {target[0]}, expected {ROW0.tolist()} / {ROW0_TARGET}"
        )
    if abs(float(target.mean()) - TARGET_MEAN) > 1e-6:
        raise DataCorrupt(f"{source}: target mean {target.mean():.7f}, expected {TARGET_MEAN}")


def _read_npz(path: Path) -> tuple[np.ndarray, np.ndarray]:
    try:
        with np.load(path, allow_pickle=False) as archive:
            names = (
                tuple(str(n) for n in archive["feature_names"]) if "feature_names" in archive.files else FEATURE_NAMES
            )
            data, target = (
                np.asarray(archive["data"], dtype=np.float64),
                np.asarray(archive["target"], dtype=np.float64),
            )
    except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile) as error:
        raise DataCorrupt(f"{path}: unreadable npz ({error})") from None
    if names != FEATURE_NAMES:
        raise DataCorrupt(f"{path}: feature names {names}, expected {FEATURE_NAMES}")
    return data, target


def _read_raw(path: Path) -> tuple[np.ndarray, np.ndarray]:
    try:
        table = np.loadtxt(path, delimiter=",", dtype=np.float64, ndmin=2)
    except ValueError as error:
        raise DataCorrupt(f"{path}: unreadable StatLib table ({error})") from None
    if table.shape[1] != 9:
        raise DataCorrupt(f"{path}: {table.shape[1]} columns, expected 9")
    return from_statlib(table)


def load_california(data_dir: Path | str | None, *, verify_checksum: bool = True) -> California:
    """The data set from the data directory, else scikit-learn's download; DataUnavailable otherwise."""
    data_dir = Path(data_dir) if data_dir is not None else None
    path = find_file(data_dir, NPZ_NAME, RAW_NAME)
    if path is not None:
        if verify_checksum:
            verify_sha256(path, SHA256[path.name])
        data, target = (_read_npz if path.name == NPZ_NAME else _read_raw)(path)
        check_figures(data, target, str(path))
        return California(data, target, str(path))
    if not downloads_allowed():
        raise unavailable(f"{NPZ_NAME} or {RAW_NAME}", data_dir, "downloads forbidden (CLAIMS_NO_DOWNLOAD=1)")
    try:
        from sklearn.datasets import fetch_california_housing

        bunch = fetch_california_housing()
    except Exception as error:  # network, cache or archive errors all mean: not available here
        raise unavailable(
            f"{NPZ_NAME} or {RAW_NAME}",
            data_dir,
            f"sklearn fetch_california_housing failed ({type(error).__name__}: {' '.join(str(error).split())})",
        ) from None
    source = "sklearn.datasets.fetch_california_housing"
    data, target = np.asarray(bunch.data, dtype=np.float64), np.asarray(bunch.target, dtype=np.float64)
    check_figures(data, target, source)
    return California(data, target, source)
