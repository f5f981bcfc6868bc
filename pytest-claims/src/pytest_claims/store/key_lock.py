"""The result store's per-key lock, once taken: its holder's record beside it (pid, host, test, since), touched every
HEARTBEAT_SECONDS while the holder computes, so that a waiter can name the holder and tell a live one from a stopped
one (pytest_claims.store.result_store decides what to do with that)."""

from __future__ import annotations

import json
import os
import platform
import threading
import time
from pathlib import Path

from filelock import FileLock

from pytest_claims.store import codec
from pytest_claims.store.atomic import atomic_write

HEARTBEAT_SECONDS = 2.0


def holder(record: Path) -> str:
    """Who holds a key's lock, from the record its holder keeps beside it."""
    try:
        found = json.loads(codec.read_bounded(record, 4096))
        since = time.strftime("%H:%M:%S UTC", time.gmtime(float(found["since"])))
        test = f", test {found['test']}" if found.get("test") else ""
        return f"pid {int(found['pid'])} on host {found['host']} (since {since}{test})"
    except (OSError, ValueError, TypeError, KeyError, AttributeError, RecursionError, codec.EntryInvalid):
        return "a process that left no record of itself"


def sign_of_life(record: Path) -> int | None:
    try:
        return os.lstat(record).st_mtime_ns
    except OSError:
        return None


class HeldLock:
    """A key's lock, taken, with its holder's record beside it, touched every HEARTBEAT_SECONDS until released."""

    def __init__(self, lock: FileLock, record: Path, test: str) -> None:
        self.lock, self.record = lock, record
        self._stop = threading.Event()
        mine = {"pid": os.getpid(), "host": platform.node(), "test": test, "since": time.time()}
        try:
            atomic_write(record, json.dumps(mine).encode(), sync=False)
        except OSError:
            pass  # no record (a full disk): a waiter cannot name this process, and nothing else changes
        self._beat = threading.Thread(target=self._touch, name="pytest-claims store lock heartbeat", daemon=True)
        self._beat.start()

    def _touch(self) -> None:
        while not self._stop.wait(HEARTBEAT_SECONDS):
            try:
                os.utime(self.record, follow_symlinks=False)
            except OSError:
                pass

    def release(self) -> None:
        self._stop.set()
        self._beat.join(timeout=10)
        try:
            self.record.unlink(missing_ok=True)
        except OSError:
            pass
        self.lock.release()
