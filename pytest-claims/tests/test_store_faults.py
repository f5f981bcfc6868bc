"""Faults of the result store, each a test that fails without its fix: crafted entries (a zip bomb, a lying
zip directory, a .npy header declaring a huge shape, a deep value tree), files that are not entries (a
symbolic link out of the store, a FIFO, a directory), a store that cannot be written (a full disk, a
read-only file system, a stray file or directory where the store writes) and a lock held by a stopped process.
Every one is a recompute or a computation without storing, with a note naming the file and why: never a
crash, a hang, a believed foreign value or a failed statement test."""

from __future__ import annotations

import errno
import hashlib
import io
import json
import os
import shutil
import signal
import struct
import subprocess
import sys
import threading
import time
import tracemalloc
import zipfile
import zlib
from pathlib import Path

import numpy as np
import pytest

from pytest_claims.store import codec
from pytest_claims.store import result_store
from pytest_claims.store.result_store import COMPUTED, FROM_STORE, NOT_STORED, RECOMPUTED, ResultStore

MiB = 2**20
EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "means"


def _fresh(root: Path, **options) -> ResultStore:
    store = ResultStore(root, **options)
    return store


def _only_event(store: ResultStore) -> dict:
    (event,) = store.take_events("")
    return event


def _genuine_entry(root: Path, name: str = "x", key: dict | None = None, value=7) -> Path:
    """Store `value` under (name, key) and return its entry file."""
    store = _fresh(root)
    store.get_or_compute(name, key or {}, lambda _: value)
    digest = store.key_of(name, key or {})
    return root / digest[:2] / f"{digest}.npz"


def _key_header(entry: Path) -> dict:
    """The key part of a genuine entry's header (what a crafted entry copies to be taken for it)."""
    with zipfile.ZipFile(entry) as archive:
        header = json.loads(archive.read(codec.HEADER))
    return {k: v for k, v in header.items() if k not in ("tree", "content_sha256", "seconds")}


def _npy_header(shape: tuple[int, ...], descr: str = "<f8") -> bytes:
    stream = io.BytesIO()
    np.lib.format.write_array_header_1_0(stream, {"descr": descr, "fortran_order": False, "shape": shape})
    return stream.getvalue()


def _deflated_zeros(head: bytes, mib: int) -> tuple[bytes, int, int]:
    """(raw deflate stream, crc32, size) of `head` and then `mib` MiB of zeros, made without compressing them all:
    after a full flush a deflate compressor starts afresh, so every MiB of zeros compresses to the same bytes."""
    compressor, zeros = zlib.compressobj(9, zlib.DEFLATED, -15), bytes(MiB)
    first = compressor.compress(head) + compressor.flush(zlib.Z_FULL_FLUSH)
    chunk = compressor.compress(zeros) + compressor.flush(zlib.Z_FULL_FLUSH)
    crc = zlib.crc32(head)
    for _ in range(mib):
        crc = zlib.crc32(zeros, crc)
    return first + chunk * mib + compressor.flush(), crc, len(head) + mib * MiB


def _zip(members: list[dict]) -> bytes:
    """A zip archive written by hand, so that its directory can say what it likes: each member a dict of name, raw
    (its bytes as stored), size (uncompressed), and optionally method, crc, flags and the directory's own sizes."""
    out, directory = io.BytesIO(), []
    for m in members:
        name, raw, method, crc = m["name"].encode(), m["raw"], m.get("method", zipfile.ZIP_STORED), m.get("crc", 0)
        offset, flags = out.tell(), m.get("flags", 0)
        out.write(
            struct.pack("<4s5H3L2H", b"PK\x03\x04", 20, flags, method, 0, 0, crc, len(raw), m["size"], len(name), 0)
        )
        out.write(name + raw)
        said = (m.get("directory_compressed", len(raw)), m.get("directory_size", m["size"]))
        directory.append(
            struct.pack(
                "<4s6H3L5H2L", b"PK\x01\x02", 20, 20, flags, method, 0, 0, crc, *said, len(name), 0, 0, 0, 0, 0, offset
            )
            + name
        )
    start, listing = out.tell(), b"".join(directory)
    out.write(
        listing + struct.pack("<4s4H2LH", b"PK\x05\x06", 0, 0, len(members), len(members), len(listing), start, 0)
    )
    return out.getvalue()


def _stored(name: str, data: bytes, **lies) -> dict:
    return {"name": name, "raw": data, "size": len(data), "crc": zlib.crc32(data), **lies}


def _bomb(name: str, mib: int, **lies) -> dict:
    """An .npy member of `mib` MiB of float64 zeros, deflated to about a thousandth of that."""
    raw, crc, size = _deflated_zeros(_npy_header((mib * MiB // 8,)), mib)
    return {"name": name, "raw": raw, "size": size, "crc": crc, "method": zipfile.ZIP_DEFLATED, **lies}


def _crafted(key_header: dict, members: list[dict], *, hash_of: bytes = b"") -> bytes:
    """An entry for `key_header` whose value is array 0, with the given array members."""
    tree = json.dumps({codec.TAG: "array", "i": 0}, separators=(",", ":"))
    header = {**key_header, "tree": tree, "content_sha256": hashlib.sha256(hash_of).hexdigest()}
    return _zip([_stored(codec.HEADER, json.dumps(header).encode()), *members])


def _peak_python_bytes(function) -> tuple[object, int]:
    """(result, peak bytes Python and NumPy allocated while `function` ran)."""
    tracemalloc.start()
    try:
        result = function()
        return result, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def _within(seconds: float, function, on_timeout=lambda: None):
    """function() in a thread, failing the test (not hanging it) if it has not returned after `seconds`."""
    outcome: dict = {}
    thread = threading.Thread(target=lambda: outcome.update(value=function()), daemon=True)
    thread.start()
    thread.join(seconds)
    if thread.is_alive():
        on_timeout()
        pytest.fail(f"the store did not return within {seconds} s (it hangs)")
    assert "value" in outcome, "the store raised (see the thread's traceback above)"
    return outcome["value"]


# ---------------------------------------------------------------------------------------------
# Crafted entries: refused from their declared sizes, before anything is decompressed or allocated.


@pytest.mark.smoke
def test_a_zip_bomb_entry_is_refused_before_it_is_decompressed(tmp_path):
    root = tmp_path / "store"
    entry = _genuine_entry(root)
    bomb = _crafted(_key_header(entry), [_bomb("a0.npy", 64)])
    entry.write_bytes(bomb)
    assert len(bomb) < MiB // 4  # 64 MiB declared in a quarter of a megabyte
    store = _fresh(root, max_entry_bytes=4 * MiB)
    value, peak = _peak_python_bytes(lambda: store.get_or_compute("x", {}, lambda _: 7))
    assert value == 7
    event = _only_event(store)
    assert event["status"] == RECOMPUTED and str(entry) in event["note"], event
    assert "above the store's ceiling of 4194304" in event["note"], event
    assert peak < 2 * MiB, f"reading a crafted entry allocated {peak / MiB:.1f} MiB"
    assert _fresh(root).get_or_compute("x", {}, lambda _: pytest.fail("the rewritten entry must be read")) == 7


@pytest.mark.smoke
def test_a_compressed_entry_below_the_ceiling_is_refused_without_decompressing_it(tmp_path):
    """Only stored members are read, so an entry costs at most its own size: a compressed one, even an honest one
    under the ceiling, could cost a thousand times its size before any check of its content."""
    root = tmp_path / "store"
    entry = _genuine_entry(root)
    entry.write_bytes(_crafted(_key_header(entry), [_bomb("a0.npy", 32)]))
    store = _fresh(root, max_entry_bytes=64 * MiB)
    value, peak = _peak_python_bytes(lambda: store.get_or_compute("x", {}, lambda _: 7))
    assert value == 7 and peak < 2 * MiB, (value, peak)
    event = _only_event(store)
    assert event["status"] == RECOMPUTED and "has a compressed member a0.npy" in event["note"], event


@pytest.mark.smoke
@pytest.mark.parametrize("lie", ["a compressed member declared small", "a stored member declared past the file"])
def test_a_lying_zip_directory_is_refused_and_bounded(tmp_path, lie):
    root = tmp_path / "store"
    entry = _genuine_entry(root)
    if lie == "a compressed member declared small":  # 64 MiB of deflated zeros said to be 1 KiB
        member = _bomb("a0.npy", 64, directory_size=1024)
    else:  # a stored member said to be 3 GB long, in a file of a few hundred bytes
        member = _stored(
            "a0.npy", _npy_header((2,)) + bytes(16), directory_compressed=3 * 10**9, directory_size=3 * 10**9
        )
    crafted = _crafted(_key_header(entry), [member])
    entry.write_bytes(crafted)
    store = _fresh(root)
    value, peak = _peak_python_bytes(lambda: store.get_or_compute("x", {}, lambda _: 7))
    assert value == 7 and peak < 2 * MiB, (value, peak)
    event = _only_event(store)
    assert event["status"] == RECOMPUTED and str(entry) in event["note"], event


@pytest.mark.smoke
@pytest.mark.parametrize("shape", [(2**40,), (2**31, 2**31, 2**31)])
def test_an_npy_header_declaring_a_huge_shape_is_refused_before_allocation(tmp_path, shape):
    root = tmp_path / "store"
    entry = _genuine_entry(root)
    payload = bytes(80)  # ten float64 zeros, the header says far more
    # a content hash made to match, as a crafter can: the hash is a checksum, not a signature
    hashed = json.dumps({codec.TAG: "array", "i": 0}, separators=(",", ":")).encode() + f"|<f8|{shape}|".encode()
    crafted = _crafted(_key_header(entry), [_stored("a0.npy", _npy_header(shape) + payload)], hash_of=hashed + payload)
    entry.write_bytes(crafted)
    store = _fresh(root)
    value, peak = _peak_python_bytes(lambda: store.get_or_compute("x", {}, lambda _: 7))
    assert value == 7 and peak < 2 * MiB, (value, peak)
    event = _only_event(store)
    assert event["status"] == RECOMPUTED and f"whose header declares {shape}" in event["note"], event


@pytest.mark.smoke
def test_an_encrypted_member_is_recomputed(tmp_path):
    root = tmp_path / "store"
    entry = _genuine_entry(root)
    entry.write_bytes(_crafted(_key_header(entry), [_stored("a0.npy", _npy_header((2,)) + bytes(16), flags=1)]))
    store = _fresh(root)
    assert store.get_or_compute("x", {}, lambda _: 7) == 7
    event = _only_event(store)
    assert event["status"] == RECOMPUTED and "encrypted" in event["note"], event


@pytest.mark.smoke
def test_a_value_tree_nested_past_the_recursion_limit_is_recomputed(tmp_path):
    root = tmp_path / "store"
    entry = _genuine_entry(root)
    tree = "[" * 100_000 + "]" * 100_000
    header = {**_key_header(entry), "tree": tree, "content_sha256": hashlib.sha256(tree.encode()).hexdigest()}
    with zipfile.ZipFile(entry, "w") as archive:
        archive.writestr(codec.HEADER, json.dumps(header))
    store = _fresh(root)
    assert store.get_or_compute("x", {}, lambda _: 7) == 7
    event = _only_event(store)
    assert event["status"] == RECOMPUTED and "RecursionError" in event["note"], event


@pytest.mark.smoke
def test_a_result_above_the_ceiling_is_used_and_not_stored(tmp_path):
    root = tmp_path / "store"
    store = _fresh(root, max_entry_bytes=64 * 1024)
    big = np.arange(100_000, dtype=np.float64)
    np.testing.assert_array_equal(store.get_or_compute("big", {}, lambda _: big), big)
    event = _only_event(store)
    assert event["status"] == NOT_STORED and "above the store's ceiling of 65536" in event["note"], event
    assert not list(root.glob("*/*.npz"))


@pytest.mark.smoke
def test_arrays_read_back_are_writable_and_exact(tmp_path):
    root = tmp_path / "store"
    value = {"f": np.linspace(0, 1, 7), "i": np.arange(6, dtype=np.int32).reshape(2, 3), "s": np.float32(1.5)}
    _fresh(root).get_or_compute("x", {}, lambda _: value)
    got = _fresh(root).get_or_compute("x", {}, lambda _: pytest.fail("must be read"))
    np.testing.assert_array_equal(got["f"], value["f"])
    assert got["i"].dtype == np.int32 and got["i"].shape == (2, 3) and type(got["s"]) is np.float32
    got["f"] += 1  # a caller may work in place, as on an array numpy.load gives
    assert got["f"][0] == 1.0


# ---------------------------------------------------------------------------------------------
# Files that are not entries: refused without being opened or followed.


@pytest.mark.smoke
def test_a_symbolic_link_out_of_the_store_is_not_followed(tmp_path):
    root, elsewhere = tmp_path / "store", tmp_path / "elsewhere"
    outside = _genuine_entry(elsewhere, value=99)  # a valid entry of the same key, outside the store
    before = outside.read_bytes()
    entry = root / outside.relative_to(elsewhere)
    entry.parent.mkdir(parents=True)
    entry.symlink_to(outside)
    store = _fresh(root)
    assert store.get_or_compute("x", {}, lambda _: 7) == 7  # not the 99 the link leads to
    event = _only_event(store)
    assert event["status"] == RECOMPUTED and f"{entry} is a symbolic link (to {outside})" in event["note"], event
    assert (
        entry.is_file() and not entry.is_symlink() and outside.read_bytes() == before
    )  # replaced, not written through


@pytest.mark.smoke
@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_a_fifo_entry_does_not_hang_the_run(tmp_path):
    root = tmp_path / "store"
    entry = _genuine_entry(root)
    entry.unlink()
    os.mkfifo(entry)

    def unblock():  # a reader blocked in open() on the FIFO returns once a writer opens it
        os.close(os.open(entry, os.O_WRONLY | os.O_NONBLOCK))

    store = _fresh(root)
    assert _within(20, lambda: store.get_or_compute("x", {}, lambda _: 7), unblock) == 7
    event = _only_event(store)
    assert event["status"] == RECOMPUTED and f"{entry} is a FIFO, not a regular file" in event["note"], event
    assert entry.is_file()


@pytest.mark.smoke
def test_a_directory_where_an_entry_should_be_is_left_alone_and_the_value_computed(tmp_path):
    root = tmp_path / "store"
    entry = _genuine_entry(root)
    entry.unlink()
    entry.mkdir()
    (entry / "theirs").write_text("")
    store = _fresh(root)
    assert store.get_or_compute("x", {}, lambda _: 7) == 7
    event = _only_event(store)
    assert event["status"] == NOT_STORED, event
    assert f"{entry} is a directory, not a regular file" in event["note"] and "computed and not stored" in event["note"]
    assert (entry / "theirs").exists()


@pytest.mark.smoke
@pytest.mark.parametrize("where", ["a file where the key's folder should be", "a directory where the lock should be"])
def test_a_stray_file_where_the_store_writes_degrades_to_computing(tmp_path, where):
    root = tmp_path / "store"
    store = _fresh(root)
    digest = store.key_of("x", {})
    if where.startswith("a file"):
        (root / digest[:2]).write_text("not a folder")
    else:
        (root / digest[:2] / f"{digest}.lock").mkdir(parents=True)
    assert store.get_or_compute("x", {}, lambda _: 7) == 7
    event = _only_event(store)
    assert event["status"] == NOT_STORED and "computed and not stored" in event["note"], event
    assert (f"{root / digest[:2]} is a file" if where.startswith("a file") else f"{digest}.lock") in event["note"]


@pytest.mark.smoke
def test_a_key_folder_that_links_out_of_the_store_is_neither_read_nor_written_through(tmp_path):
    root, elsewhere = tmp_path / "store", tmp_path / "elsewhere"
    elsewhere.mkdir()
    store = _fresh(root)
    folder = root / store.key_of("x", {})[:2]
    folder.symlink_to(elsewhere, target_is_directory=True)
    assert store.get_or_compute("x", {}, lambda _: 7) == 7
    event = _only_event(store)
    assert event["status"] == NOT_STORED and f"{folder} is a symbolic link" in event["note"], event
    assert not list(elsewhere.iterdir())  # no entry, lock or record written through the link


@pytest.mark.smoke
def test_a_store_root_replaced_by_a_file_mid_run_degrades_to_computing(tmp_path):
    root = tmp_path / "store"
    store = _fresh(root)
    shutil.rmtree(root)
    root.write_text("")
    assert store.get_or_compute("x", {}, lambda _: 7) == 7
    assert _only_event(store)["status"] == NOT_STORED


# ---------------------------------------------------------------------------------------------
# A store that cannot be written: the value is computed and used, with a note; never an error.


@pytest.mark.smoke
@pytest.mark.parametrize("code", [errno.ENOSPC, errno.EROFS, errno.EDQUOT])
def test_a_failed_write_computes_without_storing(tmp_path, monkeypatch, code):
    root = tmp_path / "store"
    store = _fresh(root)

    def full(path, data, **_):
        raise OSError(code, os.strerror(code), str(path))

    monkeypatch.setattr(result_store, "_atomic_write", full)
    assert store.get_or_compute("x", {}, lambda _: 7) == 7
    event = _only_event(store)
    assert event["status"] == NOT_STORED and os.strerror(code) in event["note"], event
    assert "computed and not stored" in event["note"] and not list(root.glob("*/*.npz"))


@pytest.mark.smoke
def test_a_checkpoint_that_cannot_be_written_lets_the_computation_go_on(tmp_path, monkeypatch):
    root = tmp_path / "store"
    real = result_store._atomic_write

    def checkpoints_fail(path, data, **options):
        if path.name.endswith(".checkpoint.npz"):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))
        return real(path, data, **options)

    monkeypatch.setattr(result_store, "_atomic_write", checkpoints_fail)

    def compute(checkpoint):
        for step in range(1, 31):
            if checkpoint.due(step):
                checkpoint.save({"step": step})
        return 30

    store = _fresh(root)
    assert store.get_or_compute("x", {}, compute, checkpoint_every=10) == 30
    event = _only_event(store)
    assert event["status"] == COMPUTED and "checkpoint" in event["note"] and "went on without" in event["note"], event
    assert len(list(root.glob("*/*.npz"))) == 1  # the result itself is stored


@pytest.mark.smoke
def test_a_lock_that_cannot_be_taken_computes_without_storing(tmp_path, monkeypatch):
    root = tmp_path / "store"

    def refused(self, *args, **kwargs):
        raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), self.lock_file)

    monkeypatch.setattr(result_store.FileLock, "acquire", refused)
    store = _fresh(root)
    assert store.get_or_compute("x", {}, lambda _: 7) == 7
    event = _only_event(store)
    assert event["status"] == NOT_STORED and "cannot be taken" in event["note"], event


@pytest.mark.smoke
@pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0, reason="root writes through directory permissions")
def test_a_key_folder_without_write_permission_computes_without_storing(tmp_path):
    root = tmp_path / "store"
    store = _fresh(root)
    folder = root / store.key_of("x", {})[:2]
    folder.mkdir(parents=True)
    folder.chmod(0o555)
    try:
        assert store.get_or_compute("x", {}, lambda _: 7) == 7
    finally:
        folder.chmod(0o755)
    assert _only_event(store)["status"] == NOT_STORED


# ---------------------------------------------------------------------------------------------
# A lock held by another process: named after a few seconds; given up on once its holder shows no sign of life.

HOLDER = """
import os, signal, sys, time
from pathlib import Path
from pytest_claims.store.result_store import ResultStore

def compute(_):
    if sys.argv[2] == "stop":
        os.kill(os.getpid(), signal.SIGSTOP)  # stopped while holding the lock (Ctrl-Z, a debugger, a frozen node)
    else:
        time.sleep(float(sys.argv[2]))  # a long computation, alive
    return 5

ResultStore(Path(sys.argv[1])).get_or_compute("shared", {}, compute)
"""


def _holder(root: Path, how: str) -> subprocess.Popen:
    process = subprocess.Popen([sys.executable, "-c", HOLDER, str(root), how])
    deadline = time.monotonic() + 60
    while not list(root.glob("*/*.lock.json")):
        assert process.poll() is None and time.monotonic() < deadline, "the holder never took the lock"
        time.sleep(0.05)
    return process


@pytest.mark.smoke
@pytest.mark.skipif(not hasattr(signal, "SIGSTOP"), reason="no SIGSTOP here")
def test_a_lock_held_by_a_stopped_process_is_named_and_then_given_up_on(tmp_path):
    root = tmp_path / "store"
    holder = _holder(root, "stop")
    try:
        _, status = os.waitpid(holder.pid, os.WUNTRACED)  # returns once it has stopped itself
        assert os.WIFSTOPPED(status)
        heard: list[str] = []
        store = _fresh(root, lock_notice_seconds=1, lock_stale_seconds=4)
        store.on_wait = heard.append
        began = time.monotonic()
        assert _within(60, lambda: store.get_or_compute("shared", {}, lambda _: 5)) == 5
        took = time.monotonic() - began
        event = _only_event(store)
    finally:
        holder.kill()
        holder.wait()
    assert 4 <= took < 30, took
    assert len(heard) == 1 and f"held by pid {holder.pid} on host " in heard[0], heard
    assert event["status"] == NOT_STORED and f"pid {holder.pid}" in event["note"], event
    assert "no sign of life for 4 s" in event["note"] and "computed and not stored" in event["note"], event
    again = _fresh(root)  # the holder gone, its lock is free again
    assert again.get_or_compute("shared", {}, lambda _: 5) == 5 and _only_event(again)["status"] == COMPUTED


@pytest.mark.smoke
def test_a_live_holder_is_waited_for_past_the_stale_limit_and_its_value_read(tmp_path):
    root = tmp_path / "store"
    holder = _holder(root, "9")  # computes for 9 s, touching its record every 2 s
    try:
        store = _fresh(root, lock_notice_seconds=1, lock_stale_seconds=6)
        assert _within(60, lambda: store.get_or_compute("shared", {}, lambda _: pytest.fail("must wait and read"))) == 5
        assert holder.wait(30) == 0
    finally:
        holder.kill()
    event = _only_event(store)
    assert event["status"] == FROM_STORE and f"held by pid {holder.pid} on host " in event["note"], event


# ---------------------------------------------------------------------------------------------
# What it costs: a crafted 1 MB entry that expands to 1 GiB, read by a process of its own.

READER = """
import resource, sys
from pathlib import Path
from pytest_claims.store.result_store import ResultStore

store = ResultStore(Path(sys.argv[1]))
value = store.get_or_compute("x", {}, lambda _: 7)
print(value, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * (1 if sys.platform == "darwin" else 1024))
print(store.take_events("")[0]["note"])
"""


# The example project's one stored result (claims/test_permutations.py under the default seed, smoke tier)
EXAMPLE_RESULT = ("means/fixed-points", {"seed": 1, "trials": 20_000, "items": 20}, [EXAMPLE / "means_kernels.py"])


@pytest.fixture(scope="module")
def one_megabyte_bomb() -> tuple[Path, bytes]:
    """(where in a store, bytes) of a 1 MB entry of the example's result whose one member expands to 1 GiB (four
    times the default ceiling). Each test puts it in a store of its own: reading it there replaces it."""
    name, key, code = EXAMPLE_RESULT
    plain = ResultStore(None)
    digest = plain.key_of(name, key, code)
    entry = _crafted(plain._header(name, key, result_store.code_hash(code)), [_bomb("a0.npy", 1024)])
    return Path(digest[:2]) / f"{digest}.npz", entry


def _placed(bomb: tuple[Path, bytes], root: Path) -> Path:
    where, data = bomb
    (root / where).parent.mkdir(parents=True)
    (root / where).write_bytes(data)
    return root / where


READER = """
import resource, sys
from pathlib import Path
from pytest_claims.store.result_store import ResultStore

store = ResultStore(Path(sys.argv[1]))
name, key, code = eval(sys.argv[2])
value = store.get_or_compute(name, key, lambda _: 7, code=[Path(c) for c in code])
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024)
print(repr(value).replace(chr(10), " "))
print(store.take_events("")[0]["note"] or "(no note)")
"""


def _peak_rss_reading(root: Path) -> tuple[int, str, str]:
    """(peak RSS, value, note) of a process that reads the example's result from the store at `root`."""
    name, key, code = EXAMPLE_RESULT
    found = subprocess.run(
        [sys.executable, "-c", READER, str(root), repr((name, key, [str(c) for c in code]))],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert found.returncode == 0, found.stderr[-3000:]
    peak, value, note = found.stdout.splitlines()
    return int(peak), value, note


@pytest.mark.smoke
@pytest.mark.skipif(sys.platform != "linux", reason="ru_maxrss in KiB (Linux)")
def test_a_one_megabyte_entry_expanding_past_the_ceiling_costs_a_few_megabytes(one_megabyte_bomb, tmp_path):
    entry = _placed(one_megabyte_bomb, tmp_path / "crafted")
    assert entry.stat().st_size < 1.1 * MiB
    name, key, code = EXAMPLE_RESULT
    plain = tmp_path / "store"
    _fresh(plain).get_or_compute(name, key, lambda _: np.arange(10.0), code=code)  # a genuine entry with an array
    baseline, _, _ = _peak_rss_reading(plain)  # the same process reading it (NumPy imported): the baseline
    peak, value, note = _peak_rss_reading(tmp_path / "crafted")
    assert value == "7" and str(entry) in note and "ceiling" in note, (value, note)
    assert peak - baseline < 32 * MiB, f"reading it took {(peak - baseline) / MiB:.0f} MiB above the baseline"


# ---------------------------------------------------------------------------------------------
# Through the plugin, on the example project: the statement test passes and the note reaches the terminal and
# verdicts.json.

RSS_OF_A_RUN = """
import resource, subprocess, sys
ran = subprocess.run([sys.executable, "-m", "pytest", *sys.argv[1:]], check=False)
print("peak rss of the run:", resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024)
sys.exit(ran.returncode)
"""


@pytest.fixture
def means(pytester: pytest.Pytester) -> pytest.Pytester:
    shutil.copytree(EXAMPLE, pytester.path, dirs_exist_ok=True, ignore=shutil.ignore_patterns("reports", ".*"))
    return pytester


def _rate_event(pytester: pytest.Pytester) -> dict:
    """The store event of the example's M3 test, whose claim must stand verified."""
    payload = json.loads((pytester.path / "reports" / "verdicts.json").read_text())
    (m3,) = [c for c in payload["claims"] if c["key"] == "M3"]
    assert m3["verdict"] == "verified", m3
    (events,) = [e for test, e in payload["timings"]["store"].items() if "test_fixed_point_rate" in test]
    return events[0]


@pytest.mark.smoke
@pytest.mark.skipif(sys.platform != "linux", reason="ru_maxrss in KiB (Linux)")
def test_the_example_run_recomputes_a_bomb_entry_in_little_memory_and_says_so(means, one_megabyte_bomb):
    entry = _placed(one_megabyte_bomb, means.path / "store")
    run = subprocess.run(
        [sys.executable, "-c", RSS_OF_A_RUN, "--claims-store-dir=store", "-p", "no:cacheprovider"],
        cwd=means.path,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    peak = int(run.stdout.rsplit("peak rss of the run:", 1)[1])
    assert peak < 300 * MiB, f"the run peaked at {peak / MiB:.0f} MiB"
    assert f"result store: store entry {entry} declares" in run.stdout, run.stdout[-3000:]
    event = _rate_event(means)
    assert event["status"] == RECOMPUTED and str(entry) in event["note"] and "ceiling" in event["note"], event


@pytest.mark.smoke
def test_a_full_disk_through_the_plugin_is_a_note_and_the_claim_stands(means, monkeypatch):
    def full(path, data, **_):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))

    monkeypatch.setattr(result_store, "_atomic_write", full)
    result = means.runpytest_inprocess("--claims-store-dir=store", "-p", "no:cacheprovider")
    assert result.ret == 0, result.stdout.str()[-3000:]
    result.stdout.fnmatch_lines(["result store: store entry *cannot be written (*No space left on device*"])
    event = _rate_event(means)
    assert event["status"] == NOT_STORED and "No space left on device" in event["note"], event
