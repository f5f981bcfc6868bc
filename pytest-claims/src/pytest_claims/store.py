"""A keyed, resumable result store for expensive deterministic computations.

A result is stored under a key made of everything that determines it: a name (claim or kernel), a
configuration (seeds, tier, backend, device, sizes: any JSON-able mapping), and a hash of the source
of the code that computes it. Entries hold data only (pytest_claims.codec: a zip of a JSON header and `.npy` arrays,
read without pickle), each with its full key and a content hash checked on read: an entry that is
unreadable, altered or another key's is recomputed, and the report says which file and why. A store
directory that cannot be written is read where it can be and otherwise computes without storing. Writes are atomic
(a temporary file renamed into place); a file lock per key makes one process compute while the others wait and then
read, so `-n 64` computes each key once.
A long computation receives a `Checkpoint` and may save its state every N steps; an interrupted run
resumes from the last checkpoint of the same key.

Every process also keeps what it computed or read in memory, so a result shared by several tests is
computed once per process even with the disk store off (`--no-store`: CI computes fresh). While a
mutant is applied (pytest_claims.mutants), keys carry the mutant's name and nothing is written to
disk.

Helper modules that tests call reach the session's store with `current_store()`.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import os
import tempfile
import time
import types
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, TypeVar

from filelock import FileLock

from pytest_claims import codec

T = TypeVar("T")
# 3: zip of header.json and .npy arrays (2: .npz with a uint8 header; 1: pickles; neither read). Bump when the stored
# layout changes: old entries are then simply not found
FORMAT = 3

# Statuses of one access, as the report shows them.
COMPUTED, RESUMED, FROM_STORE, IN_MEMORY = "computed", "resumed", "from store", "in memory"
RECOMPUTED = "recomputed"  # a stored entry could not be trusted (the event's note says why)


@dataclass
class StoreEvent:
    """One access to the store by a test: what, under which key, and where the value came from."""

    name: str
    key: str
    status: str
    seconds: float
    resumed_from_step: int | None = None
    note: str = ""


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

    def __init__(self, path: Path | None, every: int, header: dict[str, Any] | None = None) -> None:
        self.path = path
        self.every = max(1, int(every))
        self.header = header or {}
        self.resumed_from_step: int | None = None
        self.note = ""  # why a saved state was not used

    def due(self, step: int) -> bool:
        """True every `every` steps (only where the store can keep a checkpoint)."""
        return self.path is not None and step > 0 and step % self.every == 0

    def load(self) -> Any | None:
        """The last saved state of this key, or None. A dict state's "step" is reported on resume."""
        if self.path is None or not self.path.exists():
            return None
        try:
            header, state = codec.loads(self.path.read_bytes())
            if header != self.header:
                raise codec.EntryInvalid("is the checkpoint of another key")
        except codec.EntryInvalid as error:
            self.note = f"checkpoint {self.path} {error}: started afresh"
            return None
        step = state.get("step") if isinstance(state, dict) else None
        self.resumed_from_step = int(step) if step is not None else -1
        return state

    def save(self, state: Any) -> None:
        if self.path is not None:
            _atomic_write(self.path, codec.dumps(self.header, state))


def _atomic_write(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name + ".", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _digest(header: Mapping[str, Any]) -> str:
    return hashlib.sha256(json.dumps(header, sort_keys=True).encode()).hexdigest()[:32]


class StoreUnusable(Exception):
    """A store path that can never hold a store (a file, say): said in one line before any work."""


def _writable_directory(root: Path) -> bool:
    """Whether the store can write under `root` (creating it); StoreUnusable if it is not a directory."""
    if root.exists() and not root.is_dir():
        raise StoreUnusable(
            f"the result store path {root} is not a directory (--store-dir or the ini key claims_store_dir)"
        )
    try:
        root.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(dir=root, prefix=".probe.")
        os.close(fd)
        os.unlink(probe)
        return True
    except OSError:
        return False


class ResultStore:
    """get_or_compute(name, key, compute, code=...) -> the value, from memory, disk or computed."""

    def __init__(self, root: Path | None, *, checkpoint_every: int = 1000) -> None:
        self.root = root  # None: memory only (--no-store)
        self.read_only = root is not None and not _writable_directory(root)
        self.checkpoint_every = checkpoint_every
        self.namespace = ""  # the applied mutant's name, if any
        self.mutated_module = ""  # the module the applied mutant changes
        self._memory: dict[str, Any] = {}
        self._events: list[tuple[str, StoreEvent]] = []
        self.current_test = ""

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

    def _header(self, name: str, key: Mapping[str, Any], code_digest: str) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "name": name,
            "key": _canonical(key),
            "code": code_digest,
            "namespace": self.namespace,
        }

    def key_of(self, name: str, key: Mapping[str, Any], code: Iterable[Any] = ()) -> str:
        return _digest(self._header(name, key, code_hash(code)))

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
        (pytest_claims.codec). Pass every module whose source decides the value in `code`, so that a
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
            namespace, self.namespace = self.namespace, ""
            plain = self.key_of(name, key, code)
            self.namespace = namespace
            if plain in self._memory:
                self._record(name, plain, IN_MEMORY, started)
                return self._memory[plain]
        every = checkpoint_every or self.checkpoint_every
        if self.root is None or self.namespace or not persist:
            value = compute(Checkpoint(None, every))
            self._memory[digest] = value
            self._record(name, digest, COMPUTED, started)
            return value
        folder = self.root / digest[:2]
        result, state = folder / f"{digest}.npz", folder / f"{digest}.checkpoint.npz"
        if self.read_only:
            value, note = self._read(result, header)
            status = FROM_STORE if note is None else RECOMPUTED if note else COMPUTED
            if note is not None:
                value = compute(Checkpoint(None, every))
            self._memory[digest] = value
            self._record(name, digest, status, started, note=note or "")
            return value
        folder.mkdir(parents=True, exist_ok=True)
        with FileLock(str(folder / f"{digest}.lock")):
            value, note = self._read(result, header)
            status, resumed = FROM_STORE, None
            if note is not None:
                checkpoint = Checkpoint(state, every, header)
                value = compute(checkpoint)
                _atomic_write(
                    result, codec.dumps({**header, "seconds": round(time.perf_counter() - started, 3)}, value)
                )
                state.unlink(missing_ok=True)
                resumed = checkpoint.resumed_from_step
                status = RESUMED if resumed is not None else COMPUTED
                if note:  # there was an entry, and it could not be trusted
                    status = RECOMPUTED
                note = "; ".join(n for n in (note, checkpoint.note) if n)
        self._memory[digest] = value
        self._record(name, digest, status, started, resumed, note or "")
        return value

    @staticmethod
    def _read(path: Path, header: dict[str, Any]) -> tuple[Any, str | None]:
        """(value, None) from a trustworthy entry; (None, "") if there is none; (None, why) if it is bad."""
        if not path.exists():
            return None, ""
        try:
            stored, value = codec.loads(path.read_bytes())
            stored.pop("seconds", None)
            if stored != header:
                raise codec.EntryInvalid(
                    f"is the entry of another key ({stored.get('name')!r}, {str(stored.get('key'))[:120]})"
                    if isinstance(stored, dict)
                    else "has no key"
                )
        except codec.EntryInvalid as error:
            return None, f"store entry {path} {error}: recomputed"
        except OSError as error:
            return None, f"store entry {path} cannot be read ({error}): recomputed"
        return value, None

    def _touched_by_mutant(self, code: list[Any]) -> bool:
        """Whether the applied mutant's module is among the code a result depends on (unknown: yes)."""
        for item in code:
            module = item.__name__ if isinstance(item, types.ModuleType) else getattr(item, "__module__", None)
            if module is None or module == self.mutated_module:
                return True
        return not code

    def _record(
        self, name: str, digest: str, status: str, started: float, resumed: int | None = None, note: str = ""
    ) -> None:
        event = StoreEvent(name, digest, status, round(time.perf_counter() - started, 3), resumed, note)
        self._events.append((self.current_test, event))

    def take_events(self, test: str) -> list[dict[str, Any]]:
        """The events of one test, removed from the log (the plugin puts them on the test's report)."""
        mine = [asdict(e) for t, e in self._events if t == test]
        self._events = [(t, e) for t, e in self._events if t != test]
        return mine


def current_store() -> ResultStore:
    """The session's store: kept here for the suite's old import path (`pytest_claims.current_store` is the API)."""
    from pytest_claims.context import current_store as found  # context imports this module

    return found()
