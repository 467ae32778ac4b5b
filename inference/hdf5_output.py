"""The hdf5 output file (`--format hdf5`, the default): the run's stored lines (`segment_store`) merged into `OUT` once
every line is stored (`write_hdf5`), and the checks of the output path that every run makes before it starts.

The finished file has AllenNLP's `elmo` command layout: one dataset per line, named by the line's 0-based index
(float32, or float16 with `--storage-dtype float16`; contiguous, or chunked and compressed with `--compression`,
which readers of the layout decompress without knowing it: `elmo_transformers.inference.storage`), and (unless
forgotten) the dataset "sentence_to_index", a (1,) array of one variable-length string: the JSON object mapping each
stripped line to its index string. When the words are not simply the line's whitespace-separated tokens
(`--tokenize`), each line's dataset has the attribute "words" (`output_attributes.WORDS`): a JSON list of the
strings its vectors stand for, in order. Its root attributes record how it was made (readers of the layout ignore
them), each a string: the names and their meanings are `elmo_transformers.inference.output_attributes.ATTRIBUTES`.

Finishing copies every line's dataset from the segments, in line order and without decoding, into a new file,
then renames it to OUT and removes `OUT.partial/` (both done whatever Ctrl-C: `publish_output`); the finished file
does not depend on where a run stopped.
"""

from __future__ import annotations

import json
from contextlib import closing
from pathlib import Path

import h5py
from tqdm.auto import tqdm

from elmo_transformers.common.atomic_output import (
    partial_path,
    publish_file,
    refuse_existing,
    refuse_folders_in_use,
    refuse_unreplaceable,
    sync_to_disk,
)
from elmo_transformers.common.errors import EmbedError
from elmo_transformers.common.output_lock import lock_path
from elmo_transformers.common.processes import deferred_interrupts

from .segment_store import DamagedSegment, SegmentStore, WriteError, discard, new_hdf5_file, publish_output

__all__ = [
    "SENTENCE_TO_INDEX",
    "check_output",
    "check_output_path",
    "write_hdf5",
]

SENTENCE_TO_INDEX = "sentence_to_index"
# The merge flushes after this many lines, so that a write error comes from the call that made it.
_MERGE_FLUSH_LINES = 1000


def check_output_path(output: str | Path, input_file: str | Path, *, folder: bool = False) -> None:
    """Refuse an `output` that is a folder (unless the output is a `folder`: then one that holds the input or the
    current directory), or whose file, `OUT.partial` or lock file is `input_file` (the same inode: a hard or
    symbolic link too): writing it, or replacing it with the finished output, would destroy the input; and one that
    is no regular file or folder (/dev/null, /dev/full, a FIFO: `refuse_unreplaceable`). Checked
    before the output's lock is taken, as the lock file is created beside the output. A path that cannot be looked at
    (a name too long, a folder this user may not search) is refused too."""
    try:
        _check_output_path(Path(output), input_file, folder=folder)
    except OSError as error:
        raise EmbedError(f"{output}: cannot be written: {error.strerror or error}") from None


def _check_output_path(output: Path, input_file: str | Path, *, folder: bool) -> None:
    if folder:
        refuse_folders_in_use(output, [input_file], error=EmbedError)
    elif output.is_dir():
        raise EmbedError(f"{output} is a folder, expected a file path")
    for path in (output, partial_path(output), lock_path(output)):
        if path.exists() and path.samefile(input_file):
            raise EmbedError(f"{path} is the input file {input_file}: write the output to another path")
    refuse_unreplaceable(output, error=EmbedError)  # before the lock file is made beside it


def check_output(output: str | Path, *, resume: bool, overwrite: bool) -> None:
    """Refuse an existing `output` without `overwrite`, and an interrupted run's folder without `resume`/`overwrite`
    (checked while the output's lock is held: an `OUT.partial` is then not being written)."""
    output = Path(output)
    refuse_existing(output, overwrite=overwrite, error=EmbedError)
    partial = partial_path(output)
    if partial.exists() and not (resume or overwrite):
        raise EmbedError(
            f"{partial} exists (an interrupted run): pass --resume to continue it or --overwrite to start over"
        )


def write_hdf5(store: SegmentStore, lines: int, sentence_to_index: dict[str, str] | None) -> None:
    """Merge the `lines` lines of `store`, stored by this process or by the others of its run, into the output file,
    with "sentence_to_index" (unless None) and the root attributes, rename it to the output path and remove
    `OUT.partial/`. A failure leaves the segments: a resumed run merges again. A damaged segment (its checksum,
    compared as the merge first reads it) raises `DamagedSegment`."""
    store.store_all(lines)
    try:
        staging, merged = new_hdf5_file(store.partial, ".merged-")
    except Exception as error:
        raise WriteError(error) from error
    try:
        with deferred_interrupts() as interrupted, closing(store.stored_datasets(range(lines))) as datasets:
            bar = tqdm(datasets, desc="elmo-embed: merging", unit="line", total=lines, disable=None)
            for line, dataset in enumerate(bar):
                interrupted()
                merged.copy(dataset, merged, name=str(line))
                if line % _MERGE_FLUSH_LINES == _MERGE_FLUSH_LINES - 1:
                    merged.flush()
            if sentence_to_index is not None:
                index = merged.create_dataset(SENTENCE_TO_INDEX, (1,), dtype=h5py.string_dtype())
                index[0] = json.dumps(sentence_to_index)
            merged.attrs.update(store.attributes)
            merged.close()
            sync_to_disk(staging)
    except BaseException as error:
        discard(merged, staging)
        if isinstance(error, Exception) and not isinstance(error, DamagedSegment):
            raise WriteError(error) from error
        raise
    publish_output(lambda: publish_file(staging, store.output), store.partial)
