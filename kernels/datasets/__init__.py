"""The real data sets, one loader per data set (no pytest inside).

Each loader looks in the data directory first (the suite's `--data-dir` / `$CLAIMS_DATA_DIR`),
verifies what it reads against known checksums and figures, and falls back to the ecosystem's own
download where a user has a network. When neither gives the data it raises `DataUnavailable`,
whose message is one line naming the file and the option (the suite turns it into a skip); a file
that is there but wrong raises `DataCorrupt` (the suite turns it into an error, never a verdict).

The notes on each data set (origin, layout, checksums, known figures) are in README.md beside this
module.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

DATA_DIR_OPTION = "--data-dir / $CLAIMS_DATA_DIR"
# Set to 1 to forbid every network fallback (tests of the skip path; machines without a network).
NO_DOWNLOAD_ENV = "CLAIMS_NO_DOWNLOAD"


class DataUnavailable(RuntimeError):
    """The data set is neither in the data directory nor downloadable: the claim is skipped."""


class DataCorrupt(ValueError):
    """A data file is present but is not what it should be (checksum, shape or known figures)."""


def downloads_allowed() -> bool:
    return os.environ.get(NO_DOWNLOAD_ENV, "") not in ("1", "true", "yes")


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def verify_sha256(path: Path, expected: str) -> None:
    """Raise DataCorrupt (naming the file and both digests) unless the file's sha256 is `expected`."""
    got = sha256_of(path)
    if got != expected:
        raise DataCorrupt(f"{path}: sha256 {got} differs from the known {expected} (truncated or altered file?)")


def find_file(data_dir: Path | None, *names: str) -> Path | None:
    """The first of `names` present in the data directory, or None."""
    if data_dir is None:
        return None
    for name in names:
        path = Path(data_dir) / name
        if path.is_file():
            return path
    return None


def unavailable(names: str, data_dir: Path | None, fallback_error: str) -> DataUnavailable:
    """The one-line reason for a missing data set: the file, the option, and why the download failed."""
    where = f"not in {data_dir}" if data_dir is not None else "no data directory given"
    return DataUnavailable(
        f"data file {names} needed ({where}; pass {DATA_DIR_OPTION}); download fallback: {fallback_error}"
    )
