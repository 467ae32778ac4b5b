"""A full disk, told in one line: before a long write (is there clearly too little room?) and when a write fails.

Libraries report a full disk in their own ways: Python's OSError carries errno ENOSPC; h5py and safetensors raise
their own errors whose text holds the operating system's message ("No space left on device", "os error 28"). Both
are recognised here, through the chain of causes, so that each writer can say which file, what is safely stored
and how to continue, instead of a traceback.
"""

from __future__ import annotations

import errno
import shutil
from pathlib import Path

from elmo_transformers.common.errors import ConversionError, ElmoError

__all__ = ["NO_SPACE_CHECK", "check_free_space", "format_bytes", "is_disk_full", "require_room"]

# The flag that skips `check_free_space`, in the elmo-* tools (the training scripts spell it --no_space_check).
NO_SPACE_CHECK = "--no-space-check"
_FULL_ERRNOS = {errno.ENOSPC, errno.EDQUOT}
_FULL_TEXTS = ("no space left on device", "disk quota exceeded", f"os error {errno.ENOSPC}")


def is_disk_full(error: BaseException) -> bool:
    """Whether `error`, or an error it was raised from, says the disk (or the user's quota) is full."""
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, OSError) and current.errno in _FULL_ERRNOS:
            return True
        if any(text in str(current).lower() for text in _FULL_TEXTS):
            return True
        current = current.__cause__ or current.__context__
    return False


def format_bytes(size: float) -> str:
    """E.g. "1.5 GB" (powers of 1000, as `df -H` and disk makers count)."""
    for unit in ("bytes", "KB", "MB", "GB", "TB"):
        if abs(size) < 1000 or unit == "TB":
            return f"{size:,.0f} {unit}" if unit == "bytes" else f"{size:,.1f} {unit}"
        size /= 1000
    raise AssertionError("unreachable")


def _existing_folder(path: Path) -> Path:
    """The nearest folder at or above `path` that exists: where a file not yet written will take its space."""
    path = path.absolute()
    while not path.is_dir():
        path = path.parent
    return path


def check_free_space(
    output: str | Path, needed: int, *, what: str, error: type[ElmoError], flag: str = NO_SPACE_CHECK
) -> None:
    """Raise `error` when the file system of `output` has less free space than the `needed` bytes of `what` (an
    estimate, e.g. "the vectors of 1,200 words"): the run would fill the disk before it ends."""
    folder = _existing_folder(Path(output))
    free = shutil.disk_usage(folder).free
    if needed > free:
        raise error(
            f"{output}: {what} need about {format_bytes(needed)}, but {folder} has {format_bytes(free)} free: free"
            f" some space, write elsewhere, or pass {flag} to try anyway"
        )


def require_room(output: str | Path, needed: int, what: str, *, space_check: bool) -> None:
    """Refuse, before anything large is written, a conversion's `output` whose disk has less than the `needed` bytes
    free (`check_free_space`), unless `space_check` is off (`--no-space-check`)."""
    if space_check:
        check_free_space(output, needed, what=what, error=ConversionError)
