"""CRC-32C (Castagnoli) as LevelDB and TensorFlow compute it, and the "masked" form in which they store it.

Vectorised with numpy: a pure-Python byte loop would take minutes over a 1.6 GB softmax.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

__all__ = ["crc32c", "unmask"]

_CASTAGNOLI = 0x82F63B78  # the reflected CRC-32C polynomial
_MASK_DELTA = 0xA282EAD8  # LevelDB and TensorFlow store CRCs "masked" (rotated, offset), see `unmask`
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


def unmask(masked: int) -> int:
    """Undo LevelDB's mask: stored = rotate_right(crc, 15) + 0xa282ead8."""
    rotated = (masked - _MASK_DELTA) & 0xFFFFFFFF
    return ((rotated << 15) | (rotated >> 17)) & 0xFFFFFFFF
