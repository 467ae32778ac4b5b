"""One source tensor, the model parameters it becomes, and the way back: the unit of every conversion."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from elmo_transformers.common.errors import ConversionError

__all__ = ["WeightMapping", "character_embedding", "check_finite", "transposed", "unchanged"]


@dataclass(frozen=True)
class WeightMapping:
    """One source tensor (an hdf5 dataset or a state-dict entry), its expected shape, the model parameters
    made from it, and the way back.

    `to_model` maps the dataset to one array per name in `parameters`; `to_original` maps those arrays
    back. Both only slice, transpose, reorder, negate and concatenate, so a round trip is exact to the bit.
    """

    dataset: str
    shape: tuple[int, ...]
    parameters: tuple[str, ...]
    to_model: Callable[[np.ndarray], tuple[np.ndarray, ...]]
    to_original: Callable[..., np.ndarray]


def unchanged(dataset: str, shape: tuple[int, ...], parameter: str) -> WeightMapping:
    """The source tensor is the parameter as it is."""
    return WeightMapping(dataset, shape, (parameter,), lambda array: (array,), lambda array: array)


def transposed(dataset: str, shape: tuple[int, ...], parameter: str) -> WeightMapping:
    """TF dense kernels are (in, out); torch Linear weights are (out, in)."""
    return WeightMapping(dataset, shape, (parameter,), lambda array: (array.T,), lambda array: array.T)


def character_embedding(dataset: str, shape: tuple[int, ...]) -> WeightMapping:
    """The source has no row for the model's id 0 ("no word"): that row is the zero vector."""
    return WeightMapping(
        dataset,
        shape,
        ("char_encoder.char_embedding.weight",),
        lambda array: (np.concatenate([np.zeros_like(array[:1]), array]),),
        lambda weight: weight[1:],
    )


_FINITE_CHECK_ELEMENTS = 1 << 24  # a 1.6 GB softmax is checked without a 400 MB mask


def check_finite(array: np.ndarray, where: str) -> None:
    """Raise `ConversionError` naming `where` (the file and dataset) and the first index of a NaN or infinity in
    `array`: such weights would convert, then fail the saved-equals-converted check with no word of why."""
    flat = array.reshape(-1)
    for start in range(0, flat.size, _FINITE_CHECK_ELEMENTS):
        bad = np.flatnonzero(~np.isfinite(flat[start : start + _FINITE_CHECK_ELEMENTS]))
        if bad.size:
            index = tuple(int(axis) for axis in np.unravel_index(start + int(bad[0]), array.shape))
            raise ConversionError(
                f"{where} holds a non-finite value ({flat[start + bad[0]]}) at index {list(index)}: the weights are"
                " damaged"
            )
