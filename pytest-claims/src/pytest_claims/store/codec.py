"""The result store's file format: data only, never code.

An entry is one zip archive (the layout of NumPy's `.npz`): `header.json`, holding the entry's full key
and the value's tree, and one `.npy` member per array (read with `allow_pickle=False`), referred to by
number from the tree. NumPy is imported only for an entry that holds arrays, so the store works without it.
The tree knows None, bool, int, float, str, list, tuple, dict (any of these as keys), NumPy arrays and
scalars of a plain dtype, CPU torch tensors, and dataclasses whose class is already imported (an entry
never imports a module). A sha256 over the tree and the arrays' bytes is checked on every read, so an
entry truncated, flipped or copied over another is found out (`EntryInvalid`, with the reason) and
recomputed, never believed.

Entries come from other machines, so a read is bounded before anything is allocated: only a regular file
is opened (never through a symbolic link, never a FIFO that would block), no larger than a ceiling
(`MAX_ENTRY_BYTES`); members are stored, never compressed (so nothing is decompressed and no member can
hold more than the file does), their declared sizes are checked against the ceiling and the file, each
member is read through a reader that stops at its declared size, and each `.npy` header's shape and dtype
must account for exactly the bytes its member holds. The content hash is checked before any value is
built from the bytes.
"""

from __future__ import annotations

import dataclasses
import hashlib
import io
import json
import sys
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

from pytest_claims.store import bounded

HEADER = "header.json"
TAG = "$t"
# The most bytes one entry may hold, on disk and in its members together. Far above what a store of this kind keeps
# per key (counts over a grid of trials, a training run's metrics: this suite's smoke entries are under 10 KB), and low
# enough that reading an entry (about 2.5 times its size in memory at the peak, measured) cannot exhaust a worker's
# share of a 64-worker machine. An entry above it is recomputed and a result above it is not stored (both with a
# note); ResultStore(max_entry_bytes=...) changes it.
MAX_ENTRY_BYTES = 256 * 2**20


class EntryInvalid(Exception):
    """A store entry that cannot be trusted: unreadable, altered, or not the entry of its key."""


def _encoder(arrays: list[Any]) -> Callable[[Any], Any]:
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


def _decoder(arrays: list[Any]) -> Callable[[Any], Any]:
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


def read_bounded(path: Path, limit: int = MAX_ENTRY_BYTES) -> bytes:
    """The bytes of the regular file `path`, at most `limit` of them (pytest_claims.store.bounded, never following a
    symbolic link); EntryInvalid for a file refused there, FileNotFoundError if there is none."""
    try:
        return bounded.read_bounded(path, limit, ceiling="the store's ceiling")
    except bounded.InputRefused as error:
        raise EntryInvalid(str(error)) from None


def load(path: Path, limit: int = MAX_ENTRY_BYTES) -> tuple[dict[str, Any], Any]:
    """(header, value) of the entry file `path` (read_bounded, then loads); FileNotFoundError if there is none."""
    return loads(read_bounded(path, limit), limit)


def _members(archive: zipfile.ZipFile, size: int, limit: int) -> list[zipfile.ZipInfo]:
    """The archive's members (header first, then a0.npy, a1.npy, ...), their declared sizes checked against the
    ceiling and against the `size` bytes of the archive before any member is read."""
    infos = archive.infolist()
    arrays = sorted((i for i in infos if i.filename != HEADER), key=lambda i: (len(i.filename), i.filename))
    names = [i.filename for i in arrays]
    if len(infos) - len(arrays) != 1 or names != [f"a{i}.npy" for i in range(len(names))]:
        raise EntryInvalid(f"has unexpected members {[i.filename for i in infos][:6]}")
    declared = sum(i.file_size for i in infos)
    if declared > limit:
        raise EntryInvalid(f"declares {declared} bytes in its members, above the store's ceiling of {limit}")
    for info in infos:
        if info.compress_type != zipfile.ZIP_STORED:
            raise EntryInvalid(
                f"has a compressed member {info.filename} (method {info.compress_type}); "
                "this store writes stored members only, so nothing is ever decompressed"
            )
        if info.compress_size != info.file_size or info.header_offset + info.compress_size > size:
            raise EntryInvalid(f"declares more bytes in {info.filename} than the file holds")
    return [archive.getinfo(HEADER), *arrays]


def _read_member(archive: zipfile.ZipFile, info: zipfile.ZipInfo) -> bytearray:
    """A member's bytes through a reader that stops at its declared size (the directory may lie)."""
    buffer = bytearray(info.file_size)
    # A ZipExtFile, which has readinto (typeshed types ZipFile.open as IO[bytes], which has not).
    with cast(zipfile.ZipExtFile, archive.open(info)) as member:
        got = member.readinto(buffer)
        if got != info.file_size or member.read(1):
            raise EntryInvalid(f"holds other than the {info.file_size} bytes its directory declares in {info.filename}")
    return buffer


def _array_layout(name: str, data: bytearray, limit: int) -> tuple[Any, tuple[int, ...], int]:
    """(dtype, shape, offset of the data) from a `.npy` member's header, which must account for exactly the bytes
    the member holds (checked before any array is allocated)."""
    from numpy.lib import format as npy

    stream = io.BytesIO(data)
    version = npy.read_magic(stream)
    if version == (1, 0):
        shape, fortran_order, dtype = npy.read_array_header_1_0(stream)
    elif version == (2, 0):
        shape, fortran_order, dtype = npy.read_array_header_2_0(stream)
    else:
        raise EntryInvalid(f"has {name} in .npy version {version}, which this store does not write")
    if dtype.hasobject or fortran_order:
        raise EntryInvalid(f"has {name} with {'an object dtype' if dtype.hasobject else 'Fortran order'}")
    if not all(isinstance(n, int) and n >= 0 for n in shape):
        raise EntryInvalid(f"has {name} with the shape {shape!r}")
    count = 1
    for n in shape:
        count *= n
    offset = stream.tell()
    if count * max(dtype.itemsize, 1) > limit or count * dtype.itemsize != len(data) - offset:
        raise EntryInvalid(
            f"has {name} whose header declares {shape} of {dtype.str} ({count * dtype.itemsize} bytes), "
            f"and the member holds {len(data) - offset}"
        )
    return dtype, shape, offset


def loads(data: bytes, limit: int = MAX_ENTRY_BYTES) -> tuple[dict[str, Any], Any]:
    """(header, value) of an entry, or EntryInvalid saying why it cannot be trusted."""
    if not data.startswith(b"PK\x03\x04"):
        raise EntryInvalid(f"unreadable (not a zip archive: it starts with {bytes(data[:8])!r})")
    if len(data) > limit:
        raise EntryInvalid(f"is {len(data)} bytes, above the store's ceiling of {limit}")
    layouts: list[tuple[Any, tuple[int, ...], int, bytearray]] = []
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            header_info, *array_infos = _members(archive, len(data), limit)
            header = json.loads(_read_member(archive, header_info))
            if array_infos:
                try:
                    import numpy  # noqa: F401 (the .npy headers are NumPy's)
                except ImportError:
                    raise EntryInvalid("holds arrays, and NumPy is not installed") from None
            for info in array_infos:
                member = _read_member(archive, info)
                layouts.append((*_array_layout(info.filename, member, limit), member))
    # RuntimeError: an encrypted member, a JSON header nested past the recursion limit
    except (zipfile.BadZipFile, ValueError, KeyError, OSError, EOFError, RuntimeError) as error:
        raise EntryInvalid(f"unreadable ({type(error).__name__}: {error})") from None
    if not isinstance(header, dict) or not isinstance(header.get("tree"), str):
        raise EntryInvalid("has no value tree in its header")
    tree_json = header.pop("tree").encode()
    digest = hashlib.sha256(tree_json)
    for dtype, shape, offset, member in layouts:  # as _content_hash, over the members' bytes: nothing built yet
        digest.update(f"|{dtype.str}|{shape}|".encode())
        digest.update(memoryview(member)[offset:])
    if header.pop("content_sha256", None) != digest.hexdigest():
        raise EntryInvalid("fails its content hash (altered or truncated)")
    arrays = [_array(*layout) for layout in layouts]
    try:
        value = _decoder(arrays)(json.loads(tree_json))
    except EntryInvalid:
        raise
    except Exception as error:  # a tree can be malformed in any way; the content hash is a checksum, not a signature
        raise EntryInvalid(f"has a malformed value tree ({type(error).__name__}: {error})") from None
    return header, value


def _array(dtype: Any, shape: tuple[int, ...], offset: int, member: bytearray) -> Any:
    """The array over a member's own bytes (writable, as numpy.load's; no copy)."""
    import numpy as np

    if dtype.itemsize == 0:
        return np.empty(shape, dtype)
    count = len(member) - offset
    return np.frombuffer(member, dtype=dtype, count=count // dtype.itemsize, offset=offset).reshape(shape)
