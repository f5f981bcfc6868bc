"""The report directory's lock: one run (or one merge's write) at a time in a report directory, the second refused in
one line that names the run holding it; a lock file that is a link or not a file is refused, never followed."""

from __future__ import annotations

import datetime as dt
import errno
import json
import os
import platform
import stat
import sys
from pathlib import Path

from filelock import FileLock, Timeout

from pytest_claims.store import codec
from pytest_claims.store.atomic import atomic_write

try:
    import fcntl
except ImportError:  # Windows: filelock, after an lstat check
    fcntl = None  # type: ignore[assignment]

LOCK_FILE = ".claims-report.lock"
OWNER_FILE = ".claims-report.owner"  # who holds the lock: named in the refusal of a second run


class ReportDirectoryBusy(Exception):
    """Another run holds the report directory, or its lock file cannot be used (a link, not a file)."""


class ReportDirectoryLock:
    """An exclusive lock on a report directory (an OS file lock: released when its process ends, however it ends).

    The lock file is opened here, not by filelock: with O_NOFOLLOW and never truncated nor written, so a lock file
    that is a symbolic link is refused in one line rather than followed out of the report directory (filelock
    before 3.20.1 opened it with O_TRUNC and no O_NOFOLLOW: a link's target was emptied). fcntl.flock is the lock
    filelock's UnixFileLock takes, so a run of an older plugin and this one still exclude each other."""

    def __init__(self, directory: Path, report_id: str) -> None:
        self.directory = Path(directory)
        self.report_id = report_id
        self.path = self.directory / LOCK_FILE
        self._fd: int | None = None
        self._other: FileLock | None = None  # where there is no fcntl (Windows): filelock, after an lstat check

    def _refuse_link(self) -> None:
        try:
            mode = os.lstat(self.path).st_mode
        except FileNotFoundError:
            return
        except OSError as error:
            raise ReportDirectoryBusy(f"the report lock {self.path} cannot be examined ({error.strerror})") from None
        if stat.S_ISLNK(mode):
            raise ReportDirectoryBusy(
                f"the report lock {self.path} is a symbolic link (to {os.readlink(self.path)}), not a file: this run "
                "will not follow it out of the report directory; remove the link"
            )
        if not stat.S_ISREG(mode):
            raise ReportDirectoryBusy(f"the report lock {self.path} is not a regular file; remove it")

    def acquire(self) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        if fcntl is None:
            self._refuse_link()
            self._other = FileLock(str(self.path), timeout=0)
            try:
                self._other.acquire()
            except Timeout:
                raise self._busy() from None
        else:
            self._fd = self._open()
            try:
                fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError as error:
                os.close(self._fd)
                self._fd = None
                if error.errno in (errno.EAGAIN, errno.EWOULDBLOCK, errno.EACCES):
                    raise self._busy() from None
                raise ReportDirectoryBusy(f"the report lock {self.path} cannot be taken ({error.strerror})") from None
        owner = {"report_id": self.report_id, "pid": os.getpid(), "host": platform.node(), "command": sys.argv[:6]}
        owner["started"] = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
        try:
            atomic_write(self.directory / OWNER_FILE, (json.dumps(owner) + "\n").encode())
        except OSError:  # the lock holds without it; a second run's refusal then names less
            pass

    def _open(self) -> int:
        flags = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NONBLOCK", 0)
        try:
            fd = os.open(self.path, flags, 0o644)
        except OSError as error:
            self._refuse_link()  # ELOOP: a link; say so, and where it points
            raise ReportDirectoryBusy(f"the report lock {self.path} cannot be opened ({error.strerror})") from None
        if not stat.S_ISREG(os.fstat(fd).st_mode):  # a FIFO or a device opens; it is no lock file
            os.close(fd)
            raise ReportDirectoryBusy(f"the report lock {self.path} is not a regular file; remove it")
        return fd

    def _busy(self) -> ReportDirectoryBusy:
        return ReportDirectoryBusy(
            f"the report directory {self.directory} is in use by {self._holder()}; wait for it to end, or give "
            "this run a directory of its own (-o claims_report_dir=DIR; a merge: -o DIR)"
        )

    def _holder(self) -> str:
        try:
            owner = json.loads(codec.read_bounded(self.directory / OWNER_FILE, 65536))
            return (
                f"run {owner['report_id']} (pid {owner['pid']} on {owner['host']}, started {owner['started']}: "
                f"{' '.join(str(a) for a in owner['command'])})"
            )
        except (OSError, ValueError, KeyError, TypeError, codec.EntryInvalid):
            return "another run (its owner file is unreadable)"

    def release(self) -> None:
        if self._fd is not None:
            try:
                fcntl.flock(self._fd, fcntl.LOCK_UN)
            finally:
                os.close(self._fd)
                self._fd = None
        if self._other is not None:
            self._other.release()
            self._other = None
