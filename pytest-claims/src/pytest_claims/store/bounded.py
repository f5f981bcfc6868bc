"""The one reader of files from elsewhere: regular files only, sizes bounded before anything is read.

Every file the plugin reads from elsewhere goes through `read_bounded`: the result store's entries
(pytest_claims.store.codec), continuation ledgers (pytest_claims.statements.ledger), merge and export inputs and
`--claims-previous-verdicts` (pytest_claims.model.verdicts_json). A FIFO would block the reader for ever and a device
such as
`/dev/zero` would fill its memory, so only a regular file is opened, checked from its `lstat` (or `stat`, where a
symbolic link given by the user is followed) and again from the opened descriptor, and no more than the limit of
its kind is read. `read_json` adds the JSON step: a document nested deeper than Python's recursion limit is refused
in one line (`InputRefused`), never a RecursionError.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any


class InputRefused(Exception):
    """A file that is not read: not a regular file, over its limit, or changed while read (the message says which)."""


def file_kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return "not a regular file"


def read_bounded(path: str | Path, limit: int, *, follow_links: bool = False, ceiling: str = "the limit") -> bytes:
    """The bytes of the regular file `path`, at most `limit` of them; FileNotFoundError if there is none.

    A directory, a FIFO or a device is refused (InputRefused) from its status, without opening it; a symbolic link
    is refused too unless `follow_links` (a path the user named); the file is opened with O_NONBLOCK (and O_NOFOLLOW
    unless following) and checked again, so a swap between the two finds nothing to follow or to block on.
    `ceiling` names the limit in the message ("the store's ceiling")."""
    info = os.stat(path) if follow_links else os.lstat(path)
    if stat.S_ISLNK(info.st_mode):
        try:
            target = os.readlink(path)
        except OSError:
            target = "?"
        raise InputRefused(f"is a symbolic link (to {target}), not followed")
    if not stat.S_ISREG(info.st_mode):
        raise InputRefused(f"is {file_kind(info.st_mode)}, not a regular file")
    if info.st_size > limit:
        raise InputRefused(f"is {info.st_size} bytes, above {ceiling} of {limit}")
    nofollow = 0 if follow_links else getattr(os, "O_NOFOLLOW", 0)
    flags = os.O_RDONLY | nofollow | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0)
    try:
        fd = os.open(path, flags)
    except OSError as error:
        if not os.path.lexists(path):
            raise
        raise InputRefused(f"cannot be opened as a regular file ({error})") from None
    with open(fd, "rb", buffering=0, closefd=True) as handle:
        opened = os.fstat(fd)
        if not stat.S_ISREG(opened.st_mode) or (opened.st_dev, opened.st_ino) != (info.st_dev, info.st_ino):
            raise InputRefused("was replaced while it was opened")
        # One byte more than fstat says, to notice a file that grows as it is read (the plugin's files are renamed
        # into place whole, so one that changes is not one it wrote)
        wanted = min(opened.st_size, limit) + 1
        chunks: list[bytes] = []
        size = 0
        while size < wanted:
            chunk = handle.read(wanted - size)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    if size == wanted:
        raise InputRefused("grew while it was read")
    return b"".join(chunks)


def read_json(path: str | Path, limit: int, *, follow_links: bool = True, ceiling: str = "the limit") -> Any:
    """The JSON document of the file `path` (read_bounded); InputRefused for a file refused or nested too deep,
    ValueError (JSON's, UnicodeDecodeError) for one that is not JSON, OSError for one that cannot be read."""
    data = read_bounded(path, limit, follow_links=follow_links, ceiling=ceiling)
    try:
        return json.loads(data)
    except RecursionError:
        raise InputRefused("is JSON nested deeper than this reader follows: not read") from None
