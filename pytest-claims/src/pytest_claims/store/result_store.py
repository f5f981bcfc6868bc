"""A keyed, resumable result store for expensive deterministic computations.

A result is stored under a key made of everything that determines it: a name (claim or kernel), a
configuration (seeds, tier, backend, device, sizes: any JSON-able mapping), and a hash of the source
of the code that computes it. Entries hold data only (pytest_claims.store.codec: a zip of a JSON header and `.npy`
arrays, read without pickle), each with its full key and a content hash checked on read: an entry that is
unreadable, altered or another key's is recomputed, and the report says which file and why. Reads are bounded
(pytest_claims.store.codec: regular files only, sizes checked against a ceiling and the entry's own headers before
anything is allocated), so a crafted entry costs a recompute, never the machine. Writes are atomic (a temporary file
renamed into place); a file lock per key makes one process compute while the others wait and then read, so `-n 64`
computes each key once. The lock's holder keeps a record beside it (pid, host, test) and touches it while it computes: a
wait longer than a few seconds names the holder, and a holder that shows no sign of life for `LOCK_STALE_SECONDS` (a
stopped or hung process) is given up on.

The store is infrastructure, never evidence: a store directory that cannot be written is read where it can be, and
whatever cannot be kept (a full disk, a read-only or stray file where the store writes, a lock that cannot be taken)
is computed without storing, with a note (status "computed, not stored") that reaches the terminal and the report.
A long computation receives a `Checkpoint` and may save its state every N steps; an interrupted run
resumes from the last checkpoint of the same key.

Every process also keeps what it computed or read in memory, so a result shared by several tests is
computed once per process even with the disk store off (`--no-store`: CI computes fresh). While a
mutant is applied (pytest_claims.roles.mutants), keys carry the mutant's name and nothing is written to
disk.

Helper modules that tests call reach the session's store with `current_store()`.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import os
import stat
import tempfile
import time
import types
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Mapping, TypeVar

from filelock import FileLock, Timeout

from pytest_claims.stats.binomial import finite_number
from pytest_claims.store import codec
from pytest_claims.store.atomic import atomic_write as _atomic_write
from pytest_claims.store.key_lock import HeldLock as _HeldLock
from pytest_claims.store.key_lock import holder as _holder
from pytest_claims.store.key_lock import sign_of_life as _sign_of_life

T = TypeVar("T")
# 3: zip of header.json and .npy arrays (2: .npz with a uint8 header; 1: pickles; neither read). Bump when the stored
# layout changes: old entries are then simply not found
FORMAT = 3

# Statuses of one access, as the report shows them.
COMPUTED, RESUMED, FROM_STORE, IN_MEMORY = "computed", "resumed", "from store", "in memory"
RECOMPUTED = "recomputed"  # a stored entry could not be trusted (the event's note says why)
NOT_STORED = "computed, not stored"  # the store could not keep the value (the note says why); the value is used

# A wait for a key's lock longer than this names the holder (in the event's note, and live through
# ResultStore.on_wait).
LOCK_NOTICE_SECONDS = 5.0
# The holder of a key's lock touches its record every HEARTBEAT_SECONDS (pytest_claims.store.key_lock) while it
# computes. A waiter that sees no touch for LOCK_STALE_SECONDS takes the holder for stopped or hung and computes without
# storing. Two minutes: a network file system's attribute cache can hide a touch for up to a minute, and a live
# holder never goes that long without one (a computation as long as it likes is waited for).
LOCK_STALE_SECONDS = 120.0


@dataclass
class StoreEvent:
    """One access to the store by a test: what, under which key, and where the value came from."""

    name: str
    key: str
    status: str
    seconds: float
    resumed_from_step: int | None = None
    note: str = ""


MAX_RECORDED_SECONDS = 366 * 24 * 3600.0  # a year: longer is no computation's or test's time (a damaged record)


def recorded_seconds(value: Any) -> float | None:
    """`value` (a number of seconds read from a file: a store entry's, a .test_durations') as a float; None where it
    is no computation's time (not a number, a bool, negative, NaN, past MAX_RECORDED_SECONDS, or past any float):
    sums of such times (a mutant's time limit, the time left) then stay finite."""
    return float(value) if finite_number(value) and 0 <= value <= MAX_RECORDED_SECONDS else None


def _canonical(value: Any) -> Any:
    """A JSON-able, order-independent form of a key (tuples as lists, dataclasses as dicts)."""
    if hasattr(value, "__dataclass_fields__"):
        return {"__type__": type(value).__name__, **{k: _canonical(v) for k, v in asdict(value).items()}}
    if isinstance(value, Mapping):
        return {str(k): _canonical(v) for k, v in sorted(value.items(), key=lambda kv: str(kv[0]))}
    if isinstance(value, (list, tuple)):
        return [_canonical(v) for v in value]
    if isinstance(value, float):
        return repr(value)  # exact, and distinguishes 1.0 from 1
    if value is None or isinstance(value, (str, int, bool)):
        return value
    raise TypeError(f"result store key holds a {type(value).__name__} ({value!r}); use JSON-able values")


def code_hash(code: Iterable[Any]) -> str:
    """sha256 over the source of modules, classes or functions (or the bytes of files given as paths)."""
    digest = hashlib.sha256()
    for item in code:
        if isinstance(item, (str, Path)):
            data = Path(item).read_bytes()
        elif isinstance(item, types.ModuleType):
            data = Path(inspect.getfile(item)).read_bytes()
        else:
            data = inspect.getsource(item).encode()
        digest.update(hashlib.sha256(data).digest())
    return digest.hexdigest()


class Checkpoint:
    """Where a long computation saves its state and finds it again after an interruption."""

    def __init__(
        self, path: Path | None, every: int, header: dict[str, Any] | None = None, *, limit: int = codec.MAX_ENTRY_BYTES
    ) -> None:
        self.path = path
        self.every = max(1, int(every))
        self.header = header or {}
        self.limit = limit
        self.resumed_from_step: int | None = None
        self.note = ""  # why a saved state was not used, or why saving stopped
        # The computing seconds of the sittings before this one, up to the saved state (a checkpoint records them):
        # the value's whole cost, which its entry records and a mutant recomputing it from scratch needs.
        self.earlier_seconds = 0.0
        self._started = time.perf_counter()

    def due(self, step: int) -> bool:
        """True every `every` steps (only where the store can keep a checkpoint)."""
        return self.path is not None and step > 0 and step % self.every == 0

    def load(self) -> Any | None:
        """The last saved state of this key, or None. A dict state's "step" is reported on resume."""
        if self.path is None:
            return None
        try:
            header, state = codec.load(self.path, self.limit)
            seconds = header.pop("seconds", None) if isinstance(header, dict) else None
            if header != self.header:
                raise codec.EntryInvalid("is the checkpoint of another key")
        except FileNotFoundError:
            return None
        except codec.EntryInvalid as error:
            self.note = f"checkpoint {self.path} {error}: started afresh"
            return None
        except OSError as error:
            self.note = f"checkpoint {self.path} cannot be read ({error}): started afresh"
            return None
        step = state.get("step") if isinstance(state, dict) else None
        self.resumed_from_step = int(step) if step is not None else -1
        self.earlier_seconds = recorded_seconds(seconds) or 0.0
        return state

    def save(self, state: Any) -> None:
        """Keep `state` for a rerun. A checkpoint that cannot be written (a full disk) stops checkpointing, with a
        note: the computation goes on."""
        if self.path is None:
            return
        spent = self.earlier_seconds + time.perf_counter() - self._started
        data = codec.dumps({**self.header, "seconds": round(spent, 3)}, state)
        try:
            if len(data) > self.limit:
                raise OSError(f"{len(data)} bytes, above the store's ceiling of {self.limit}")
            _atomic_write(self.path, data)
        except OSError as error:
            self.note = "; ".join(
                n for n in (self.note, f"checkpoint {self.path} cannot be written ({error}): went on without") if n
            )
            self.path = None


def _digest(header: Mapping[str, Any]) -> str:
    return hashlib.sha256(json.dumps(header, sort_keys=True).encode()).hexdigest()[:32]


class StoreUnusable(Exception):
    """A store path that can never hold a store (a file, say): said in one line before any work."""


def _writable_directory(root: Path) -> bool:
    """Whether the store can write under `root` (creating it); StoreUnusable if it is not a directory."""
    if root.exists() and not root.is_dir():
        raise StoreUnusable(
            f"the result store path {root} is not a directory (--claims-store-dir or the ini key claims_store_dir)"
        )
    try:
        root.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(dir=root, prefix=".probe.")
        os.close(fd)
        os.unlink(probe)
        return True
    except OSError:
        return False


class _NotStored(Exception):
    """Why the store cannot keep a key's value now (the value is computed and used all the same)."""


def _not_a_store_folder(folder: Path) -> str:
    """Why `folder` (a key's folder under the root) is not one the store may read or write in; "" if it is."""
    try:
        mode = os.lstat(folder).st_mode
    except FileNotFoundError:
        return ""
    except OSError as error:
        return f"the store folder {folder} cannot be examined ({error})"
    if stat.S_ISDIR(mode):
        return ""
    kind = "a symbolic link" if stat.S_ISLNK(mode) else "a file" if stat.S_ISREG(mode) else "not a directory"
    return f"the store folder {folder} is {kind}"


class ResultStore:
    """get_or_compute(name, key, compute, code=...) -> the value, from memory, disk or computed."""

    def __init__(
        self,
        root: Path | None,
        *,
        checkpoint_every: int = 1000,
        max_entry_bytes: int = codec.MAX_ENTRY_BYTES,
        lock_stale_seconds: float = LOCK_STALE_SECONDS,
        lock_notice_seconds: float = LOCK_NOTICE_SECONDS,
        on_wait: Callable[[str], None] | None = None,
        evidence_root: Path | None = None,
    ) -> None:
        self.root = root  # None: memory only (--no-store)
        # Where evidence that must outlive a cache reset is kept (the anytime ledgers: pytest_claims.statements.ledger),
        # from claims_evidence_dir; None: no ledger is kept.
        self.evidence_root = evidence_root if root is not None else None
        self.read_only = root is not None and not _writable_directory(root)
        self.checkpoint_every = checkpoint_every
        self.max_entry_bytes = max_entry_bytes
        self.lock_stale_seconds = lock_stale_seconds
        self.lock_notice_seconds = lock_notice_seconds
        # Called with one line when a lock wait passes lock_notice_seconds (the plugin may show it live).
        self.on_wait = on_wait
        self._mutant = ("", "")  # the applied mutant's name and the module it changes: set by under_mutant only
        self._memory: dict[str, Any] = {}
        # Seconds each value took to compute (for one read from the store: its entry's record of that), and per
        # test the values it read ready-made: a mutant of the test may have to recompute them, so its time limit
        # counts their seconds (reused_seconds), each value once however often the test read it.
        self._cost: dict[str, float] = {}
        self._reused: dict[str, set[str]] = {}
        self._earlier: dict[str, float] = {}  # per test, the earlier sittings of the values it resumed
        self._events: list[tuple[str, StoreEvent]] = []
        self._test = ""  # the test whose results are being asked for: set by running_test only

    @property
    def namespace(self) -> str:
        """The applied mutant's name ("" for the real code): results computed under it are keyed apart."""
        return self._mutant[0]

    @contextmanager
    def under_mutant(self, name: str, module: str) -> Iterator[None]:
        """While the mutant `name`, which changes `module`, is applied: its results are keyed under its name and
        never stored; results whose code the module is not part of are still read from the real runs."""
        before, self._mutant = self._mutant, (name, module)
        try:
            yield
        finally:
            self._mutant = before

    @contextmanager
    def running_test(self, test: str) -> Iterator[None]:
        """While `test` runs: its store events (and any lock it holds) are recorded under its node id."""
        before, self._test = self._test, test
        try:
            yield
        finally:
            self._test = before

    @property
    def mode(self) -> str:
        if self.root is None:
            return "off (every result computed fresh)"
        if self.read_only:
            return (
                f"read-only ({self.root} cannot be written: "
                "entries found there are read, the rest computed and not stored)"
            )
        return f"on ({self.root})"

    def _header(
        self, name: str, key: Mapping[str, Any], code_digest: str, namespace: str | None = None
    ) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "name": name,
            "key": _canonical(key),
            "code": code_digest,
            "namespace": self.namespace if namespace is None else namespace,
        }

    def key_of(self, name: str, key: Mapping[str, Any], code: Iterable[Any] = (), namespace: str | None = None) -> str:
        """The entry's key: (name, key, code) under `namespace` (default: the applied mutant's, "" for none)."""
        return _digest(self._header(name, key, code_hash(code), namespace))

    def entry_path(self, name: str, key: Mapping[str, Any], code: Iterable[Any] = ()) -> Path | None:
        """Where the entry of (name, key, code) lies under the store's root (None without a root)."""
        if self.root is None:
            return None
        digest = self.key_of(name, key, code)
        return self.root / digest[:2] / f"{digest}.npz"

    def lookup(
        self, name: str, key: Mapping[str, Any], *, code: Iterable[Any] = (), root: Path | None = None
    ) -> tuple[Any, str]:
        """The stored value of (name, key, code), never computed: (value, "") from a trustworthy entry, else
        (None, why not): "absent", or why the entry cannot be trusted. `root` reads another store folder (a
        committed one, say) without writing to it; what is read is recorded as this store's event."""
        code = list(code)
        header = self._header(name, key, code_hash(code))
        digest = _digest(header)
        started = time.perf_counter()
        if digest in self._memory:
            self._record(name, digest, IN_MEMORY, started)
            return self._memory[digest], ""
        folder = root if root is not None else self.root
        if folder is None:
            return None, "absent"
        value, bad = self._read(folder / digest[:2] / f"{digest}.npz", header)
        if bad is not None:
            return None, bad.removesuffix(": recomputed") or "absent"
        note = f"read from {folder}" if root is not None else ""
        return self._keep(name, digest, value, FROM_STORE, started, note=note), ""

    def get_or_compute(
        self,
        name: str,
        key: Mapping[str, Any],
        compute: Callable[[Checkpoint], T],
        *,
        code: Iterable[Any] = (),
        checkpoint_every: int | None = None,
        persist: bool = True,
    ) -> T:
        """The value stored under (name, key, code), computing it with `compute(checkpoint)` if absent.

        `compute` must be deterministic given the key; its value must be data the codec keeps
        (pytest_claims.store.codec). Pass every module whose source decides the value in `code`, so that a
        changed kernel never reads an old value. `persist=False` keeps the value in this process only
        (large and cheap to recompute).
        """
        code = list(code)
        header = self._header(name, key, code_hash(code))
        digest = _digest(header)
        started = time.perf_counter()
        if digest in self._memory:
            self._record(name, digest, IN_MEMORY, started)
            return self._memory[digest]
        if self.namespace and not self._touched_by_mutant(code):
            # A result whose code the mutant does not change may be reused from the real runs (never
            # the other way round: what is computed under a mutant stays under the mutant's key).
            plain = self.key_of(name, key, code, namespace="")
            if plain in self._memory:
                self._record(name, plain, IN_MEMORY, started)
                return self._memory[plain]
        every = checkpoint_every or self.checkpoint_every
        if self.root is None or self.namespace or not persist:
            value = compute(Checkpoint(None, every))
            return self._keep(name, digest, value, COMPUTED, started)
        folder = self.root / digest[:2]
        result, state = folder / f"{digest}.npz", folder / f"{digest}.checkpoint.npz"
        # Read before locking: entries are renamed into place whole, so a reader never sees half of one
        value, bad = self._read(result, header)
        if bad is None:
            return self._keep(name, digest, value, FROM_STORE, started)
        if self.read_only:
            value = compute(Checkpoint(None, every))
            return self._keep(name, digest, value, RECOMPUTED if bad else COMPUTED, started, note=bad)
        try:
            held, waited = self._lock(folder, digest)
        except _NotStored as why:
            value = compute(Checkpoint(None, every))
            note = f"{why}: computed and not stored"
            return self._keep(name, digest, value, NOT_STORED, started, note="; ".join(n for n in (bad, note) if n))
        try:
            value, again = self._read(result, header)  # another process may have stored it while this one waited
            if again is None:
                return self._keep(name, digest, value, FROM_STORE, started, note=waited)
            checkpoint = Checkpoint(state, every, header, limit=self.max_entry_bytes)
            value = compute(checkpoint)
            seconds = checkpoint.earlier_seconds + time.perf_counter() - started
            not_kept = self._write(result, {**header, "seconds": round(seconds, 3)}, value)
            if not not_kept:
                try:
                    state.unlink(missing_ok=True)
                except OSError:
                    pass  # a stray directory where the checkpoint goes: left alone (it is not the store's)
        finally:
            held.release()
        resumed = checkpoint.resumed_from_step
        status = NOT_STORED if not_kept else RECOMPUTED if again else RESUMED if resumed is not None else COMPUTED
        note = "; ".join(n for n in (again, waited, checkpoint.note, not_kept) if n)
        if checkpoint.earlier_seconds:  # resumed: the test's own time holds only this sitting
            self._earlier[self._test] = self._earlier.get(self._test, 0.0) + checkpoint.earlier_seconds
        value = self._keep(name, digest, value, status, started, resumed, note)
        self._cost[digest] += checkpoint.earlier_seconds
        return value

    def _keep(
        self, name: str, digest: str, value: T, status: str, started: float, resumed: int | None = None, note: str = ""
    ) -> T:
        self._memory[digest] = value
        if status != FROM_STORE:
            self._cost[digest] = time.perf_counter() - started
        self._record(name, digest, status, started, resumed, note)
        return value

    def _lock(self, folder: Path, digest: str) -> tuple[_HeldLock, str]:
        """The key's lock, taken, and a note if the wait was long; _NotStored where the lock cannot be taken (the
        folder or lock file is not the store's, or the holder has shown no sign of life for lock_stale_seconds)."""
        stray = _not_a_store_folder(folder)
        if stray:
            raise _NotStored(stray)
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            raise _NotStored(f"the store folder {folder} cannot be made ({error})") from None
        path, record = folder / f"{digest}.lock", folder / f"{digest}.lock.json"
        try:
            if not stat.S_ISREG(os.lstat(path).st_mode):
                raise _NotStored(f"the lock {path} is not a regular file")
        except FileNotFoundError:
            pass
        except OSError as error:
            raise _NotStored(f"the lock {path} cannot be examined ({error})") from None
        lock = FileLock(str(path))
        began = last_change = time.monotonic()
        sign, holder = _sign_of_life(record), ""
        while True:
            try:
                lock.acquire(timeout=min(0.5, self.lock_notice_seconds, self.lock_stale_seconds))
                break
            except Timeout:
                pass
            except OSError as error:
                raise _NotStored(f"the lock {path} cannot be taken ({error})") from None
            now = time.monotonic()
            if _sign_of_life(record) != sign:
                sign, last_change = _sign_of_life(record), now
            if not holder and now - began >= self.lock_notice_seconds:
                holder = _holder(record)
                if self.on_wait is not None:
                    self.on_wait(
                        f"result store: waiting for the lock {path}, held by {holder}, for {now - began:.0f} s; "
                        f"no sign of life from it for {now - last_change:.0f} s (given up after "
                        f"{self.lock_stale_seconds:g} s without one)"
                    )
            if now - last_change >= self.lock_stale_seconds:
                raise _NotStored(
                    f"the lock {path} is held by {_holder(record)}, which showed no sign of life for "
                    f"{self.lock_stale_seconds:g} s (stopped or hung)"
                )
        waited = time.monotonic() - began
        note = f"waited {waited:.0f} s for the lock {path}, held by {holder}" if holder else ""
        return _HeldLock(lock, record, self._test), note

    def _write(self, path: Path, header: dict[str, Any], value: Any) -> str:
        """Nothing ("") once `value` is stored at `path`; otherwise why it is not (the value is used all the same)."""
        data = codec.dumps(header, value)
        if len(data) > self.max_entry_bytes:
            return (
                f"store entry {path} would be {len(data)} bytes, above the store's ceiling of {self.max_entry_bytes}: "
                "computed and not stored"
            )
        try:
            _atomic_write(path, data)
        except OSError as error:
            return f"store entry {path} cannot be written ({error}): computed and not stored"
        return ""

    def _read(self, path: Path, header: dict[str, Any]) -> tuple[Any, str | None]:
        """(value, None) from a trustworthy entry; (None, "") if there is none; (None, why) if it is bad."""
        stray = _not_a_store_folder(path.parent)
        if stray:
            return None, f"{stray}: not read"
        try:
            stored, value = codec.load(path, self.max_entry_bytes)
            seconds = stored.pop("seconds", None) if isinstance(stored, dict) else None
            if stored != header:
                raise codec.EntryInvalid(
                    f"is the entry of another key ({stored.get('name')!r}, {str(stored.get('key'))[:120]})"
                    if isinstance(stored, dict)
                    else "has no key"
                )
        except FileNotFoundError:
            return None, ""
        except codec.EntryInvalid as error:
            return None, f"store entry {path} {error}: recomputed"
        except OSError as error:
            return None, f"store entry {path} cannot be read ({error}): recomputed"
        cost = recorded_seconds(seconds)  # the entry's own record of its computation (data: checked)
        if cost is not None:
            self._cost[path.stem] = cost
        return value, None

    def _touched_by_mutant(self, code: list[Any]) -> bool:
        """Whether the applied mutant's module is among the code a result depends on (unknown: yes)."""
        for item in code:
            module = item.__name__ if isinstance(item, types.ModuleType) else getattr(item, "__module__", None)
            if module is None or module == self._mutant[1]:
                return True
        return not code

    def _record(
        self, name: str, digest: str, status: str, started: float, resumed: int | None = None, note: str = ""
    ) -> None:
        event = StoreEvent(name, digest, status, round(time.perf_counter() - started, 3), resumed, note)
        self._events.append((self._test, event))
        if status in (IN_MEMORY, FROM_STORE):
            self._reused.setdefault(self._test, set()).add(digest)

    def reused_seconds(self, test: str) -> float:
        """Seconds of computation that `test` read ready-made (from memory, or from the store as its entries
        record), or in the earlier sittings of a value it resumed from a checkpoint, rather than computed: what a
        mutant of it may have to recompute, keyed apart under the mutant."""
        reused = sum(self._cost.get(digest, 0.0) for digest in self._reused.get(test, ()))
        return reused + self._earlier.get(test, 0.0)

    def take_events(self, test: str) -> list[dict[str, Any]]:
        """The events of one test, removed from the log (the plugin puts them on the test's report)."""
        mine = [asdict(e) for t, e in self._events if t == test]
        self._events = [(t, e) for t, e in self._events if t != test]
        return mine
