"""The result store as a unit: keys, code hashes, memory, namespaces under a mutant."""
from __future__ import annotations

import importlib.util
import types

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
