"""`elmo-embed --format datasets`: the finished lines as a folder that `datasets.load_from_disk` opens.

The run is the same as for hdf5 (segments in `OUT.partial/`, resumable, shared out among processes); only the last
step differs: instead of one merged hdf5 file, the stored lines become Arrow shards `data-0000K-of-0000N.arrow` of
consecutive lines, the layout of `Dataset.save_to_disk`, with its `state.json` and `dataset_info.json`. Each row is
one line: "line" (its 0-based index), "words" (with --tokenize: the words its vectors stand for) and "vectors", in
the stored dtype, nested as the hdf5 dataset is: (L+1, words, width) with --layers all, else (words, width). Under
`accelerate launch` each process writes its share of the shards (at least one each); the main process then writes
the two JSON files and `elmo_embed.json` (the record of how the vectors were made: the hdf5 file's root attributes)
and renames the folder to `OUT`.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterator
from contextlib import closing
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
from datasets import DatasetInfo, Features, List, Value
from datasets.arrow_writer import ArrowWriter
from tqdm.auto import tqdm

from elmo_transformers.common.atomic_output import publish_folder, sync_to_disk

from .limits import EmbedLimits
from .output_attributes import MODEL_SHA256, WORDS
from .segment_store import DamagedSegment, SegmentStore, WriteError, publish_output, stored_bytes

__all__ = ["RECORD_FILE", "write_dataset"]

RECORD_FILE = "elmo_embed.json"
# Where the shards are written inside OUT.partial/: a temporary name, removed by a resumed run.
_STAGING = ".dataset.tmp"
# Rows converted to Arrow at a time.
_ROWS_PER_WRITE = 256


def features(*, dtype: np.dtype, width: int, layers: bool, words: bool) -> Features:
    """The columns of a row: "line", "words" (when `words`) and "vectors", (L+1, words, width) when `layers`, else
    (words, width)."""
    vector = List(Value(np.dtype(dtype).name), length=width)
    columns: dict[str, Any] = {"line": Value("int64")}
    if words:
        columns["words"] = List(Value("string"))
    columns["vectors"] = List(List(vector)) if layers else List(vector)
    return Features(columns)


def shard_lines(
    lines: int, stored_bytes: int, processes: int, shard_bytes: int = EmbedLimits.shard_bytes
) -> list[range]:
    """The lines of each shard: consecutive, of about `shard_bytes` each, and at least one shard per process."""
    count = max(processes, math.ceil(stored_bytes / shard_bytes), 1)
    return [range(index * lines // count, (index + 1) * lines // count) for index in range(count)]


def _vectors_column(arrays: list[np.ndarray]) -> pa.Array:
    """The "vectors" of `arrays` (each (L+1, words, width) or (words, width)) as nested Arrow lists, built from the
    arrays' buffers without going through Python lists."""
    flat = pa.array(np.concatenate([array.reshape(-1) for array in arrays]))
    column: pa.Array = pa.FixedSizeListArray.from_arrays(flat, arrays[0].shape[-1])
    words = [array.shape[-2] for array in arrays]
    if arrays[0].ndim == 3:  # a list of layers, each a list of words
        layer_words = [count for array, count in zip(arrays, words, strict=True) for _ in range(array.shape[0])]
        column = pa.ListArray.from_arrays(pa.array(np.cumsum([0, *layer_words]), pa.int32()), column)
        words = [array.shape[0] for array in arrays]
    return pa.ListArray.from_arrays(pa.array(np.cumsum([0, *words]), pa.int32()), column)


def _tables(file: SegmentStore, lines: range, columns: Features) -> Iterator[pa.Table]:
    """The rows of `lines` (not empty), `_ROWS_PER_WRITE` at a time."""
    with closing(file.stored_datasets(lines)) as datasets:
        rows: list[tuple[int, np.ndarray, str | None]] = []
        for line, dataset in zip(lines, datasets, strict=True):
            rows.append((line, dataset[()], dataset.attrs.get(WORDS)))
            if len(rows) == _ROWS_PER_WRITE or line == lines[-1]:
                yield _table(rows, columns)
                rows = []


def _table(rows: list[tuple[int, np.ndarray, str | None]], columns: Features) -> pa.Table:
    arrays = [vectors for _, vectors, _ in rows]
    data = {"line": pa.array([line for line, _, _ in rows], pa.int64())}
    if "words" in columns:
        data["words"] = pa.array([json.loads(words) for _, _, words in rows], pa.list_(pa.string()))
    data["vectors"] = _vectors_column(arrays)
    return pa.table(data, schema=columns.arrow_schema)


def write_dataset(
    file: SegmentStore,
    lines: int,
    *,
    dtype: np.dtype,
    width: int,
    layers: bool,
    words: bool,
    process: int = 0,
    processes: int = 1,
    wait_for_everyone: Callable[[], None] = lambda: None,
    shard_bytes: int = EmbedLimits.shard_bytes,
) -> None:
    """Write the `lines` stored lines of `file` as the dataset folder `file.output` (see the module docstring):
    this process's shards (of about `shard_bytes` of vectors each), then, once `wait_for_everyone` returns (every
    process's shards are written), on the main process (0) the folder's JSON files, and the rename. A failed write
    raises `WriteError`, leaving the segments for a resumed run; a damaged segment (its checksum, compared as it is
    first read) `DamagedSegment`."""
    file.store_all(lines)
    staging = file.partial / _STAGING
    columns = features(dtype=dtype, width=width, layers=layers, words=words)
    shards = shard_lines(lines, stored_bytes(file.output, resume=True), processes, shard_bytes)
    names = [f"data-{index:05d}-of-{len(shards):05d}.arrow" for index in range(len(shards))]
    try:
        staging.mkdir(exist_ok=True)
        mine = range(process, len(shards), processes)
        bar = tqdm(total=sum(len(shards[index]) for index in mine), desc="elmo-embed: writing the dataset",
                   unit="line", disable=None if process == 0 else True)  # fmt: skip
        with bar:
            for index in mine:
                _write_shard(file, shards[index], staging / names[index], columns, bar)
    except DamagedSegment:
        raise
    except Exception as error:
        raise WriteError(error) from error
    wait_for_everyone()
    if process != 0:
        return
    try:
        state = {
            "_data_files": [{"filename": name} for name in names],
            "_fingerprint": file.attributes.get(MODEL_SHA256.name, "")[:16] or "elmo-embed",
            "_format_columns": None,
            "_format_kwargs": {},
            "_format_type": None,
            "_output_all_columns": False,
            "_split": None,
        }
        (staging / "state.json").write_text(json.dumps(state, indent=2, sort_keys=True) + "\n", encoding="utf-8")
        DatasetInfo(description="ELMo vectors written by elmo-embed", features=columns).write_to_directory(staging)
        record = json.dumps(file.attributes, indent=2, sort_keys=True) + "\n"
        (staging / RECORD_FILE).write_text(record, encoding="utf-8")
        for path in staging.iterdir():
            sync_to_disk(path)
        sync_to_disk(staging)
    except Exception as error:
        raise WriteError(error) from error
    publish_output(lambda: publish_folder(staging, file.output), file.partial)


def _write_shard(file: SegmentStore, lines: range, path: Path, columns: Features, bar: tqdm) -> None:
    """Write the shard `path`; one whose write failed is removed, giving back its space (a full disk) at once."""
    writer = ArrowWriter(features=columns, path=str(path))
    try:
        if lines:
            for table in _tables(file, lines, columns):
                writer.write_table(table)
                bar.update(table.num_rows)
        writer.finalize()
        writer.close()
        sync_to_disk(path)
    except BaseException:
        try:
            writer.close()
        except Exception:  # the first error is the one reported
            pass
        path.unlink(missing_ok=True)
        raise
