"""One mutant's test run in a process of its own (a `--mutants` run, serial or on an xdist worker, where the OS can
fork): what the mutant does stays there. A mutant that never returns is stopped at a time limit and ends `timeout`;
one that ends or crashes its process (os._exit, a segfault, a signal) ends `crashed`, named, and the run goes on to
its reports.
Neither is a kill: each fails the power check as an unexplained errored end does.

The limit is derived from the real test's time, which ran before its mutants: FACTOR times it plus GRACE seconds
(ini keys claims_mutant_time_factor, default 10, and claims_mutant_time_grace, default 30 s; mutation tools such as
mutmut count a timeout against a multiple of the real test's time in the same way). The real test's time counts the
results it read ready-made (computed by an earlier test, or read from the store, at the seconds their computation
took): the mutant's results are keyed apart and recomputed, so a test that only read a shared result would otherwise
give its mutant GRACE seconds for all of that result's computation. Where the real test's time is not known in this
process (an xdist worker that ran other tests), the longest statement test time known there (counted the same way)
or given in the committed .test_durations for this run's statement tests stands in for it, and the end says so.

The child is a fork of the run: it applies the mutant, runs the statement test, classifies how it ended and sends
that result (a MutantResult, as JSON) back through a pipe; nothing else of it returns. It runs in a process group
of its own, so a timeout stops what it started too; the run's SIGTERM or Ctrl-C stops it before the run ends.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import select
import signal
import sys
import time
import warnings
from dataclasses import asdict
from typing import Any, Callable

import pytest

from pytest_claims.outcomes import CRASHED, ERROR
from pytest_claims.model.verdicts import END_CRASHED, END_TIMEOUT, MutantResult
from pytest_claims.roles.options import Settings

FACTOR_INI, GRACE_INI = "claims_mutant_time_factor", "claims_mutant_time_grace"
FACTOR, GRACE = 10.0, 30.0
_CHILD_FAILED = 70  # the child's own machinery failed (not the test): its message comes through the pipe


def can_fork() -> bool:
    return hasattr(os, "fork") and hasattr(os, "killpg")


def time_limit(
    settings: Settings, real_seconds: float | None, longest_known: float, reused_seconds: float = 0.0
) -> tuple[float, str]:
    """(seconds, how they were derived) for one mutant of a test that took `real_seconds` (None: not known here)
    and read `reused_seconds` of computation ready-made (from memory or the store), which its mutant may recompute."""
    values = []
    for key, raw in ((FACTOR_INI, settings.mutant_time_factor), (GRACE_INI, settings.mutant_time_grace)):
        try:
            value = float(raw)
        except (TypeError, ValueError):
            value = float("nan")
        if not value >= 0 or value == float("inf"):
            raise pytest.UsageError(
                f"ini {key} must be a non-negative number of {'times' if key == FACTOR_INI else 'seconds'}, got {raw!r}"
            )
        values.append(value)
    factor, grace = values
    if real_seconds is None:
        base = longest_known
        what = (
            f"the longest statement test's {longest_known:.1f} s (run here or committed in .test_durations; "
            "this test's time unknown here)"
        )
    elif reused_seconds > 0:
        base = real_seconds + reused_seconds
        what = (
            f"(the real test's {real_seconds:.1f} s + {reused_seconds:.1f} s of results it read ready-made, "
            "which the mutant may recompute)"
        )
    else:
        base, what = real_seconds, f"the real test's {real_seconds:.1f} s"
    limit = factor * base + grace
    if not limit < math.inf:  # a limit never reached is none (and select() takes no inf or NaN): one line, no hang
        raise pytest.UsageError(
            f"ini {FACTOR_INI} ({factor:g}) x {base:g} s + {GRACE_INI} ({grace:g} s) is past any number of seconds: "
            "lower them"
        )
    return limit, f"{factor:g} x {what} + {grace:g} s = {limit:.0f} s (ini {FACTOR_INI}, {GRACE_INI})"


def _die_with_parent() -> None:
    """Linux: the child is killed if the run dies without stopping it (a SIGKILL), not left holding its files."""
    with contextlib.suppress(Exception):
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def _child(work: Callable[[], MutantResult], write_fd: int) -> None:
    """In the fork: run `work`, send its result, and leave without running any of the run's exit machinery."""
    status = 0
    try:
        os.setpgid(0, 0)
        _die_with_parent()
        for kind in (signal.SIGTERM, signal.SIGINT):  # the run's handlers turn these into KeyboardInterrupt
            signal.signal(kind, signal.SIG_DFL)
        message = json.dumps(asdict(work())).encode()
    except BaseException as error:  # noqa: BLE001 (anything here must reach the run as one line, not a traceback)
        status = _CHILD_FAILED
        message = json.dumps({"error": f"{type(error).__name__}: {error}"[:300]}).encode()
    try:
        view = memoryview(message)
        while view:
            view = view[os.write(write_fd, view) :]
        for stream in (sys.stdout, sys.stderr):
            stream.flush()
    finally:
        os._exit(status)


def _stop(pid: int) -> None:
    for kill in (lambda: os.killpg(pid, signal.SIGKILL), lambda: os.kill(pid, signal.SIGKILL)):
        with contextlib.suppress(OSError):
            kill()
            return


def _ended(status: int) -> str:
    if os.WIFSIGNALED(status):
        number = os.WTERMSIG(status)
        try:
            name = signal.Signals(number).name
        except ValueError:
            name = f"signal {number}"
        return f"killed by {name}"
    return f"exited with status {os.WEXITSTATUS(status)}"


def run_forked(name: str, work: Callable[[], MutantResult], limit: float, derived: str) -> MutantResult:
    """Mutant `name`'s result from `work` run in a child process stopped after `limit` seconds."""
    read_fd, write_fd = os.pipe()
    with warnings.catch_warnings():
        # Python 3.12 warns of fork in a threaded process (an xdist worker has execnet's IO thread): the child uses
        # no lock that thread holds (it runs the test with log=False, writes only to its pipe, then os._exit)
        warnings.simplefilter("ignore", DeprecationWarning)
        pid = os.fork()
    if pid == 0:
        os.close(read_fd)
        _child(work, write_fd)
    os.close(write_fd)
    chunks: list[bytes] = []
    timed_out = False
    try:
        deadline = time.monotonic() + limit
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                timed_out = True
                _stop(pid)
                break
            ready, _, _ = select.select([read_fd], [], [], min(remaining, 1.0))
            if ready:
                chunk = os.read(read_fd, 1 << 16)
                if not chunk:  # the child closed the pipe: it has ended, one way or another
                    break
                chunks.append(chunk)
        _, status = os.waitpid(pid, 0)
    except BaseException:  # SIGTERM or Ctrl-C in the run: stop the child before the run ends
        _stop(pid)
        with contextlib.suppress(OSError):
            os.waitpid(pid, 0)
        raise
    finally:
        os.close(read_fd)
    if timed_out:
        return MutantResult(name, False, ERROR, f"no end within the time limit ({derived}): stopped", END_TIMEOUT)
    found: Any = None
    with contextlib.suppress(ValueError):
        found = json.loads(b"".join(chunks) or b"null")
    if os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0 and isinstance(found, dict) and "mutant" in found:
        return MutantResult(**{k: found[k] for k in MutantResult.__dataclass_fields__ if k in found})
    why = f": {found['error']}" if isinstance(found, dict) and "error" in found else " before its test ended"
    return MutantResult(name, False, CRASHED, f"the process running the mutant {_ended(status)}{why}", END_CRASHED)
