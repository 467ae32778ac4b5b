"""One source tensor, the model parameters it becomes, and the way back: the unit of every conversion."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from elmo_transformers.common.errors import ConversionError
from modeling_elmo.finite_elmo import first_non_finite

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


def check_finite(array: np.ndarray, where: str) -> None:
    """Raise `ConversionError` naming `where` (the file and dataset) and the first index of a NaN or infinity in
    `array` (`finite_elmo.first_non_finite`): such weights would convert, then fail the saved-equals-converted check
    with no word of why."""
    found = first_non_finite(array)
    if found is not None:
        index, value = found
        raise ConversionError(f"{where} holds a non-finite value ({value}) at index {index}: the weights are damaged")
