"""One source tensor, the model parameters it becomes, and the way back: the unit of every conversion."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

__all__ = ["WeightMapping", "character_embedding", "same", "transposed"]


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


def same(dataset: str, shape: tuple[int, ...], parameter: str) -> WeightMapping:
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
