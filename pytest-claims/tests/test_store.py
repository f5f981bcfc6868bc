"""The result store as a unit: keys, code hashes, memory, namespaces under a mutant."""

from __future__ import annotations

import dataclasses
import importlib.util
import math
import multiprocessing
import os
import time
import types
from pathlib import Path

import numpy as np
import pytest

from pytest_claims.store import codec
from pytest_claims.store import result_store
from pytest_claims.store.result_store import COMPUTED, FROM_STORE, IN_MEMORY, RECOMPUTED, ResultStore, StoreUnusable


def module(where, name: str, source: str) -> types.ModuleType:
    path = where / f"{name}.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.smoke
def test_keys_are_order_free_and_exact(tmp_path):
    store = ResultStore(tmp_path)
    assert store.key_of("x", {"a": 1, "b": 2.0}) == store.key_of("x", {"b": 2.0, "a": 1})
    assert store.key_of("x", {"a": 1}) != store.key_of("x", {"a": 1.0})  # 1 and 1.0 are different keys
    assert store.key_of("x", {"a": 0.1}) != store.key_of("x", {"a": 0.1 + 2**-56})
    with pytest.raises(TypeError, match="JSON-able"):
        store.key_of("x", {"a": object()})


@pytest.mark.smoke
def test_disk_memory_and_events(tmp_path):
    calls = []
    compute = lambda _: calls.append(1) or {"v": 3}  # noqa: E731
    first = ResultStore(tmp_path)
    with first.running_test("t"):
        assert first.get_or_compute("x", {}, compute) == {"v": 3}
        assert first.get_or_compute("x", {}, compute) == {"v": 3}
    second = ResultStore(tmp_path)  # another process: reads the file
    with second.running_test("t"):
        assert second.get_or_compute("x", {}, compute) == {"v": 3}
    assert len(calls) == 1
    assert [e["status"] for e in first.take_events("t")] == [COMPUTED, IN_MEMORY]
    assert [e["status"] for e in second.take_events("t")] == [FROM_STORE]
    assert not first.take_events("") and not second.take_events("")  # the scope ended: nothing recorded outside it
    files = sorted(tmp_path.glob("*/*.npz"))
    assert ResultStore(tmp_path).get_or_compute("y", {}, compute, persist=False) == {"v": 3}
    assert sorted(tmp_path.glob("*/*.npz")) == files  # kept in memory only


@pytest.mark.smoke
def test_a_test_is_charged_once_for_each_value_it_read_ready_made(tmp_path, monkeypatch):
    """reused_seconds (what a mutant's time limit counts): the computing seconds of each value a test read from
    memory or from the store, once however often it read it; nothing for what it computed itself; a stored entry's
    own record of its seconds only when that is a number of seconds a computation can take (none past a year)."""
    clock = iter(float(t) for t in range(0, 1000, 5))
    monkeypatch.setattr(result_store.time, "perf_counter", lambda: next(clock))  # every call 5 s later
    first = ResultStore(tmp_path)
    with first.running_test("computes"):
        first.get_or_compute("x", {}, lambda _: 1)  # 5 s to compute (one tick between start and keep)
    with first.running_test("reads"):
        for _ in range(3):
            first.get_or_compute("x", {}, lambda _: 1)
    assert first.reused_seconds("computes") == 0.0
    assert first.reused_seconds("reads") == first._cost[first.key_of("x", {})] > 0  # once, not three times
    entry = next(tmp_path.glob("*/*.npz"))
    second = ResultStore(tmp_path)
    with second.running_test("reads"):
        second.get_or_compute("x", {}, lambda _: 1)
    assert second.reused_seconds("reads") == codec.load(entry)[0]["seconds"] > 0  # the entry's record of it
    for bad in (-1.0, float("nan"), "soon", True, 1e308, 10**400):  # the last two: no computation's time
        header, value = codec.load(entry)
        entry.write_bytes(codec.dumps({**header, "seconds": bad}, value))
        third = ResultStore(tmp_path)
        with third.running_test("reads"):
            third.get_or_compute("x", {}, lambda _: 1)
        assert third.reused_seconds("reads") == 0.0, bad


@pytest.mark.smoke
def test_a_mutant_never_leaks_into_real_results(tmp_path):
    kernel = module(tmp_path, "toy_kernel_a", "def f():\n    return 1\n")
    other = module(tmp_path, "toy_kernel_b", "def g():\n    return 2\n")
    store = ResultStore(None)
    store.get_or_compute("other", {}, lambda _: other.g(), code=[other])
    with store.under_mutant("mutant", "toy_kernel_a"):
        assert store.get_or_compute("mutated", {}, lambda _: 99, code=[kernel]) == 99  # computed under the mutant
        calls = []
        assert (
            store.get_or_compute("other", {}, lambda _: calls.append(1) or 2, code=[other]) == 2 and not calls
        )  # untouched: reused
        assert store.get_or_compute("unknown", {}, lambda _: 5) == 5  # no code named: treated as touched
    assert store.namespace == ""  # the block ended: the real code again
    assert store.get_or_compute("mutated", {}, lambda _: kernel.f(), code=[kernel]) == 1  # the real value, not 99


def _ask_for_the_shared_key(root: str, log: str, barrier, out: str) -> None:
    def compute(_):
        with open(log, "a") as handle:
            handle.write(f"{os.getpid()}\n")
        time.sleep(0.3)  # long enough for every other process to be waiting on the lock
        return 42

    barrier.wait()  # all ask at the same moment
    Path(out).write_text(str(ResultStore(Path(root)).get_or_compute("shared", {}, compute)))


@pytest.mark.smoke
def test_one_process_computes_a_key_the_others_wait_and_read(tmp_path):
    """As under pytest -n 64: four processes ask for one key at once; one computes, three wait and read."""
    context = multiprocessing.get_context("spawn")
    barrier = context.Barrier(4)
    log = tmp_path / "computations.log"
    processes = [
        context.Process(
            target=_ask_for_the_shared_key, args=(str(tmp_path / "store"), str(log), barrier, str(tmp_path / f"out{i}"))
        )
        for i in range(4)
    ]
    for process in processes:
        process.start()
    for process in processes:
        process.join(60)
    assert [(tmp_path / f"out{i}").read_text() for i in range(4)] == ["42"] * 4
    assert len(log.read_text().split()) == 1


# ---------------------------------------------------------------------------------------------
# Entries that cannot be trusted: recomputed, with the file and the reason named; never executed.


def _only_entry(root: Path) -> Path:
    (entry,) = root.glob("*/*.npz")
    return entry


def _events(store: ResultStore) -> list[dict]:
    return store.take_events("")


def _fresh(root: Path) -> ResultStore:
    store = ResultStore(root)
    return store


class _RunsCode:
    """What a hostile shared store could hold: unpickling this would create the marker file."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return (Path.touch, (self.marker,))


@pytest.mark.smoke
def test_an_entry_that_would_run_code_if_unpickled_is_recomputed_and_never_run(tmp_path):
    import pickle

    root, marker = tmp_path / "store", tmp_path / "code-ran"
    _fresh(root).get_or_compute("x", {"a": 1}, lambda _: 7)
    entry = _only_entry(root)
    entry.write_bytes(pickle.dumps(_RunsCode(marker)))
    entry.with_suffix(".pkl").write_bytes(pickle.dumps(_RunsCode(marker)))  # where format 1 kept it
    store = _fresh(root)
    assert store.get_or_compute("x", {"a": 1}, lambda _: 7) == 7
    (event,) = _events(store)
    assert not marker.exists(), "a store entry ran code"
    assert event["status"] == RECOMPUTED and str(entry) in event["note"] and "unreadable" in event["note"], event
    assert _fresh(root).get_or_compute("x", {"a": 1}, lambda _: pytest.fail("the rewritten entry must be read")) == 7


@pytest.mark.smoke
def test_an_entry_copied_over_another_keys_entry_is_recomputed(tmp_path):
    root = tmp_path / "store"
    store = _fresh(root)
    store.get_or_compute("rates", {"sigma2": 100}, lambda _: np.array([0.0, 0.7]))
    store.get_or_compute("rates", {"sigma2": 1}, lambda _: np.array([0.0, 0.1]))
    here, there = (
        root / d[:2] / f"{d}.npz"
        for d in (store.key_of("rates", {"sigma2": 100}), store.key_of("rates", {"sigma2": 1}))
    )
    here.write_bytes(there.read_bytes())
    again = _fresh(root)
    np.testing.assert_array_equal(
        again.get_or_compute("rates", {"sigma2": 100}, lambda _: np.array([0.0, 0.7])), [0.0, 0.7]
    )
    (event,) = _events(again)
    assert event["status"] == RECOMPUTED and "another key" in event["note"] and str(here) in event["note"], event


@pytest.mark.smoke
@pytest.mark.parametrize("damage", ["truncated", "random bytes", "one byte flipped", "empty"])
def test_a_damaged_entry_is_recomputed_with_its_file_named(tmp_path, damage):
    root = tmp_path / "store"
    value = {"curve": np.linspace(0.0, 1.0, 4096), "steps": 3}
    _fresh(root).get_or_compute("x", {}, lambda _: value)
    entry = _only_entry(root)
    data = bytearray(entry.read_bytes())
    if damage == "truncated":
        data = data[: len(data) // 2]
    elif damage == "random bytes":
        data = bytearray(np.random.default_rng(0).integers(0, 256, len(data), dtype=np.uint8).tobytes())
    elif damage == "one byte flipped":
        data[len(data) // 2] ^= 0x01
    else:
        data = bytearray()
    entry.write_bytes(bytes(data))
    store = _fresh(root)
    got = store.get_or_compute("x", {}, lambda _: value)
    np.testing.assert_array_equal(got["curve"], value["curve"])
    (event,) = _events(store)
    assert event["status"] == RECOMPUTED and str(entry) in event["note"], event


@pytest.mark.smoke
def test_a_corrupt_checkpoint_starts_afresh_and_says_so(tmp_path):
    root = tmp_path / "store"

    def compute(checkpoint):
        state = checkpoint.load() or {"step": 0, "total": 0}
        return state["total"] + sum(range(state["step"] + 1, 11))

    store = _fresh(root)
    digest = store.key_of("sum", {})
    (root / digest[:2]).mkdir(parents=True)
    (root / digest[:2] / f"{digest}.checkpoint.npz").write_bytes(b"PK\x03\x04 not an archive")
    assert store.get_or_compute("sum", {}, compute) == 55
    (event,) = _events(store)
    assert event["status"] == COMPUTED and "checkpoint" in event["note"] and "started afresh" in event["note"], event


@pytest.mark.smoke
def test_a_resumed_value_is_charged_every_sitting_it_took(tmp_path, monkeypatch):
    """A computation stopped after its checkpoint and resumed costs a mutant of its code the whole of it (the
    mutant's key has no checkpoint): its entry records the seconds up to the checkpoint plus the last sitting's, and
    the test that resumed it is charged the earlier sittings (its own time holds only the last)."""
    now = [0.0]
    monkeypatch.setattr(result_store.time, "perf_counter", lambda: now[0])

    def compute(checkpoint, stop=False):
        state = checkpoint.load() or {"step": 0}
        for step in range(state["step"] + 1, 11):
            now[0] += 10.0  # each step takes 10 s: 100 s from scratch
            checkpoint.save({"step": step})
            if stop and step == 9:
                now[0] += 5.0  # lost with the stop: redone after the resume
                raise KeyboardInterrupt
        return step

    with pytest.raises(KeyboardInterrupt):
        _fresh(tmp_path).get_or_compute("x", {}, lambda c: compute(c, stop=True), checkpoint_every=1)
    store = _fresh(tmp_path)
    with store.running_test("resumes"):
        assert store.get_or_compute("x", {}, compute, checkpoint_every=1) == 10
    assert codec.load(_only_entry(tmp_path))[0]["seconds"] == pytest.approx(100.0)
    assert store.reused_seconds("resumes") == pytest.approx(90.0)
    later = _fresh(tmp_path)
    with later.running_test("reads"):
        later.get_or_compute("x", {}, compute)
    assert later.reused_seconds("reads") == pytest.approx(100.0)


@pytest.mark.smoke
def test_a_read_only_store_reads_what_it_has_and_computes_the_rest_unstored(tmp_path, monkeypatch):
    root = tmp_path / "store"
    _fresh(root).get_or_compute("kept", {}, lambda _: 1)
    monkeypatch.setattr(result_store, "_writable_directory", lambda _root: False)
    store = _fresh(root)
    assert store.read_only and "read-only" in store.mode and str(root) in store.mode
    assert store.get_or_compute("kept", {}, lambda _: pytest.fail("must be read")) == 1
    assert store.get_or_compute("new", {}, lambda _: 2) == 2
    assert [e["status"] for e in _events(store)] == [FROM_STORE, COMPUTED]
    assert len(list(root.glob("*/*.npz"))) == 1 and not list(root.glob("*/*.lock"))[1:]


@pytest.mark.smoke
@pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0, reason="root writes through directory permissions")
def test_a_directory_without_write_permission_is_found_read_only(tmp_path):
    root = tmp_path / "store"
    root.mkdir()
    root.chmod(0o555)
    try:
        assert ResultStore(root).read_only
    finally:
        root.chmod(0o755)


@pytest.mark.smoke
def test_a_store_path_that_is_a_file_is_one_line(tmp_path):
    path = tmp_path / "store"
    path.write_text("")
    with pytest.raises(StoreUnusable, match=f"{path} is not a directory.*--claims-store-dir"):
        ResultStore(path)


@dataclasses.dataclass(frozen=True)
class _Config:
    eta: float
    rho: float | None


@pytest.mark.smoke
def test_the_codec_keeps_every_kind_of_value_exactly():
    import torch

    value = {
        "configs": [_Config(1e-5, None), _Config(1e-6, 1e-3)],
        None: {0.5: (1, "a")},
        (1, 2): [True, None],
        "f32": np.float32(44.018078),
        "nan": float("nan"),
        "ints": np.arange(5, dtype=np.int64),
        "empty": np.zeros((0, 3)),
        "tensor": torch.arange(4, dtype=torch.float32),
        "big": 2**80,
    }
    header, got = codec.loads(codec.dumps({"name": "x"}, value))
    assert header == {"name": "x"}
    assert got["configs"] == value["configs"] and got[None] == {0.5: (1, "a")} and got[(1, 2)] == [True, None]
    assert (
        type(got["f32"]) is np.float32 and got["f32"] == value["f32"] and math.isnan(got["nan"]) and got["big"] == 2**80
    )
    assert (
        got["ints"].dtype == np.int64 and got["empty"].shape == (0, 3) and torch.equal(got["tensor"], value["tensor"])
    )
    with pytest.raises(TypeError, match="cannot keep a builtins.object"):
        codec.dumps({}, {"x": object()})
    with pytest.raises(TypeError, match="object arrays"):
        codec.dumps({}, np.array([object()]))
