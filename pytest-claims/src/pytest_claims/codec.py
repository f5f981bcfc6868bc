"""The result store's file format: data only, never code.

An entry is one zip archive (the layout of NumPy's `.npz`): `header.json`, holding the entry's full key
and the value's tree, and one `.npy` member per array (read with `allow_pickle=False`), referred to by
number from the tree. NumPy is imported only for an entry that holds arrays, so the store works without it.
The tree knows None, bool, int, float, str, list, tuple, dict (any of these as keys), NumPy arrays and
scalars of a plain dtype, CPU torch tensors, and dataclasses whose class is already imported (an entry
never imports a module). A sha256 over the tree and the arrays' bytes is checked on every read, so an
entry truncated, flipped or copied over another is found out (`EntryInvalid`, with the reason) and
recomputed, never believed.
"""

from __future__ import annotations

import dataclasses
import hashlib
import io
import json
import sys
import zipfile
from typing import Any

HEADER = "header.json"
TAG = "$t"


class EntryInvalid(Exception):
    """A store entry that cannot be trusted: unreadable, altered, or not the entry of its key."""


def _encoder(arrays: list[Any]):
    np = sys.modules.get("numpy")  # not imported: no value can be a NumPy array

    def enc(value: Any) -> Any:
        if value is None or isinstance(value, (bool, str)):
            return value
        if type(value) in (int, float):  # exactly: bool and other subclasses are not kept as numbers
            return value
        if np is not None and isinstance(value, (np.ndarray, np.generic)):
            array = np.asarray(value)
            if array.dtype.hasobject:
                raise TypeError("the result store keeps arrays of plain dtypes, not object arrays")
            arrays.append(array.copy(order="C"))  # (ascontiguousarray would make a scalar 1-d)
            return {TAG: "array" if isinstance(value, np.ndarray) else "scalar", "i": len(arrays) - 1}
        if type(value).__module__ == "torch" and type(value).__name__ in ("Tensor", "Parameter"):
            arrays.append(value.detach().cpu().numpy().copy(order="C"))
            return {TAG: "tensor", "i": len(arrays) - 1}
        if isinstance(value, list):
            return [enc(v) for v in value]
        if isinstance(value, tuple):
            return {TAG: "tuple", "v": [enc(v) for v in value]}
        if isinstance(value, dict):
            return {TAG: "dict", "v": [[enc(k), enc(v)] for k, v in value.items()]}
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            cls = type(value)
            fields = {f.name: enc(getattr(value, f.name)) for f in dataclasses.fields(value)}
            return {TAG: "dataclass", "type": f"{cls.__module__}:{cls.__qualname__}", "v": fields}
        raise TypeError(
            f"the result store cannot keep a {type(value).__module__}.{type(value).__qualname__}; "
            "return arrays, numbers, strings, lists, tuples, dicts or dataclasses"
        )

    return enc


def _loaded_dataclass(name: str) -> type:
    """A dataclass named module:qualname, from modules already imported (an entry never imports one)."""
    module_name, _, qualname = name.partition(":")
    target: Any = sys.modules.get(module_name)
    if target is None:
        raise EntryInvalid(f"names the class {name}, whose module is not imported")
    for part in qualname.split("."):
        target = getattr(target, part, None)
    if not (isinstance(target, type) and dataclasses.is_dataclass(target)):
        raise EntryInvalid(f"names {name}, which is not a dataclass")
    return target


def _decoder(arrays: list[Any]):
    def dec(node: Any) -> Any:
        if isinstance(node, list):
            return [dec(v) for v in node]
        if not isinstance(node, dict):
            return node
        tag = node.get(TAG)
        if tag == "array":
            return arrays[node["i"]]
        if tag == "scalar":
            return arrays[node["i"]][()]
        if tag == "tensor":
            torch = sys.modules.get("torch")
            if torch is None:
                raise EntryInvalid("holds a torch tensor, and torch is not imported")
            return torch.from_numpy(arrays[node["i"]].copy())
        if tag == "tuple":
            return tuple(dec(v) for v in node["v"])
        if tag == "dict":
            return {_hashable(dec(k)): dec(v) for k, v in node["v"]}
        if tag == "dataclass":
            cls = _loaded_dataclass(node["type"])
            values = {k: dec(v) for k, v in node["v"].items()}
            init = {f.name for f in dataclasses.fields(cls) if f.init}
            made = cls(**{k: v for k, v in values.items() if k in init})
            for k, v in values.items():
                if k not in init:
                    object.__setattr__(made, k, v)
            return made
        raise EntryInvalid(f"has a node of unknown kind {tag!r}")

    return dec


def _hashable(key: Any) -> Any:
    return tuple(_hashable(k) for k in key) if isinstance(key, list) else key


def _content_hash(tree_json: bytes, arrays: list[Any]) -> str:
    digest = hashlib.sha256(tree_json)
    for array in arrays:
        digest.update(f"|{array.dtype.str}|{array.shape}|".encode())
        digest.update(array.tobytes())
    return digest.hexdigest()


def dumps(header: dict[str, Any], value: Any) -> bytes:
    """An entry's bytes: `header` (JSON-able: the key) and `value`, with the content hash."""
    arrays: list[Any] = []
    tree_json = json.dumps(_encoder(arrays)(value), separators=(",", ":")).encode()
    full = {**header, "tree": tree_json.decode(), "content_sha256": _content_hash(tree_json, arrays)}
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_STORED) as archive:
        archive.writestr(HEADER, json.dumps(full))
        if arrays:
            from numpy.lib import format as npy

            for i, array in enumerate(arrays):
                member = io.BytesIO()
                npy.write_array(member, array, allow_pickle=False)
                archive.writestr(f"a{i}.npy", member.getvalue())
    return buffer.getvalue()


def _read_arrays(archive: zipfile.ZipFile) -> list[Any]:
    names = sorted((n for n in archive.namelist() if n != HEADER), key=lambda n: (len(n), n))
    if names != [f"a{i}.npy" for i in range(len(names))]:
        raise EntryInvalid(f"has unexpected members {names[:5]}")
    if not names:
        return []
    try:
        from numpy.lib import format as npy
    except ImportError:
        raise EntryInvalid("holds arrays, and NumPy is not installed") from None
    return [npy.read_array(io.BytesIO(archive.read(n)), allow_pickle=False) for n in names]


def loads(data: bytes) -> tuple[dict[str, Any], Any]:
    """(header, value) of an entry, or EntryInvalid saying why it cannot be trusted."""
    if not data.startswith(b"PK\x03\x04"):
        raise EntryInvalid(f"unreadable (not a zip archive: it starts with {data[:8]!r})")
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            header = json.loads(archive.read(HEADER))
            arrays = _read_arrays(archive)
    except (zipfile.BadZipFile, ValueError, KeyError, OSError, EOFError, UnicodeDecodeError) as error:
        raise EntryInvalid(f"unreadable ({type(error).__name__}: {error})") from None
    if not isinstance(header, dict) or not isinstance(header.get("tree"), str):
        raise EntryInvalid("has no value tree in its header")
    tree_json = header.pop("tree").encode()
    if header.pop("content_sha256", None) != _content_hash(tree_json, arrays):
        raise EntryInvalid("fails its content hash (altered or truncated)")
    try:
        value = _decoder(arrays)(json.loads(tree_json))
    except (KeyError, IndexError, TypeError, ValueError) as error:
        raise EntryInvalid(f"has a malformed value tree ({type(error).__name__}: {error})") from None
    return header, value
