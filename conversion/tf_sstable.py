"""The SSTable (LevelDB's table format, as TensorFlow writes it for a checkpoint's index: uncompressed): a footer
pointing at an index block, whose entries point at the data blocks. Every block checksum is checked.
"""

from __future__ import annotations

import struct
from itertools import pairwise

from .tf_crc32c import crc32c, unmask
from .tf_protobuf import Malformed, varint

__all__ = ["block_entries", "decode_block_handle", "read_block", "table_entries"]

_FOOTER_BYTES = 48  # two block handles, zero padding, then the 8-byte magic number
_TABLE_MAGIC = 0xDB4775248B80FB57
_BLOCK_TRAILER_BYTES = 5  # compression type (1 byte) + masked CRC32C of the block and that byte (4 bytes)


def decode_block_handle(buffer: bytes, position: int, end: int) -> tuple[tuple[int, int], int]:
    """((offset, size) of a block, the position after them): a handle is two varints."""
    offset, position = varint(buffer, position, end)
    size, position = varint(buffer, position, end)
    return (offset, size), position


def read_block(table: bytes, handle: tuple[int, int], what: str) -> bytes:
    """The contents of the block at `handle`, checksum verified."""
    offset, size = handle
    end, blocks_end = offset + size + _BLOCK_TRAILER_BYTES, len(table) - _FOOTER_BYTES
    if end > blocks_end:
        raise Malformed(
            f"the {what} (bytes {offset} to {end}) runs past the blocks, which end at byte {blocks_end} where the"
            f" {_FOOTER_BYTES}-byte footer begins"
        )
    stored = int.from_bytes(table[offset + size + 1 : end], "little")
    if unmask(stored) != crc32c(table[offset : offset + size + 1]):
        raise Malformed(f"the {what} at byte {offset} fails its checksum: the file is corrupt")
    compression = table[offset + size]
    if compression == 1:
        raise Malformed(
            f"the {what} at byte {offset} is Snappy-compressed, which this reader does not decompress"
            " (TensorFlow writes checkpoint indexes uncompressed)"
        )
    if compression != 0:
        raise Malformed(f"the {what} at byte {offset} has unknown compression type {compression}")
    return table[offset : offset + size]


def block_entries(block: bytes, what: str) -> list[tuple[bytes, bytes]]:
    """The (key, value) pairs of a block.

    Each key stores only what differs from the previous key (`shared` leading bytes are reused); at the
    restart points listed at the block's end a key is stored whole, so those must be entries sharing nothing.
    """
    if len(block) < 4:
        raise Malformed(f"the {what} is too short to hold its restart count")
    (restart_count,) = struct.unpack_from("<I", block, len(block) - 4)
    end = len(block) - 4 - 4 * restart_count
    if restart_count < 1 or end < 0:
        raise Malformed(f"the {what} gives an impossible restart count ({restart_count})")
    restarts = set(struct.unpack_from(f"<{restart_count}I", block, end))
    entries, whole_keys, key, position = [], set(), b"", 0
    while position < end:
        start = position
        shared, position = varint(block, position, end)
        unshared, position = varint(block, position, end)
        value_length, position = varint(block, position, end)
        if shared > len(key) or position + unshared + value_length > end:
            raise Malformed(f"an entry of the {what} at byte {start} runs past its key or its block")
        key = key[:shared] + block[position : position + unshared]
        position += unshared
        entries.append((key, block[position : position + value_length]))
        position += value_length
        if shared == 0:
            whole_keys.add(start)
    if not restarts <= (whole_keys if entries else {0}):
        raise Malformed(f"a restart point of the {what} is not the start of a whole key")
    return entries


def table_entries(table: bytes) -> list[tuple[bytes, bytes]]:
    """Every (key, value) of an SSTable, in key order."""
    if len(table) < _FOOTER_BYTES or int.from_bytes(table[-8:], "little") != _TABLE_MAGIC:
        raise Malformed(
            f"it does not end with an SSTable footer ({len(table)} bytes): the file is truncated, or not a"
            " TensorFlow checkpoint index"
        )
    footer = table[-_FOOTER_BYTES:]
    _, position = decode_block_handle(footer, 0, 40)  # the metaindex block: nothing TensorFlow uses
    index_handle, _ = decode_block_handle(footer, position, 40)
    entries: list[tuple[bytes, bytes]] = []
    for _, handle_bytes in block_entries(read_block(table, index_handle, "index block"), "index block"):
        handle, _ = decode_block_handle(handle_bytes, 0, len(handle_bytes))
        entries.extend(block_entries(read_block(table, handle, "data block"), f"data block at byte {handle[0]}"))
    for (previous, _), (key, _) in pairwise(entries):
        if previous == key:  # a dict of them would keep one in silence
            name = key.decode("utf-8", errors="backslashreplace")
            raise Malformed(f"the key {name!r} appears twice (two tensors of one name): the file is corrupt")
        if previous > key:
            raise Malformed("its keys are out of order: the file is corrupt")
    return entries
