"""The resumable store of a run's vectors (`SegmentStore`): the folder `OUT.partial/` of segment files, which both
output formats are made of once every line is stored (`hdf5_output` merges them into one hdf5 file, `datasets_output`
into shards of a `datasets` folder), so that a run can be interrupted at any moment (killed, out of memory, the disk
full) and resumed.

While the run goes on, `OUT.partial/` holds `settings.json` (what the run computes, `EmbedSettings`, so that
`--resume` cannot mix the outputs of different settings, and the attributes of the finished output) and segments
`lines-FIRST-LAST-SHA256.hdf5`, each holding the complete lines (datasets named by the line's 0-based index, as in
the finished file) of a run of consecutive batches, FIRST and LAST the smallest and largest of them, SHA256 the
segment's checksum (compared on resuming and merging: `segment_problem`). Every line is in exactly one segment, so
the names never clash, whoever wrote them: under `accelerate launch` each process writes segments of its own lines,
and the main process merges them all.
A segment is written under a temporary name (`.segment-*.tmp`), flushed after each batch, and closed, synced and
renamed once it holds about `EmbedLimits.segment_bytes` of vectors (64 MB) and no line is half-written (a line
longer than --max-words is embedded in pieces, in several batches: they fill a dataset in the segment's group
`INCOMPLETE_GROUP`, moved to its name when the last piece is written). Only renamed segments count as done: a write
that fails (a full disk) loses the open segment at most, and a killed run leaves a temporary file that the next run
removes.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
import tempfile
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import h5py
import numpy as np
from h5py import _errors as h5py_errors

from elmo_transformers.common.atomic_output import partial_path, sync_to_disk
from elmo_transformers.common.checksums import file_sha256
from elmo_transformers.common.errors import EmbedError
from elmo_transformers.common.processes import deferred_interrupts

from .limits import EmbedLimits
from .output_attributes import INCOMPLETE_GROUP, WORDS
from .settings import EmbedSettings

__all__ = [
    "DamagedSegment",
    "OutputComplete",
    "SegmentStore",
    "WriteError",
    "discard",
    "new_hdf5_file",
    "publish_output",
    "segment_problem",
    "stored_bytes",
]

SETTINGS_FILE = "settings.json"
_SEGMENT_GLOB = "lines-*.hdf5"
# A segment's sha256, taken once it is closed and synced, is part of its final name: the one rename that marks it
# done also records its checksum, with no second file to keep in step (nor to lose in a crash between the two). It is
# compared when a run resumes (a damaged segment is removed and its lines are embedded again) and when the merge first
# reads the segment (the run stops, naming it). HDF5's Fletcher32 filter would cover less: only the chunks of chunked
# datasets (the default contiguous layout, AllenNLP's, would have to change, and the merge would copy the filter
# into OUT), not the attributes (the words) nor the file's own metadata.
_SEGMENT_NAME = re.compile(r"lines-\d+-\d+-(?P<sha256>[0-9a-f]{64})\.hdf5")
_TEMPORARY_SUFFIX = ".tmp"
# The merge keeps at most this many segments open: the lines of one window lie in a few consecutive segments.
_OPEN_SEGMENTS = 16
# The merge flushes after this many lines, so that a write error comes from the call that made it.
_START_OVER = "pass --overwrite to start over"


class DamagedSegment(Exception):
    """A stored segment whose content is not what was written (its sha256 differs from the one its name records):
    the message names it."""


class OutputComplete(KeyboardInterrupt):
    """Ctrl-C came once the output was published (`publish_output`): the output is complete and `OUT.partial` is
    removed."""


class WriteError(Exception):
    """A write into `OUT.partial` failed (the disk is full, ...); `error` is the library's exception. The lines
    stored before it are safe; the open segment (or the merged file) was removed."""

    def __init__(self, error: BaseException) -> None:
        super().__init__(str(error))
        self.error = error


def publish_output(publish: Callable[[], None], partial: Path) -> None:
    """Publish the complete output (`publish()`, a rename) and remove `partial`, its segments: both are done even
    when Ctrl-C comes meanwhile, which is then raised as `OutputComplete`, so that the run says the output is
    complete rather than leaving a partial that could not be resumed (the output exists)."""
    try:
        with deferred_interrupts():
            publish()
            shutil.rmtree(partial)
    except KeyboardInterrupt:
        raise OutputComplete from None


def stored_bytes(output: str | Path, *, resume: bool) -> int:
    """The disk space that the stored segments of `output` already take, when `resume` continues them."""
    partial = partial_path(output)
    if not (resume and partial.is_dir()):
        return 0
    return sum(path.stat().st_size for path in partial.glob(_SEGMENT_GLOB))


def new_hdf5_file(folder: Path, prefix: str) -> tuple[Path, h5py.File]:
    """A new hdf5 file of a temporary name in `folder`, writing each dataset's data when it is written, so that a
    failed write raises in the call that made it instead of in a later dataset close, which h5py calls when it frees
    the object and which can only print the error (and, on a full disk, went on to crash the process): without
    HDF5's sieve buffer (contiguous datasets) and without its chunk cache (compressed ones, whose chunks waited
    there for the close)."""
    h5py_errors.silence_errors()  # HDF5 prints its own report of an error unless silenced, in each thread
    handle, name = tempfile.mkstemp(prefix=prefix, suffix=_TEMPORARY_SUFFIX, dir=folder)
    os.close(handle)
    access = h5py.h5p.create(h5py.h5p.FILE_ACCESS)
    access.set_sieve_buf_size(0)
    _, chunk_slots, _, preemption = access.get_cache()
    access.set_cache(0, chunk_slots, 0, preemption)
    try:
        return Path(name), h5py.File(h5py.h5f.create(os.fsencode(name), h5py.h5f.ACC_TRUNC, fapl=access))
    except BaseException:
        Path(name).unlink(missing_ok=True)
        raise


def discard(file: h5py.File, path: Path) -> None:
    """Close a file whose write failed, and remove it: its content cannot be trusted. Closing may fail again (the
    disk is still full); the file is removed either way."""
    try:
        file.close()
    except Exception:  # the first error is the one reported
        pass
    path.unlink(missing_ok=True)


class _Segment:
    """The open segment: a temporary file in `OUT.partial/` and the complete lines written to it."""

    def __init__(self, folder: Path) -> None:
        self.path, self.file = new_hdf5_file(folder, ".segment-")
        self.lines: list[int] = []
        self.bytes = 0

    def final_path(self, sha256: str) -> Path:
        """The name of the stored segment, which records its lines and `sha256` (of its closed file)."""
        return self.path.with_name(f"lines-{min(self.lines):010d}-{max(self.lines):010d}-{sha256}.hdf5")


def segment_problem(segment: Path) -> str | None:
    """Why the stored `segment` cannot be trusted (its sha256 is not the one its name records), or None."""
    named = _SEGMENT_NAME.fullmatch(segment.name)
    if named is None:
        return f"{segment} records no sha256 in its name (lines-FIRST-LAST-SHA256.hdf5)"
    actual = file_sha256(segment)
    if actual != named["sha256"]:
        return f"{segment} is damaged: its sha256 is {actual[:16]}..., its name records {named['sha256'][:16]}..."
    return None


class _Readers:
    """The segments open for reading during the merge, the least recently used closed beyond `_OPEN_SEGMENTS`.
    Each segment's checksum is compared before it is first opened (a segment a resumed run compared is compared
    again: it may have changed since): a damaged one raises `DamagedSegment`. Read whole just before h5py reads it,
    a segment is read from the disk once."""

    def __init__(self) -> None:
        self._files: OrderedDict[Path, h5py.File] = OrderedDict()
        self._verified: set[Path] = set()

    def __getitem__(self, path: Path) -> h5py.File:
        if path in self._files:
            self._files.move_to_end(path)
        else:
            if path not in self._verified:
                problem = segment_problem(path)
                if problem:
                    raise DamagedSegment(problem)
                self._verified.add(path)
            if len(self._files) >= _OPEN_SEGMENTS:
                self._files.popitem(last=False)[1].close()
            self._files[path] = h5py.File(path, "r")
        return self._files[path]

    def close(self) -> None:
        for file in self._files.values():
            file.close()
        self._files.clear()


class SegmentStore:
    """The `OUT.partial/` folder of a run; a context manager that keeps what is done on any exit.

    `shape(words)` is the shape of one line's dataset, stored as `settings.storage` says (the vectors cast before
    they are written). With `resume`, an existing `OUT.partial/` is continued when it was started with the same
    `settings`; otherwise a new one is created (an old one removed: the caller checked that it may be).
    `attributes` (strings) become the finished file's root attributes; a resumed run keeps those of the run that
    started the folder. Writes that fail raise `WriteError`. `limits` (by default `EmbedLimits()`) sizes its
    segments and its datasets' chunks.

    With `join`, another process of the same run (under `accelerate launch`) has just started or continued the
    folder: this one only reads which lines it holds, then writes segments of its own beside the others'.
    """

    def __init__(
        self,
        output: str | Path,
        *,
        settings: EmbedSettings,
        attributes: dict[str, str],
        shape: Callable[[int], tuple[int, ...]],
        resume: bool,
        join: bool = False,
        limits: EmbedLimits | None = None,
    ) -> None:
        self.output = Path(output)
        self.limits = limits or EmbedLimits()
        self.partial = partial_path(output)
        self.shape = shape
        self.storage = settings.storage
        self._words_written: dict[int, int] = {}
        self._open: _Segment | None = None
        # The stored lines: line index -> its segment.
        self._stored: dict[int, Path] = {}
        if join:
            self.attributes = self._read_settings()[1]
            self.find_stored()
        elif resume and self.partial.exists():
            self.attributes = self._reopen(settings)
        else:
            self.attributes = attributes
            self._start(settings)

    def _start(self, settings: EmbedSettings) -> None:
        if self.partial.is_dir():
            shutil.rmtree(self.partial)
        else:
            self.partial.unlink(missing_ok=True)
        with self._writing():
            self.partial.mkdir(parents=True)
            staging = self.partial / f".{SETTINGS_FILE}{_TEMPORARY_SUFFIX}"
            content = {"settings": settings.as_json(), "attributes": self.attributes}
            staging.write_text(json.dumps(content, indent=2, sort_keys=True) + "\n", encoding="utf-8")
            sync_to_disk(staging)
            staging.replace(self.partial / SETTINGS_FILE)
            sync_to_disk(self.partial)

    def _read_settings(self) -> tuple[dict[str, Any], dict[str, str]]:
        """The settings and attributes that `OUT.partial/` was started with."""
        if not self.partial.is_dir():
            raise EmbedError(f"{self.partial} cannot be resumed (a file, not elmo-embed's folder): {_START_OVER}")
        try:
            started = json.loads((self.partial / SETTINGS_FILE).read_text(encoding="utf-8"))
            return started["settings"], started["attributes"]
        except (OSError, ValueError, KeyError, TypeError) as error:
            raise EmbedError(f"{self.partial / SETTINGS_FILE} cannot be resumed ({error}): {_START_OVER}") from None

    def _reopen(self, settings: EmbedSettings) -> dict[str, str]:
        """Check that `OUT.partial/` was started with `settings`, find its stored lines and return its attributes."""
        started_settings, attributes = self._read_settings()
        differences = settings.differences(started_settings)
        if differences:
            raise EmbedError(
                f"{self.partial} was started with {', '.join(differences)}: rerun with the same input and options,"
                f" or {_START_OVER}"
            )
        for left in self.partial.glob(f".*{_TEMPORARY_SUFFIX}"):  # by a run killed while writing them
            if left.is_dir():
                shutil.rmtree(left)
            else:
                left.unlink()
        self._remove_damaged_segments()
        self.find_stored()
        return attributes

    def _remove_damaged_segments(self) -> None:
        """Compare every stored segment's checksum; a damaged one is removed, with a warning, so that its lines are
        embedded again (in the batches of an uninterrupted run: the file is the same)."""
        for segment in sorted(self.partial.glob(_SEGMENT_GLOB)):
            problem = segment_problem(segment)
            if problem:
                print(f"elmo-embed: warning: {problem}: removed, its lines are embedded again", file=sys.stderr)
                segment.unlink()

    def find_stored(self) -> None:
        """Read which lines the segments in `OUT.partial/` hold (those of every process of the run, once they are
        all stored)."""
        for segment in sorted(self.partial.glob(_SEGMENT_GLOB)):
            try:
                with h5py.File(segment, "r") as file:
                    self._stored.update((int(name), segment) for name in file if name.isdigit())
            except OSError as error:
                raise EmbedError(f"{segment} cannot be resumed ({error}): {_START_OVER}") from None

    def __enter__(self) -> SegmentStore:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def stored_datasets(self, lines: Iterable[int]) -> Iterator[h5py.Dataset]:
        """The stored dataset of each of `lines` (as `find_stored` last found them), in order, read from the segments
        (a few open at a time: the lines of one window lie in a few consecutive segments)."""
        readers = _Readers()
        try:
            for line in lines:
                yield readers[self._stored[line]][str(line)]
        finally:
            readers.close()

    def finished_lines(self) -> set[int]:
        """The lines (0-based) safely stored."""
        return set(self._stored)

    @contextmanager
    def _writing(self) -> Iterator[None]:
        """Turn a failed write into `WriteError`, dropping the open segment: after a failed write no part of an
        hdf5 file can be trusted."""
        try:
            yield
        except Exception as error:
            if self._open is not None:
                discard(self._open.file, self._open.path)
                self._open = None
            self._words_written.clear()
            raise WriteError(error) from error

    def write(
        self, line: int, start: int, vectors: np.ndarray, words: int, *, tokens: Sequence[str] | None = None
    ) -> None:
        """Write `vectors` (shape `self.shape(n)`) for words `start` to `start + n` of line `line` of `words` words.

        A line in one piece (or an empty line: `words` = 0) is written at once under its name. A line in pieces is
        written into the open segment's group `INCOMPLETE_GROUP` and moved to its name once its `words` words
        are written, so that the segment's lines are complete whenever it is closed. `tokens`, the line's `words`
        words (given with any piece), become the dataset's attribute "words".
        """
        vectors = self.storage.cast(vectors, line)  # a refusal is no failed write: outside `_writing`
        with self._writing():
            if self._open is None:
                self._open = _Segment(self.partial)
            file = self._open.file
            self._open.bytes += vectors.nbytes
            if start == 0 and vectors.shape == self.shape(words):
                options = self.storage.dataset_options(vectors.shape, self.limits.chunk_bytes)
                self._label(file.create_dataset(str(line), data=vectors, **options), tokens)
            else:
                staging = f"{INCOMPLETE_GROUP}/{line}"
                if staging not in file:
                    options = self.storage.dataset_options(self.shape(words), self.limits.chunk_bytes)
                    self._label(file.create_dataset(staging, shape=self.shape(words), **options), tokens)
                word_axis = vectors.ndim - 2
                piece = (slice(None),) * word_axis + (slice(start, start + vectors.shape[word_axis]),)
                file[staging][piece] = vectors
                written = self._words_written.pop(line, 0) + vectors.shape[word_axis]
                if written < words:
                    self._words_written[line] = written
                    return
                file.move(staging, str(line))
            self._open.lines.append(line)

    @staticmethod
    def _label(dataset: h5py.Dataset, tokens: Sequence[str] | None) -> None:
        # One JSON string: any length fits an attribute (an array of strings over about 4,000 would not), and a
        # word may hold any character, NUL included.
        if tokens is not None:
            dataset.attrs[WORDS] = json.dumps(list(tokens))

    def end_batch(self) -> None:
        """After each batch: flush the open segment (a failed write shows here), and close it when it is big enough
        and holds no half-written line."""
        if self._open is None:
            return
        with self._writing():
            self._open.file.flush()
        if self._open.bytes >= self.limits.segment_bytes and not self._words_written:
            self.store_open_segment()

    def store_open_segment(self) -> None:
        """Close, sync and rename the open segment (whose lines are all complete): its lines are now stored."""
        segment = self._open
        if segment is None:
            return
        if not segment.lines:
            self._open = None
            discard(segment.file, segment.path)
            return
        with self._writing():
            if INCOMPLETE_GROUP in segment.file:
                del segment.file[INCOMPLETE_GROUP]
            segment.file.close()
            sync_to_disk(segment.path)
            final = segment.final_path(file_sha256(segment.path))
            segment.path.rename(final)
            sync_to_disk(self.partial)
        self._open = None
        self._stored.update(dict.fromkeys(segment.lines, final))

    def store_all(self, lines: int) -> None:
        """Once every process of the run has written its lines: store the open segment and find every process's
        stored lines, which must be the `lines` lines."""
        assert not self._words_written, "a line was left incomplete"
        self.store_open_segment()
        self.find_stored()
        missing = [line for line in range(lines) if line not in self._stored]
        assert not missing, f"lines {missing[:10]} were not written"

    def close(self) -> None:
        """Keep what is done, on any exit but the merge (`hdf5_output.write_hdf5`): the open segment's complete lines
        are stored (its half-written line is dropped). A no-op once closed, or after a failed write (which dropped
        the segment)."""
        self._words_written.clear()
        try:
            self.store_open_segment()
        except WriteError:
            pass  # the segment is dropped; the error that ended the run is the one reported
