"""Atomic file writes: the data goes to a temporary file in the target's folder, which is then renamed over the
target, so a reader sees the old file or the new one whole, never half of one, and a failed write leaves nothing."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def atomic_write(path: Path, data: bytes, *, sync: bool = True) -> None:
    """Write `data` to `path` atomically (creating its folder); `sync` flushes it to the disk before the rename."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name + ".", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            if sync:
                os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
