"""The search for a NaN or an infinity in weights or vectors, on numpy alone: the one home of the rule, shared by
the model's check of its weights (`modeling_elmo.non_finite_entry`, torch tensors handed over chunk by chunk), the
conversions' check of source tensors and `elmo-embed`'s refusal of overflowed vectors (which runs without torch on
ONNX Runtime).

The first non-finite element in row-major order is reported, with its index and value, and an array is searched
`FINITE_CHECK_ELEMENTS` elements at a time: a 1.6 GB softmax is checked without a 400 MB mask.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

import numpy as np

__all__ = ["FINITE_CHECK_ELEMENTS", "chunk_slices", "first_non_finite", "first_non_finite_in_chunks", "flat_chunks"]

# The elements checked at once for a NaN or an infinity (a mask of 16 MB).
FINITE_CHECK_ELEMENTS = 1 << 24


def first_non_finite(array: np.ndarray) -> tuple[list[int], float] | None:
    """The index (one int per axis) and value of the first NaN or infinity of `array` (any shape), or None."""
    return first_non_finite_in_chunks(flat_chunks(array), array.shape)


def flat_chunks(array: np.ndarray) -> Iterator[np.ndarray]:
    """`array` flattened, in views of `FINITE_CHECK_ELEMENTS` elements (a copy only where it is not contiguous)."""
    flat = array.reshape(-1)
    return (flat[part] for part in chunk_slices(flat.size))


def chunk_slices(size: int) -> list[slice]:
    """The chunks of `FINITE_CHECK_ELEMENTS` elements of `size` flattened elements (a torch tensor's too)."""
    return [slice(start, start + FINITE_CHECK_ELEMENTS) for start in range(0, size, FINITE_CHECK_ELEMENTS)]


def first_non_finite_in_chunks(chunks: Iterable[np.ndarray], shape: tuple[int, ...]) -> tuple[list[int], float] | None:
    """`first_non_finite` of the array of `shape` whose flattened elements are `chunks` (1-D, in order), read one
    after the other and no further than the first non-finite element."""
    start = 0
    for chunk in chunks:
        finite = np.isfinite(chunk)
        if not finite.all():  # (the common case, all finite, costs the mask and one pass over it)
            offset = int(np.argmin(finite))  # the first False
            return [int(axis) for axis in np.unravel_index(start + offset, shape)], chunk[offset].item()
        start += chunk.size
    return None
