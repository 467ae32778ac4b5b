"""Input files read as data: regular files only, each read within a bound.

A path given as a file may name a FIFO (opening it for reading blocks until a writer comes), a device (/dev/zero
reads forever, /dev/full too) or a folder. Every reader of a file from outside opens it here: without blocking
(`O_NONBLOCK`), refusing at once what the opened descriptor shows is not a regular file, then reading at most a
bound that the reader names. Standard library only: `checksums`, which the ONNX path imports without torch, uses it.
"""

from __future__ import annotations

import errno
import fcntl
import os
import stat
from pathlib import Path
from typing import BinaryIO

__all__ = ["NotARegularFile", "TooBig", "file_kind", "open_regular", "read_regular", "regular_file_problem"]

_KINDS = (
    (stat.S_ISDIR, "a folder"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISLNK, "a link"),
)


def file_kind(mode: int) -> str:
    """What a `st_mode` names, in words: "a regular file", "a folder", "a FIFO (named pipe)", "a character device"."""
    if stat.S_ISREG(mode):
        return "a regular file"
    return next((words for test, words in _KINDS if test(mode)), "not a file")


class NotARegularFile(OSError):
    """A path read as data names something else than a regular file; `str()` is one line naming it and its kind."""

    def __init__(self, path: str | Path, kind: str) -> None:
        super().__init__(errno.EINVAL, f"not a regular file but {kind}")
        self.filename = str(path)
        self.kind = kind

    def __str__(self) -> str:
        return f"{self.filename}: {self.strerror}; only regular files are read"


class TooBig(OSError):
    """A file over the bound its reader allows; `str()` is one line naming it and the bound."""

    def __init__(self, path: str | Path, limit: int) -> None:
        super().__init__(errno.EFBIG, f"over {_shown_bytes(limit)}, more than such a file holds: not read")
        self.filename = str(path)

    def __str__(self) -> str:
        return f"{self.filename}: {self.strerror}"


_BLOCK = 1 << 16  # what each read past a file's stated size asks for


def _shown_bytes(count: int) -> str:
    return f"{count >> 20} MiB" if count >= 1 << 20 else f"{count:,} bytes"


def open_regular(path: str | Path) -> BinaryIO:
    """`path` opened for reading in binary, without blocking on a FIFO; raises `NotARegularFile` when it is not a
    regular file (a link is followed), `OSError` (FileNotFoundError, ...) when it cannot be opened."""
    descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        mode = os.fstat(descriptor).st_mode
        if not stat.S_ISREG(mode):
            raise NotARegularFile(path, file_kind(mode))
        fcntl.fcntl(descriptor, fcntl.F_SETFL, fcntl.fcntl(descriptor, fcntl.F_GETFL) & ~os.O_NONBLOCK)
        return os.fdopen(descriptor, "rb")
    except BaseException:
        os.close(descriptor)
        raise


def read_regular(path: str | Path, limit: int) -> bytes:
    """The content of the regular file `path`, refused (`TooBig`) when it holds over `limit` bytes: checked before
    the read and again by the read itself (a file that grows meanwhile, or a /proc file that says 0, is not read
    past the bound). The first read asks for the size the file has, not for `limit`: Python allocates what it is
    asked for."""
    with open_regular(path) as file:
        size = os.fstat(file.fileno()).st_size
        if size > limit:
            raise TooBig(path, limit)
        blocks, total, wanted = [], 0, size + 1
        while block := file.read(min(wanted, limit + 1 - total)):
            blocks.append(block)
            total += len(block)
            if total > limit:
                raise TooBig(path, limit)
            wanted = _BLOCK
    return b"".join(blocks)


def regular_file_problem(path: str | Path, what: str) -> str | None:
    """The line refusing `path` as the `what` ("weights file") a reader opens with a library of its own (h5py,
    torch): "no such weights file", or that it is no regular file; None for a regular file (a link is followed)."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return f"{path}: no such {what}"
    except OSError as error:
        return f"{path}: the {what} cannot be read ({error.strerror or error})"
    return None if stat.S_ISREG(mode) else f"{NotARegularFile(path, file_kind(mode))}: expected the {what}"
