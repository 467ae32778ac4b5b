"""Write outputs all at once: into a temporary folder or file beside the target, renamed when complete."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from common.errors import ConversionError

__all__ = ["atomic_output_file", "atomic_output_folder"]


def _refuse_existing(output: Path, overwrite: bool) -> None:
    if output.exists() and not overwrite:
        raise ConversionError(f"{output} already exists: pass --overwrite to replace it")


@contextmanager
def atomic_output_file(output: str | Path, *, overwrite: bool = False) -> Iterator[Path]:
    """Yield a temporary path beside `output`; on success it replaces `output`, on failure it is removed."""
    output = Path(output)
    _refuse_existing(output, overwrite)
    if output.is_dir():
        raise ConversionError(f"{output} is a folder, expected a file path")
    output.parent.mkdir(parents=True, exist_ok=True)
    handle, name = tempfile.mkstemp(prefix=f".{output.name}.", suffix=".partial", dir=output.parent)
    os.close(handle)
    staging = Path(name)
    try:
        yield staging
        staging.chmod(0o644)
        staging.replace(output)
    except BaseException:
        staging.unlink(missing_ok=True)
        raise


def _readable_by_all(folder: Path) -> None:
    """Files mode 644, folders 755: some writers (transformers' weight files among them) make private files, and a
    model folder is meant to be shared. Links are left as they are."""
    for path in folder.rglob("*"):
        if not path.is_symlink():
            path.chmod(0o755 if path.is_dir() else 0o644)


@contextmanager
def atomic_output_folder(output: str | Path, *, overwrite: bool = False) -> Iterator[Path]:
    """Yield a temporary folder; on success it becomes `output`, on failure it is removed.

    An existing `output` is refused unless `overwrite`; it is replaced only once the new folder is
    complete, so a failed conversion never leaves a half-written or missing model.
    """
    output = Path(output)
    _refuse_existing(output, overwrite)
    if output.exists() and not output.is_dir():
        raise ConversionError(f"{output} exists and is not a folder")
    output.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{output.name}.", suffix=".partial", dir=output.parent))
    staging.chmod(0o755)  # mkdtemp makes it private; the model folder is meant to be shared
    try:
        yield staging
        _readable_by_all(staging)
        if output.exists():
            previous = staging.with_suffix(".previous")
            output.rename(previous)
            staging.rename(output)
            shutil.rmtree(previous)
        else:
            staging.rename(output)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
