"""One writer per output: a second process that would write the same file or folder stops before it touches it.

The lock is `TARGET.lock` beside the target (a folder target is replaced by a rename, so the lock cannot live inside
it), held with `fcntl.flock` for as long as the writer runs. The kernel drops the lock when its holder exits, however
it exits (SIGKILL included), so a killed run never blocks the next one; a stale lock file left by such a run is
simply locked again. The lock file holds its holder's pid and command line, so that the refusal names the running
process. It is taken before anything is opened for writing, the staging path (`OUT.partial`) included, and before
the checks that look at the staging path ("an interrupted run"), which are only true once no one holds the lock.
"""

from __future__ import annotations

import fcntl
import os
import shlex
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from elmo_transformers.common.errors import ElmoError
from elmo_transformers.common.regular_files import file_kind

__all__ = ["lock_path", "output_lock"]

_LOCK = ".lock"


def lock_path(target: str | Path) -> Path:
    """The lock file of `target`: `TARGET.lock` beside it."""
    target = Path(target)
    return target.with_name(f"{target.name}{_LOCK}")


def _holder(path: Path) -> str:
    """Who holds the lock `path`, as its file says ("process 123 (elmo-embed a.txt a.hdf5)")."""
    try:
        pid, _, command = path.read_text(encoding="utf-8").partition("\n")
    except OSError:
        return "another process"
    return f"process {pid.strip()} ({command.strip()})" if pid.strip() else "another process"


def _open_lock_file(path: Path, error: type[ElmoError]) -> int:
    """A descriptor of the lock file `path`, created (with its folder) if need be; `error` when the folder cannot
    be written (a read-only file system, no permission, a file where a folder above it should be: mkdir would call
    that "File exists" or "Not a directory"): nothing of the output could be written there either."""
    blocking = next((above for above in path.parents if above.exists() or above.is_symlink()), None)
    if blocking is not None and not blocking.is_dir():
        kind = file_kind(os.stat(blocking).st_mode) if blocking.exists() else "a broken link"
        raise error(f"{blocking} is {kind}, not a folder: nothing can be written under it; write the output elsewhere")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        return os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as failure:
        raise error(
            f"{path.parent}: cannot write the output there ({failure.strerror}: {path} cannot be created): write it"
            " to another folder"
        ) from None


@contextmanager
def output_lock(target: str | Path, *, error: type[ElmoError]) -> Iterator[None]:
    """Hold the lock of `target` inside the block, or raise `error` naming the process that holds it.

    A lock file whose name was unlinked or replaced while this process waited for it (its holder finished and
    removed it) is not the lock any more: the loop locks the file that the path names now.
    """
    target = Path(target)
    path = lock_path(target)
    while True:
        descriptor = _open_lock_file(path, error)
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(descriptor)
            raise error(
                f"{target} is being written by {_holder(path)}: wait for it to finish, or stop it first"
            ) from None
        try:
            same_file = os.path.samestat(os.fstat(descriptor), os.stat(path))
        except FileNotFoundError:
            same_file = False
        if same_file:
            break
        os.close(descriptor)
    try:
        os.ftruncate(descriptor, 0)
        os.write(descriptor, f"{os.getpid()}\n{shlex.join([Path(sys.argv[0]).name, *sys.argv[1:]])}\n".encode())
        yield
    finally:
        # Unlinked while still held: a process that opened the old file finds it replaced and tries again.
        path.unlink(missing_ok=True)
        os.close(descriptor)
