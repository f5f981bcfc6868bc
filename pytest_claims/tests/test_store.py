"""The result store as a unit: keys, code hashes, memory, namespaces under a mutant."""
from __future__ import annotations

import importlib.util
import multiprocessing
import os
import time
import types
from pathlib import Path

import pytest

from pytest_claims.store import COMPUTED, FROM_STORE, IN_MEMORY, ResultStore


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
    first.current_test = "t"
    assert first.get_or_compute("x", {}, compute) == {"v": 3}
    assert first.get_or_compute("x", {}, compute) == {"v": 3}
    second = ResultStore(tmp_path)  # another process: reads the file
    second.current_test = "t"
    assert second.get_or_compute("x", {}, compute) == {"v": 3}
    assert len(calls) == 1
    assert [e["status"] for e in first.take_events("t")] == [COMPUTED, IN_MEMORY]
    assert [e["status"] for e in second.take_events("t")] == [FROM_STORE]
    files = sorted(tmp_path.glob("*/*.pkl"))
    assert ResultStore(tmp_path).get_or_compute("y", {}, compute, persist=False) == {"v": 3}
    assert sorted(tmp_path.glob("*/*.pkl")) == files  # kept in memory only


@pytest.mark.smoke
def test_a_mutant_never_leaks_into_real_results(tmp_path):
    kernel = module(tmp_path, "toy_kernel_a", "def f():\n    return 1\n")
    other = module(tmp_path, "toy_kernel_b", "def g():\n    return 2\n")
    store = ResultStore(None)
    store.get_or_compute("other", {}, lambda _: other.g(), code=[other])
    store.namespace, store.mutated_module = "mutant", "toy_kernel_a"
    assert store.get_or_compute("mutated", {}, lambda _: 99, code=[kernel]) == 99  # computed under the mutant
    calls = []
    assert store.get_or_compute("other", {}, lambda _: calls.append(1) or 2, code=[other]) == 2 and not calls  # untouched: reused
    assert store.get_or_compute("unknown", {}, lambda _: 5) == 5  # no code named: treated as touched
    store.namespace = store.mutated_module = ""
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
        context.Process(target=_ask_for_the_shared_key, args=(str(tmp_path / "store"), str(log), barrier, str(tmp_path / f"out{i}")))
        for i in range(4)
    ]
    for process in processes:
        process.start()
    for process in processes:
        process.join(60)
    assert [(tmp_path / f"out{i}").read_text() for i in range(4)] == ["42"] * 4
    assert len(log.read_text().split()) == 1
