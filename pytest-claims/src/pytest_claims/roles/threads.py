"""BLAS, OpenMP and torch threads: each xdist worker's set to its share of the cores, a serial run's on request.

N workers whose NumPy (OpenBLAS, MKL) or torch each start a pool as large as the machine oversubscribe it: a
NumPy-heavy project ran slower with `-n 2` than serially (issue 37). Each worker therefore sets, before the
project's conftests are imported, the thread-count variables the libraries read when they load
(OMP_NUM_THREADS, OPENBLAS_NUM_THREADS, MKL_NUM_THREADS, ...) to cores // workers; for a library already loaded
(a plugin imported NumPy first) threadpoolctl limits its pools where threadpoolctl is installed, and torch, if
imported, gets torch.set_num_threads. The plugin imports neither NumPy nor torch. A variable the user set is left
alone (the user chose). Off with `--claims-no-thread-limit` or the ini key `claims_thread_limit = false`.

A run without workers keeps the libraries' own pools unless the ini key `claims_serial_threads` is a count N > 0:
then, once collection finishes (the test modules have loaded NumPy or torch), threadpoolctl limits the loaded BLAS
pools and torch.set_num_threads the torch pool to N, never through the environment (so nothing a test starts
inherits it); not under xdist, not where the user set a thread variable, not with the thread limit off. Measured
(a claim suite of small products: 40 x 40 Gram matrices of a few thousand columns, batch-1 steps, on a shared
2-core machine): two of its test groups ran in 82 and 33 s with OpenBLAS's default two threads against 27 and 19 s
with one (user time 46 and 25 s against 17 and 16 s), where a second thread only waits.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from typing import Any

VARIABLES = (
    "OMP_NUM_THREADS",
    "OPENBLAS_NUM_THREADS",
    "MKL_NUM_THREADS",
    "BLIS_NUM_THREADS",
    "VECLIB_MAXIMUM_THREADS",
    "NUMEXPR_NUM_THREADS",
)
CHOSEN_VARIABLE = "PYTEST_CLAIMS_WORKER_THREADS"  # set in each worker to what it applied (tests and tools read it)


def cores() -> int:
    """The cores this process may run on (its affinity, where the platform says), else the machine's."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def share(workers: int, available: int | None = None) -> int:
    return max(1, (available if available is not None else cores()) // max(1, workers))


def enabled(config: Any) -> bool:
    """Whether the thread limit is on (early: options are read from the known arguments, ini from the file)."""
    namespace = getattr(config, "known_args_namespace", None) or config.option
    if getattr(namespace, "claims_no_thread_limit", False):
        return False
    try:
        return bool(config.getini("claims_thread_limit"))
    except (ValueError, KeyError):
        return True


def user_set() -> list[str]:
    return [name for name in VARIABLES if name in os.environ]


def limit_this_worker(workers: int) -> dict[str, Any]:
    """Set this worker's thread pools to its share; return what was done (for the header and the tests)."""
    threads = share(workers)
    found: dict[str, Any] = {"threads": threads, "workers": workers, "cores": cores(), "how": []}
    if user_set():
        found["how"].append("left as set: " + ", ".join(f"{n}={os.environ[n]}" for n in user_set()))
        return found
    for name in VARIABLES:
        os.environ[name] = str(threads)
    found["how"].append("environment")
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        pass
    else:
        threadpool_limits(limits=threads)  # the pools of libraries already loaded; later ones read the variables
        found["how"].append("threadpoolctl")
    torch = sys.modules.get("torch")
    if torch is not None and hasattr(torch, "set_num_threads"):
        torch.set_num_threads(threads)
        found["how"].append("torch.set_num_threads")
    os.environ[CHOSEN_VARIABLE] = str(threads)
    return found


CONTROLLER_VARIABLE = "PYTEST_CLAIMS_CONTROLLER_PID"  # set by an active controller before xdist starts its workers


def mark_controller() -> str | None:
    """Name this process as the controller its xdist workers inherit (returns the value it replaced)."""
    before = os.environ.get(CONTROLLER_VARIABLE)
    os.environ[CONTROLLER_VARIABLE] = str(os.getpid())
    return before


def unmark_controller(before: str | None) -> None:
    if before is None:
        os.environ.pop(CONTROLLER_VARIABLE, None)
    else:
        os.environ[CONTROLLER_VARIABLE] = before


def in_worker() -> int:
    """The xdist worker count if this process is a worker of an active pytest-claims controller, else 0. Early (before
    xdist sets config.workerinput) only the environment tells: xdist's PYTEST_XDIST_WORKER alone is inherited by any
    process a worker starts (a pytest run inside a test), so the parent must also be the controller that marked
    itself (mark_controller)."""
    if "PYTEST_XDIST_WORKER" not in os.environ or os.environ.get(CONTROLLER_VARIABLE) != str(os.getppid()):
        return 0
    try:
        return int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    except ValueError:
        return 0


def distributing(config: Any) -> bool:
    """Whether this process is an xdist controller with workers (`-n N`, N > 0) or one of its workers."""
    return bool(getattr(config.option, "numprocesses", None)) or hasattr(config, "workerinput")


def serial_applies(config: Any, count: int) -> bool:
    """Whether a run limits its own threads to `count` (claims_serial_threads): a count above 0, no xdist controller
    or worker (workers get their share), the thread limit on, and no thread variable the user set."""
    return count > 0 and not distributing(config) and enabled(config) and not user_set()


def limit_serial(count: int) -> str:
    """Set the loaded BLAS pools (threadpoolctl, where installed) and torch (if imported) to `count` threads; return
    what was set ("nothing loaded" where neither is)."""
    done = []
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        pass
    else:
        threadpool_limits(limits=count, user_api="blas")
        done.append("BLAS (threadpoolctl)")
    torch = sys.modules.get("torch")
    if torch is not None and hasattr(torch, "set_num_threads"):
        torch.set_num_threads(count)
        done.append("torch")
    return ", ".join(done) or "nothing loaded"


def serial_line(count: int) -> str:
    return (
        f"claims: {count} BLAS/torch thread(s) in this process once collected (ini claims_serial_threads; a thread "
        "variable such as OPENBLAS_NUM_THREADS set in the environment, or --claims-no-thread-limit, leaves them)"
    )


def header_line(config: Any, serial: int = 0) -> str | None:
    """The one line saying what each worker gets, or, in a run without workers, what claims_serial_threads = `serial`
    sets (0: none); None when neither applies or the limit is turned off."""
    workers = getattr(config.option, "numprocesses", None)
    if not isinstance(workers, int) or workers < 1 or getattr(config.option, "dist", "no") == "no":
        return serial_line(serial) if serial_applies(config, serial) else None
    if not enabled(config):
        return "claims: worker threads left as they are (--claims-no-thread-limit / claims_thread_limit = false)"
    if user_set():
        return f"claims: worker threads left as set in the environment ({', '.join(user_set())})"
    line = (
        f"claims: each of {workers} xdist workers limits BLAS/OpenMP/torch to {share(workers)} thread(s) "
        f"({cores()} cores; turn off with --claims-no-thread-limit or ini claims_thread_limit = false)"
    )
    if importlib.util.find_spec("threadpoolctl") is None:  # the variables reach only libraries loaded after them
        line += (
            "; threadpoolctl is not installed, so a BLAS loaded before the plugin (NumPy imported by another plugin) "
            "keeps its own thread count (pip install threadpoolctl)"
        )
    return line
