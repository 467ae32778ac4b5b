"""The protobuf wire format, decoded by hand: only what a TensorFlow checkpoint's index records use (varints,
fixed-width numbers and length-delimited fields), so that reading one needs no protobuf package.
"""

from __future__ import annotations

from collections.abc import Iterator

__all__ = ["Malformed", "fields", "int_field", "message_field", "signed64", "varint"]


class Malformed(Exception):
    """A structural problem in a checkpoint index's bytes (its table or its records); `tf_checkpoint` re-raises it
    as `ConversionError` with the file's name."""


def varint(buffer: bytes, position: int, end: int) -> tuple[int, int]:
    result, shift = 0, 0
    while True:
        if position >= end:
            raise Malformed("a varint runs past the end of its record")
        byte = buffer[position]
        position += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, position
        shift += 7
        if shift >= 64:
            raise Malformed("a varint is longer than 10 bytes")


def signed64(value: int) -> int:
    """int64 fields are varints of the two's complement: -1 arrives as 2**64 - 1."""
    return value - (1 << 64) if value >= 1 << 63 else value


def fields(message: bytes) -> Iterator[tuple[int, int | bytes]]:
    """(field number, value) of each field: an int for varint and fixed fields, bytes for length-delimited ones."""
    position, end = 0, len(message)
    while position < end:
        key, position = varint(message, position, end)
        number, wire_type = key >> 3, key & 7
        if wire_type == 0:
            value, position = varint(message, position, end)
        elif wire_type in (1, 5):
            width = 8 if wire_type == 1 else 4
            if position + width > end:
                raise Malformed(f"field {number} runs past the end of its record")
            value = int.from_bytes(message[position : position + width], "little")
            position += width
        elif wire_type == 2:
            length, position = varint(message, position, end)
            if position + length > end:
                raise Malformed(f"field {number} runs past the end of its record")
            value = message[position : position + length]
            position += length
        else:
            raise Malformed(f"field {number} has protobuf wire type {wire_type}, which no bundle field uses")
        yield number, value


def int_field(number: int, value: int | bytes) -> int:
    if not isinstance(value, int):
        raise Malformed(f"field {number} should be a number")
    return value


def message_field(number: int, value: int | bytes) -> bytes:
    if not isinstance(value, bytes):
        raise Malformed(f"field {number} should be a message")
    return value
