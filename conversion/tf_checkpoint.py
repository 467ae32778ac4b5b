"""Read TensorFlow checkpoints (format V2, the "TensorBundle") without TensorFlow.

A checkpoint PREFIX is several files:
- `PREFIX.index`: an SSTable (LevelDB's table format, written uncompressed by TensorFlow). Its first key, the
  empty string, holds a `BundleHeaderProto` (number of data shards, byte order, format version); every other
  key is a tensor name whose value is a serialized `BundleEntryProto` (dtype, shape, data shard, offset, size,
  masked CRC32C of the bytes).
- `PREFIX.data-0000i-of-0000N`: the raw tensor bytes, back to back.

The table and the few protobuf fields needed are decoded by hand, so reading a bilm-tf checkpoint needs neither
TensorFlow nor protobuf. Every block checksum, offset, size and tensor checksum is checked; errors name the file
and the tensor concerned. The format's layers, each in a module of its own: `tf_crc32c` (the checksums),
`tf_protobuf` (the wire format of the records), `tf_sstable` (the index's table); this module reads the bundle's
records and the checkpoint's files.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from dataclasses import dataclass
from math import prod
from pathlib import Path

import numpy as np

from elmo_transformers.common.errors import ConversionError

from .tf_crc32c import crc32c, unmask
from .tf_protobuf import Malformed, fields, int_field, message_field, signed64
from .tf_sstable import table_entries

__all__ = [
    "TensorEntry",
    "TfCheckpoint",
    "list_tf_checkpoint",
    "read_tf_checkpoint",
    "resolve_checkpoint_prefix",
]


# TensorFlow's DataType enum (types.proto) -> numpy dtype name, or TensorFlow's name for types numpy lacks.
_DTYPES = {
    1: "float32",
    2: "float64",
    3: "int32",
    4: "uint8",
    5: "int16",
    6: "int8",
    7: "string",
    8: "complex64",
    9: "int64",
    10: "bool",
    14: "bfloat16",
    17: "uint16",
    18: "complex128",
    19: "float16",
    20: "resource",
    21: "variant",
    22: "uint32",
    23: "uint64",
}
_NUMPY_DTYPES = frozenset(_DTYPES.values()) - {"string", "bfloat16", "resource", "variant"}
_READER_VERSION = 1  # kTensorBundleVersion: the bundle format version this reader implements


@dataclass(frozen=True)
class TensorEntry:
    """One tensor of a checkpoint as its index describes it (a `BundleEntryProto`)."""

    name: str
    dtype: str  # numpy's name ("float32", "int64"), or TensorFlow's for types numpy lacks ("string", "bfloat16")
    shape: tuple[int, ...]
    shard_id: int
    offset: int  # bytes into the data shard
    size: int  # bytes
    crc32c: int  # of the bytes, unmasked
    sliced: bool = False  # a partitioned variable: its data lies in slice entries, which this reader does not join

    @property
    def readable(self) -> bool:
        """Whether `TfCheckpoint.read` returns it: a numeric tensor stored whole."""
        return self.dtype in _NUMPY_DTYPES and not self.sliced


def _parse_shape(message: bytes) -> tuple[int, ...]:
    dims = []
    for number, value in fields(message):
        if number == 2:  # repeated Dim {int64 size = 1; string name = 2}
            size = 0
            for dim_number, dim_value in fields(message_field(number, value)):
                if dim_number == 1:
                    size = signed64(int_field(dim_number, dim_value))
            if size < 0:
                raise Malformed(f"dimension of size {size}: a saved tensor has a fully known shape")
            dims.append(size)
        elif number == 3 and value:
            raise Malformed("shape of unknown rank: a saved tensor has a fully known shape")
    return tuple(dims)


def _parse_entry(name: str, value: bytes) -> TensorEntry:
    dtype_code, shape, shard_id, offset, size, crc, sliced = 0, (), 0, 0, 0, 0, False
    for number, field in fields(value):
        if number == 1:
            dtype_code = int_field(number, field)
        elif number == 2:
            shape = _parse_shape(message_field(number, field))
        elif number == 3:
            shard_id = signed64(int_field(number, field))
        elif number == 4:
            offset = signed64(int_field(number, field))
        elif number == 5:
            size = signed64(int_field(number, field))
        elif number == 6:
            crc = unmask(int_field(number, field))
        elif number == 7:
            sliced = True
    if min(shard_id, offset, size) < 0:
        raise Malformed(f"tensor {name}: negative shard, offset or size")
    dtype = _DTYPES.get(dtype_code, f"DataType {dtype_code}")
    return TensorEntry(name, dtype, shape, shard_id, offset, size, crc, sliced)


def _parse_header(value: bytes) -> tuple[int, bool]:
    """(number of data shards, whether the data is big-endian) from the `BundleHeaderProto`."""
    num_shards, endianness, min_consumer, bad_consumers = 0, 0, 0, []
    for number, field in fields(value):
        if number == 1:
            num_shards = int_field(number, field)
        elif number == 2:
            endianness = int_field(number, field)
        elif number == 3:  # VersionDef {producer = 1; min_consumer = 2; repeated bad_consumers = 3}
            for version_number, version_value in fields(message_field(number, field)):
                if version_number == 2:
                    min_consumer = int_field(version_number, version_value)
                elif version_number == 3:
                    bad_consumers.append(version_value)
    if num_shards < 1:
        raise Malformed(f"the header gives {num_shards} data shards")
    if endianness not in (0, 1):
        raise Malformed(f"the header gives an unknown byte order ({endianness})")
    if min_consumer > _READER_VERSION or _READER_VERSION in bad_consumers:
        raise Malformed(
            f"written in a newer bundle format (readers of version >= {min_consumer} needed, this one is version"
            f" {_READER_VERSION})"
        )
    return num_shards, endianness == 1


def _parse_index(path: Path) -> tuple[int, bool, dict[str, TensorEntry]]:
    """(number of data shards, big-endian data, tensor entries by name) of an index file."""
    try:
        entries = table_entries(path.read_bytes())
        if not entries or entries[0][0] != b"":
            raise Malformed("it has no bundle header (the entry with the empty key)")
        num_shards, big_endian = _parse_header(entries[0][1])
        tensors = {}
        for key, value in entries[1:]:
            if key.startswith(b"\x00"):  # slices of partitioned variables: keys encoded to start with a 0 byte
                continue
            name = key.decode("utf-8", errors="backslashreplace")
            try:
                tensors[name] = _parse_entry(name, value)
            except Malformed as error:
                raise Malformed(f"tensor {name}: {error}") from None
            if tensors[name].shard_id >= num_shards:
                raise Malformed(f"tensor {name} lies in shard {tensors[name].shard_id} of {num_shards}")
    except Malformed as error:
        raise ConversionError(f"{path}: not a readable TensorFlow checkpoint index: {error}") from None
    return num_shards, big_endian, tensors


_DATA_SUFFIX = re.compile(r"\.data-\d{5}-of-\d{5}$")
_STATE_PATH = re.compile(r'^model_checkpoint_path:\s*"([^"]*)"', re.MULTILINE)


def _prefix_from_state_file(folder: Path) -> Path:
    """The latest checkpoint named by TensorFlow's `checkpoint` file in `folder`."""
    state = folder / "checkpoint"
    if not state.is_file():
        raise ConversionError(
            f"{folder} is a folder without TensorFlow's 'checkpoint' file: pass the checkpoint prefix"
            f" (e.g. {folder / 'model.ckpt-1234'}, the name of its .index file without '.index')"
        )
    match = _STATE_PATH.search(state.read_text(encoding="utf-8", errors="replace"))
    if not match:
        raise ConversionError(f"{state}: no model_checkpoint_path line")
    named = Path(match.group(1))
    if not named.is_absolute():
        return folder / named
    # Training folders are often copied elsewhere afterwards; TensorFlow then still records the old absolute path.
    return named if Path(f"{named}.index").is_file() else folder / named.name


def resolve_checkpoint_prefix(path: str | Path) -> Path:
    """The checkpoint prefix meant by `path`: the prefix itself, its .index or a .data file, or a training
    folder holding TensorFlow's `checkpoint` file (whose latest checkpoint is taken)."""
    path = Path(path)
    if path.is_dir():
        prefix = _prefix_from_state_file(path)
    elif path.name.endswith(".index"):
        prefix = path.with_name(path.name.removesuffix(".index"))
    elif _DATA_SUFFIX.search(path.name):
        prefix = path.with_name(_DATA_SUFFIX.sub("", path.name))
    else:
        prefix = path
    index = Path(f"{prefix}.index")
    if index.is_file():
        return prefix
    if prefix.is_file():
        raise ConversionError(
            f"{prefix} has no {index.name}: this looks like a checkpoint of TensorFlow's format V1 (before"
            " TensorFlow 0.12), which this reader does not support; re-save it with a newer TensorFlow"
        )
    found = sorted(candidate.name for candidate in prefix.parent.glob("*.index"))  # a mistyped step number
    hint = f" (found {', '.join(found[-3:])})" if found else ""
    raise ConversionError(f"{index}: no such checkpoint index{hint}")


class TfCheckpoint:
    """A TensorFlow V2 checkpoint: its tensor entries, read from the index at once, and their data on demand."""

    def __init__(self, path: str | Path) -> None:
        self.prefix = resolve_checkpoint_prefix(path)
        self.index_path = Path(f"{self.prefix}.index")
        self.num_shards, self._big_endian, self.entries = _parse_index(self.index_path)

    def data_path(self, shard_id: int) -> Path:
        return Path(f"{self.prefix}.data-{shard_id:05d}-of-{self.num_shards:05d}")

    def read(self, name: str) -> np.ndarray:
        """The tensor `name`, checked against its recorded size and checksum."""
        entry = self.entries.get(name)
        if entry is None:
            raise ConversionError(f"{self.index_path}: no tensor {name}")
        if entry.sliced:
            raise ConversionError(
                f"{self.index_path}: tensor {name} is saved in slices (a partitioned variable), which this reader"
                " does not join"
            )
        if entry.dtype not in _NUMPY_DTYPES:
            raise ConversionError(f"{self.index_path}: tensor {name} has dtype {entry.dtype}; only numbers are read")
        dtype = np.dtype(entry.dtype).newbyteorder(">" if self._big_endian else "<")
        expected = prod(entry.shape) * dtype.itemsize
        if entry.size != expected:
            raise ConversionError(
                f"{self.index_path}: tensor {name} is recorded as {entry.size} bytes, but {entry.dtype}"
                f" {entry.shape} takes {expected}: the index is corrupt"
            )
        buffer = self._read_bytes(entry)
        actual = crc32c(buffer)
        if actual != entry.crc32c:
            raise ConversionError(
                f"{self.data_path(entry.shard_id)}: tensor {name} fails its checksum (recorded crc32c"
                f" {entry.crc32c:08x}, computed {actual:08x}): the file is corrupt"
            )
        array = np.frombuffer(buffer, dtype=dtype).reshape(entry.shape)
        return array.astype(array.dtype.newbyteorder("=")) if self._big_endian else array

    def _read_bytes(self, entry: TensorEntry) -> bytearray:
        path = self.data_path(entry.shard_id)
        try:
            file = open(path, "rb")
        except FileNotFoundError:
            raise ConversionError(
                f"{path}: no such data shard (shard {entry.shard_id + 1} of {self.num_shards}, holding tensor"
                f" {entry.name}): a checkpoint needs its .index and every .data-*-of-{self.num_shards:05d} file"
            ) from None
        with file:
            available = os.fstat(file.fileno()).st_size
            if entry.offset + entry.size > available:
                raise ConversionError(
                    f"{path}: tensor {entry.name} lies at bytes {entry.offset} to {entry.offset + entry.size}, but"
                    f" the file has {available} bytes: it is truncated"
                )
            file.seek(entry.offset)
            buffer = bytearray(entry.size)  # writable, so that torch.from_numpy can share it
            file.readinto(buffer)
        return buffer


def list_tf_checkpoint(path: str | Path) -> dict[str, TensorEntry]:
    """Every tensor of a checkpoint (name -> dtype, shape, location), in name order, without reading the data."""
    return TfCheckpoint(path).entries


def read_tf_checkpoint(path: str | Path, names: Iterable[str] | None = None) -> dict[str, np.ndarray]:
    """The tensors `names` of a checkpoint (default: every numeric tensor stored whole) as numpy arrays."""
    checkpoint = TfCheckpoint(path)
    if names is None:
        names = [name for name, entry in checkpoint.entries.items() if entry.readable]
    return {name: checkpoint.read(name) for name in names}
