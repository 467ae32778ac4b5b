"""Read TensorFlow checkpoints (format V2, the "TensorBundle") without TensorFlow.

A checkpoint PREFIX is several files:
- `PREFIX.index`: an SSTable (LevelDB's table format, written uncompressed by TensorFlow). Its first key, the
  empty string, holds a `BundleHeaderProto` (number of data shards, byte order, format version); every other
  key is a tensor name whose value is a serialized `BundleEntryProto` (dtype, shape, data shard, offset, size,
  masked CRC32C of the bytes).
- `PREFIX.data-0000i-of-0000N`: the raw tensor bytes, back to back.

The table and the few protobuf fields needed are decoded by hand, so reading a bilm-tf checkpoint needs neither
TensorFlow nor protobuf. Every block checksum, offset, size and tensor checksum is checked; errors name the file
and the tensor concerned.
"""

from __future__ import annotations

import os
import re
import struct
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from functools import lru_cache
from itertools import pairwise
from math import prod
from pathlib import Path

import numpy as np

from elmo_transformers.common.errors import ConversionError

__all__ = [
    "TensorEntry",
    "TfCheckpoint",
    "crc32c",
    "list_tf_checkpoint",
    "read_tf_checkpoint",
    "resolve_checkpoint_prefix",
]


class _Malformed(Exception):
    """A structural problem in the index; re-raised as `ConversionError` with the file's name."""


# ---------------------------------------------------------------------------------------------------------------
# CRC32C, vectorised with numpy: a pure-Python byte loop would take minutes over a 1.6 GB softmax.

_CASTAGNOLI = 0x82F63B78  # the reflected CRC-32C polynomial
_MASK_DELTA = 0xA282EAD8  # LevelDB and TensorFlow store CRCs "masked" (rotated, offset), see `_unmask`
_MIN_LANE_BYTES = 64
_MAX_LANES = 1 << 16
_PIECE_BYTES = 1 << 26  # bounds the temporary copies to a few times 64 MB


def _byte_table() -> np.ndarray:
    table = np.arange(256, dtype=np.uint32)
    for _ in range(8):
        table = np.where(table & 1, (table >> 1) ^ np.uint32(_CASTAGNOLI), table >> 1).astype(np.uint32)
    return table


_TABLE = _byte_table()
# The CRC register update is linear over GF(2): a register advanced over n zero bytes is a fixed 32x32 bit
# matrix times the register, held here as the images of the 32 single-bit registers.
_IDENTITY = tuple(1 << bit for bit in range(32))
_ONE_ZERO_BYTE = tuple(int(_TABLE[column & 0xFF]) ^ (column >> 8) for column in _IDENTITY)


def _apply(operator: tuple[int, ...], register: int) -> int:
    result, bit = 0, 0
    while register:
        if register & 1:
            result ^= operator[bit]
        register >>= 1
        bit += 1
    return result


def _compose(outer: tuple[int, ...], inner: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(_apply(outer, column) for column in inner)


@lru_cache(maxsize=256)
def _zeros_operator(count: int) -> tuple[int, ...]:
    """The map that advances a register over `count` zero bytes, by repeated squaring."""
    result, power = _IDENTITY, _ONE_ZERO_BYTE
    while count:
        if count & 1:
            result = _compose(power, result)
        count >>= 1
        if count:
            power = _compose(power, power)
    return result


@lru_cache(maxsize=64)
def _zeros_tables(count: int) -> np.ndarray:
    """`_zeros_operator(count)` as four 256-entry tables, one per register byte, to apply it to arrays."""
    columns = np.array(_zeros_operator(count), dtype=np.uint32)
    values = np.arange(256)
    tables = np.zeros((4, 256), dtype=np.uint32)
    for byte in range(4):
        for bit in range(8):
            tables[byte] ^= np.where((values >> bit) & 1, columns[8 * byte + bit], 0).astype(np.uint32)
    return tables


def _advance_over_zeros(registers: np.ndarray, count: int) -> np.ndarray:
    tables = _zeros_tables(count)
    return (
        tables[0][registers & 0xFF]
        ^ tables[1][(registers >> 8) & 0xFF]
        ^ tables[2][(registers >> 16) & 0xFF]
        ^ tables[3][registers >> 24]
    )


def _register_from_zero(data: np.ndarray) -> int:
    """The CRC register after `data` (uint8) from a zero register.

    By linearity the data can be cut into equal lanes that all run from zero at once (numpy over the lanes,
    a Python loop over the bytes of a lane), then joined pairwise: a followed by b gives
    `advance(a, over len(b) zero bytes) ^ b`. Leading zero bytes leave a zero register at zero, so the data
    is padded in front to a power-of-two number of lanes.
    """
    lanes = min(_MAX_LANES, 1 << max(0, (data.size // _MIN_LANE_BYTES).bit_length() - 1))
    length = -(-data.size // lanes)
    padded = np.zeros(lanes * length, dtype=np.uint8)
    padded[padded.size - data.size :] = data
    registers = np.zeros(lanes, dtype=np.uint32)
    for column in np.ascontiguousarray(padded.reshape(lanes, length).T):
        registers = _TABLE[(registers ^ column) & 0xFF] ^ (registers >> 8)
    while registers.size > 1:
        registers = _advance_over_zeros(registers[0::2], length) ^ registers[1::2]
        length *= 2
    return int(registers[0])


def crc32c(data: bytes | bytearray | memoryview | np.ndarray) -> int:
    """CRC-32C (Castagnoli) of `data`, as LevelDB and TensorFlow compute it (unmasked)."""
    array = np.frombuffer(data, dtype=np.uint8) if not isinstance(data, np.ndarray) else data.view(np.uint8).ravel()
    register = 0xFFFFFFFF
    for start in range(0, array.size, _PIECE_BYTES):
        piece = array[start : start + _PIECE_BYTES]
        register = _apply(_zeros_operator(piece.size), register) ^ _register_from_zero(piece)
    return register ^ 0xFFFFFFFF


def _unmask(masked: int) -> int:
    """Undo LevelDB's mask: stored = rotate_right(crc, 15) + 0xa282ead8."""
    rotated = (masked - _MASK_DELTA) & 0xFFFFFFFF
    return ((rotated << 15) | (rotated >> 17)) & 0xFFFFFFFF


# ---------------------------------------------------------------------------------------------------------------
# Protobuf wire format: only what BundleHeaderProto and BundleEntryProto use.


def _varint(buffer: bytes, position: int, end: int) -> tuple[int, int]:
    result, shift = 0, 0
    while True:
        if position >= end:
            raise _Malformed("a varint runs past the end of its record")
        byte = buffer[position]
        position += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, position
        shift += 7
        if shift >= 64:
            raise _Malformed("a varint is longer than 10 bytes")


def _signed64(value: int) -> int:
    """int64 fields are varints of the two's complement: -1 arrives as 2**64 - 1."""
    return value - (1 << 64) if value >= 1 << 63 else value


def _fields(message: bytes) -> Iterator[tuple[int, int | bytes]]:
    """(field number, value) of each field: an int for varint and fixed fields, bytes for length-delimited ones."""
    position, end = 0, len(message)
    while position < end:
        key, position = _varint(message, position, end)
        number, wire_type = key >> 3, key & 7
        if wire_type == 0:
            value, position = _varint(message, position, end)
        elif wire_type in (1, 5):
            width = 8 if wire_type == 1 else 4
            if position + width > end:
                raise _Malformed(f"field {number} runs past the end of its record")
            value = int.from_bytes(message[position : position + width], "little")
            position += width
        elif wire_type == 2:
            length, position = _varint(message, position, end)
            if position + length > end:
                raise _Malformed(f"field {number} runs past the end of its record")
            value = message[position : position + length]
            position += length
        else:
            raise _Malformed(f"field {number} has protobuf wire type {wire_type}, which no bundle field uses")
        yield number, value


def _int_field(number: int, value: int | bytes) -> int:
    if not isinstance(value, int):
        raise _Malformed(f"field {number} should be a number")
    return value


def _message_field(number: int, value: int | bytes) -> bytes:
    if not isinstance(value, bytes):
        raise _Malformed(f"field {number} should be a message")
    return value


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
    for number, value in _fields(message):
        if number == 2:  # repeated Dim {int64 size = 1; string name = 2}
            size = 0
            for dim_number, dim_value in _fields(_message_field(number, value)):
                if dim_number == 1:
                    size = _signed64(_int_field(dim_number, dim_value))
            if size < 0:
                raise _Malformed(f"dimension of size {size}: a saved tensor has a fully known shape")
            dims.append(size)
        elif number == 3 and value:
            raise _Malformed("shape of unknown rank: a saved tensor has a fully known shape")
    return tuple(dims)


def _parse_entry(name: str, value: bytes) -> TensorEntry:
    dtype_code, shape, shard_id, offset, size, crc, sliced = 0, (), 0, 0, 0, 0, False
    for number, field in _fields(value):
        if number == 1:
            dtype_code = _int_field(number, field)
        elif number == 2:
            shape = _parse_shape(_message_field(number, field))
        elif number == 3:
            shard_id = _signed64(_int_field(number, field))
        elif number == 4:
            offset = _signed64(_int_field(number, field))
        elif number == 5:
            size = _signed64(_int_field(number, field))
        elif number == 6:
            crc = _unmask(_int_field(number, field))
        elif number == 7:
            sliced = True
    if min(shard_id, offset, size) < 0:
        raise _Malformed(f"tensor {name}: negative shard, offset or size")
    dtype = _DTYPES.get(dtype_code, f"DataType {dtype_code}")
    return TensorEntry(name, dtype, shape, shard_id, offset, size, crc, sliced)


def _parse_header(value: bytes) -> tuple[int, bool]:
    """(number of data shards, whether the data is big-endian) from the `BundleHeaderProto`."""
    num_shards, endianness, min_consumer, bad_consumers = 0, 0, 0, []
    for number, field in _fields(value):
        if number == 1:
            num_shards = _int_field(number, field)
        elif number == 2:
            endianness = _int_field(number, field)
        elif number == 3:  # VersionDef {producer = 1; min_consumer = 2; repeated bad_consumers = 3}
            for version_number, version_value in _fields(_message_field(number, field)):
                if version_number == 2:
                    min_consumer = _int_field(version_number, version_value)
                elif version_number == 3:
                    bad_consumers.append(version_value)
    if num_shards < 1:
        raise _Malformed(f"the header gives {num_shards} data shards")
    if endianness not in (0, 1):
        raise _Malformed(f"the header gives an unknown byte order ({endianness})")
    if min_consumer > _READER_VERSION or _READER_VERSION in bad_consumers:
        raise _Malformed(
            f"written in a newer bundle format (readers of version >= {min_consumer} needed, this one is version"
            f" {_READER_VERSION})"
        )
    return num_shards, endianness == 1


# ---------------------------------------------------------------------------------------------------------------
# The SSTable: a footer pointing at an index block, whose entries point at the data blocks.

_FOOTER_BYTES = 48  # two block handles, zero padding, then the 8-byte magic number
_TABLE_MAGIC = 0xDB4775248B80FB57
_BLOCK_TRAILER_BYTES = 5  # compression type (1 byte) + masked CRC32C of the block and that byte (4 bytes)


def _block_handle(buffer: bytes, position: int, end: int) -> tuple[tuple[int, int], int]:
    offset, position = _varint(buffer, position, end)
    size, position = _varint(buffer, position, end)
    return (offset, size), position


def _block(table: bytes, handle: tuple[int, int], what: str) -> bytes:
    """The contents of the block at `handle`, checksum verified."""
    offset, size = handle
    end = offset + size + _BLOCK_TRAILER_BYTES
    if end > len(table) - _FOOTER_BYTES:
        raise _Malformed(f"the {what} (bytes {offset} to {end}) runs past the end of the table")
    stored = int.from_bytes(table[offset + size + 1 : end], "little")
    if _unmask(stored) != crc32c(table[offset : offset + size + 1]):
        raise _Malformed(f"the {what} at byte {offset} fails its checksum: the file is corrupt")
    compression = table[offset + size]
    if compression == 1:
        raise _Malformed(
            f"the {what} at byte {offset} is Snappy-compressed, which this reader does not decompress"
            " (TensorFlow writes checkpoint indexes uncompressed)"
        )
    if compression != 0:
        raise _Malformed(f"the {what} at byte {offset} has unknown compression type {compression}")
    return table[offset : offset + size]


def _block_entries(block: bytes, what: str) -> list[tuple[bytes, bytes]]:
    """The (key, value) pairs of a block.

    Each key stores only what differs from the previous key (`shared` leading bytes are reused); at the
    restart points listed at the block's end a key is stored whole, so those must be entries sharing nothing.
    """
    if len(block) < 4:
        raise _Malformed(f"the {what} is too short to hold its restart count")
    (restart_count,) = struct.unpack_from("<I", block, len(block) - 4)
    end = len(block) - 4 - 4 * restart_count
    if restart_count < 1 or end < 0:
        raise _Malformed(f"the {what} gives an impossible restart count ({restart_count})")
    restarts = set(struct.unpack_from(f"<{restart_count}I", block, end))
    entries, whole_keys, key, position = [], set(), b"", 0
    while position < end:
        start = position
        shared, position = _varint(block, position, end)
        unshared, position = _varint(block, position, end)
        value_length, position = _varint(block, position, end)
        if shared > len(key) or position + unshared + value_length > end:
            raise _Malformed(f"an entry of the {what} at byte {start} runs past its key or its block")
        key = key[:shared] + block[position : position + unshared]
        position += unshared
        entries.append((key, block[position : position + value_length]))
        position += value_length
        if shared == 0:
            whole_keys.add(start)
    if not restarts <= (whole_keys if entries else {0}):
        raise _Malformed(f"a restart point of the {what} is not the start of a whole key")
    return entries


def _table_entries(table: bytes) -> list[tuple[bytes, bytes]]:
    """Every (key, value) of an SSTable, in key order."""
    if len(table) < _FOOTER_BYTES or int.from_bytes(table[-8:], "little") != _TABLE_MAGIC:
        raise _Malformed(
            f"it does not end with an SSTable footer ({len(table)} bytes): the file is truncated, or not a"
            " TensorFlow checkpoint index"
        )
    footer = table[-_FOOTER_BYTES:]
    _, position = _block_handle(footer, 0, 40)  # the metaindex block: nothing TensorFlow uses
    index_handle, _ = _block_handle(footer, position, 40)
    entries: list[tuple[bytes, bytes]] = []
    for _, handle_bytes in _block_entries(_block(table, index_handle, "index block"), "index block"):
        handle, _ = _block_handle(handle_bytes, 0, len(handle_bytes))
        entries.extend(_block_entries(_block(table, handle, "data block"), f"data block at byte {handle[0]}"))
    if any(previous >= key for (previous, _), (key, _) in pairwise(entries)):
        raise _Malformed("its keys are out of order: the file is corrupt")
    return entries


def _parse_index(path: Path) -> tuple[int, bool, dict[str, TensorEntry]]:
    """(number of data shards, big-endian data, tensor entries by name) of an index file."""
    try:
        entries = _table_entries(path.read_bytes())
        if not entries or entries[0][0] != b"":
            raise _Malformed("it has no bundle header (the entry with the empty key)")
        num_shards, big_endian = _parse_header(entries[0][1])
        tensors = {}
        for key, value in entries[1:]:
            if key.startswith(b"\x00"):  # slices of partitioned variables: keys encoded to start with a 0 byte
                continue
            name = key.decode("utf-8", errors="backslashreplace")
            try:
                tensors[name] = _parse_entry(name, value)
            except _Malformed as error:
                raise _Malformed(f"tensor {name}: {error}") from None
            if tensors[name].shard_id >= num_shards:
                raise _Malformed(f"tensor {name} lies in shard {tensors[name].shard_id} of {num_shards}")
    except _Malformed as error:
        raise ConversionError(f"{path}: not a readable TensorFlow checkpoint index: {error}") from None
    return num_shards, big_endian, tensors


# ---------------------------------------------------------------------------------------------------------------
# Checkpoints.

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
