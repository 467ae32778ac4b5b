"""Write outputs all at once: into a staging path beside the target, renamed to it when complete.

Three writers share the steps here (the staging path beside the target, the permissions of a shared output, the
rename that publishes it): the one-process `atomic_output_file` / `atomic_output_folder` of the converters and
the model pages, which hold the output's lock (`elmo_transformers.common.output_lock`) from before their first check
until the rename; the checkpoints of `elmo_transformers.training.pretraining.checkpoint`, a fixed hidden staging folder
that every process writes into before the main process publishes it; and `elmo-embed`'s resumable `OUT.partial`
(`elmo_transformers.inference.segment_store`), a fixed name that a later run finds and continues.
"""

from __future__ import annotations

import os
import re
import shutil
import stat
import tempfile
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

from elmo_transformers.common.disk_space import is_disk_full
from elmo_transformers.common.errors import ConversionError, ElmoError
from elmo_transformers.common.output_lock import output_lock
from elmo_transformers.common.regular_files import file_kind

__all__ = [
    "atomic_output_file",
    "atomic_output_folder",
    "output_mode",
    "partial_path",
    "publish_file",
    "publish_folder",
    "refuse_existing",
    "refuse_folders_in_use",
    "refuse_unreplaceable",
    "sync_to_disk",
]

_PARTIAL = ".partial"


def partial_path(target: str | Path, *, hidden: bool = False) -> Path:
    """The fixed staging path of `target` that every writer (or a resumed run) agrees on: `TARGET.partial` beside
    it, or `.TARGET.partial` when `hidden`."""
    target = Path(target)
    return target.with_name(f"{'.' if hidden else ''}{target.name}{_PARTIAL}")


def _readable_by_all(folder: Path) -> None:
    """Files mode 644, folders 755: some writers (transformers' weight files among them) make private files, and a
    model folder is meant to be shared. Links are left as they are."""
    folder.chmod(0o755)
    for path in folder.rglob("*"):
        if not path.is_symlink():
            path.chmod(0o755 if path.is_dir() else 0o644)


def sync_to_disk(path: Path) -> None:
    """Make the closed file (or folder) `path` survive a crash of the machine, not only of the process."""
    descriptor = os.open(path, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


def publish_file(staging: Path, target: Path) -> None:
    """Make the complete file `staging` the file `target` (mode 644), replacing any old one in one rename."""
    staging.chmod(0o644)
    staging.replace(target)


def publish_folder(staging: Path, target: Path) -> None:
    """Make the complete folder `staging` the folder `target` (files 644, folders 755). An old `target` is moved
    aside first and removed only once the new one is in place, so `target` is never half-written."""
    _readable_by_all(staging)
    if target.exists():
        previous = staging.with_suffix(".previous")
        shutil.rmtree(previous, ignore_errors=True)  # left by a publish killed halfway (a checkpoint's fixed name)
        target.rename(previous)
        staging.rename(target)
        shutil.rmtree(previous)
    else:
        staging.rename(target)


def output_mode(output: Path, *, error: type[ElmoError] = ConversionError) -> int | None:
    """The mode of what is at the output path `output` (`os.lstat`: a link is a link), None where nothing is (or no
    folder above it: the output's lock says so). Raises `error` for a path that cannot be looked at (a name too
    long, a folder this user may not search), where pathlib's tests would raise later, in a traceback."""
    try:
        return os.lstat(output).st_mode
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as problem:
        raise error(f"{output}: cannot be written: {problem.strerror}") from None


def refuse_unreplaceable(output: Path, *, error: type[ElmoError] = ConversionError) -> None:
    """Raise `error` when `output` exists as anything but a regular file or a folder: a device (/dev/null, /dev/full:
    the rename that publishes an output would put a file in its place), a FIFO, a socket or a link (whose folder the
    replacement could not remove). Whatever `--overwrite` says: only regular files and folders are replaced. A path
    that cannot be looked at (a name too long, a folder this user may not search) is refused too (`output_mode`)."""
    mode = output_mode(output, error=error)
    if mode is not None and not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
        raise error(
            f"{output} is {file_kind(mode)}, not a regular file: it is never replaced, even with --overwrite;"
            " write the output to another path"
        )


def refuse_existing(output: Path, *, overwrite: bool, error: type[ElmoError] = ConversionError) -> None:
    """Raise `error` when `output` exists and cannot be replaced (`refuse_unreplaceable`), or the user did not pass
    `--overwrite`."""
    refuse_unreplaceable(output, error=error)
    if output.exists() and not overwrite:
        raise error(f"{output} already exists: pass --overwrite to replace it")


def refuse_folders_in_use(
    output: Path, inputs: Iterable[str | Path], *, error: type[ElmoError] = ConversionError
) -> None:
    """Replacing the folder `output` renames it aside and deletes it: refuse the current directory and the folders
    above it (the rename fails, "Device or resource busy"), and any folder that holds one of `inputs` (it would
    delete what the new folder is made from)."""
    resolved = output.resolve()
    if resolved == Path.cwd() or resolved in Path.cwd().parents:
        raise error(f"{output} is the current directory or holds it: it cannot be replaced; name a new folder")
    for source in inputs:
        source_path = Path(source).resolve()
        if resolved == source_path or resolved in source_path.parents:
            raise error(f"{output} holds the input {source}: replacing it would delete the input; name another folder")


@contextmanager
def _full_disk_in_one_line(output: Path) -> Iterator[None]:
    """A full disk while `output` is written (its staging path already removed) ends in one line that says so,
    instead of each library's own error (h5py's, safetensors'). A line already told (an inner output's full disk,
    an `ElmoError` raised from the OSError) is kept: it names the output whose disk filled."""
    existed = output.exists()
    try:
        yield
    except Exception as error:
        if isinstance(error, ElmoError) or not is_disk_full(error):
            raise
        kept = f", {output} is as it was" if existed else ""
        raise ConversionError(
            f"{output}: the disk is full: nothing was written{kept}; free some space or write elsewhere"
        ) from error


@contextmanager
def _new_folders_removed_on_failure(folder: Path) -> Iterator[None]:
    """`folder` and the folders above it that do not exist yet (a writer makes them for its staging path and lock)
    are removed again, deepest first and only while empty, when the block fails or is interrupted: a refused or
    interrupted write leaves no empty folder behind, and never removes a folder that was there before."""
    new = [path for path in (folder, *folder.parents) if not path.exists()]
    try:
        yield
    except BaseException:
        for path in new:
            try:
                path.rmdir()
            except OSError:  # something else was put there meanwhile: it and the folders above it stay
                break
        raise


def _stale_staging(output: Path) -> list[Path]:
    """The staging paths of `output` (`.NAME.XXXXXXXX.partial`, tempfile's name) left beside it by a writer that
    was killed (SIGKILL, a power cut): called with the output's lock held, which proves their writer dead, for a
    staging path is made only under that lock."""
    pattern = re.compile(rf"\.{re.escape(output.name)}\.[a-z0-9_]{{8}}{re.escape(_PARTIAL)}")
    if not output.parent.is_dir():
        return []
    return [path for path in output.parent.iterdir() if pattern.fullmatch(path.name) and not path.is_symlink()]


def _remove_stale_staging(output: Path) -> None:
    """Remove what `_stale_staging` finds (12 MB for each `elmo-convert onnx` killed: they piled up)."""
    for path in _stale_staging(output):
        if path.is_dir():
            shutil.rmtree(path, ignore_errors=True)
        elif path.is_file():
            path.unlink(missing_ok=True)


@contextmanager
def atomic_output_file(output: str | Path, *, overwrite: bool = False) -> Iterator[Path]:
    """Yield a temporary path beside `output`; on success it replaces `output`, on failure it is removed. The
    output's lock is held throughout, taken before the checks: a second writer stops, naming this one. A full disk
    ends in one line; the folders made for it are removed again on a failure."""
    output = Path(output)
    refuse_unreplaceable(output)  # (before its lock file is made beside it: /dev/full.lock)
    if output.is_dir():
        raise ConversionError(f"{output} is a folder, expected a file path")
    with (
        _new_folders_removed_on_failure(output.parent),
        _full_disk_in_one_line(output),
        output_lock(output, error=ConversionError),
    ):
        refuse_existing(output, overwrite=overwrite)
        _remove_stale_staging(output)
        output.parent.mkdir(parents=True, exist_ok=True)
        handle, name = tempfile.mkstemp(prefix=f".{output.name}.", suffix=_PARTIAL, dir=output.parent)
        os.close(handle)
        staging = Path(name)
        try:
            yield staging
            publish_file(staging, output)
        except BaseException:
            staging.unlink(missing_ok=True)
            raise


@contextmanager
def atomic_output_folder(
    output: str | Path, *, overwrite: bool = False, inputs: Iterable[str | Path] = ()
) -> Iterator[Path]:
    """Yield a temporary folder; on success it becomes `output`, on failure it is removed.

    The output's lock is held throughout, taken before the checks: a second writer stops, naming this one. An
    existing `output` is refused unless `overwrite`, and so is one that cannot be replaced (the current directory,
    a folder holding one of the files or folders `inputs` the new one is made from); it is replaced only once the
    new folder is complete, so a failed conversion never leaves a half-written or missing model. A full disk ends
    in one line; the folders made for it are removed again on a failure (`_new_folders_removed_on_failure`).
    """
    output = Path(output)
    refuse_unreplaceable(output)
    refuse_folders_in_use(output, inputs)
    with (
        _new_folders_removed_on_failure(output.parent),
        _full_disk_in_one_line(output),
        output_lock(output, error=ConversionError),
    ):
        refuse_existing(output, overwrite=overwrite)
        if output.exists() and not output.is_dir():
            raise ConversionError(f"{output} exists and is not a folder")
        _remove_stale_staging(output)
        output.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=f".{output.name}.", suffix=_PARTIAL, dir=output.parent))
        try:
            yield staging
            publish_folder(staging, output)
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise
