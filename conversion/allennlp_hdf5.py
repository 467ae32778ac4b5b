"""AllenNLP/bilm-tf `weights.hdf5` -> `ElmoModel` state dict.

`weight_mappings` lists every dataset of the original file, the shape the options imply for it, and the
parameters it becomes; nothing is converted that is not listed, and every listed shape is asserted.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import h5py
import numpy as np
import torch
from tqdm.auto import tqdm

from modeling_elmo import ElmoConfig

from .errors import ConversionError

__all__ = ["WeightMapping", "read_allennlp_weights", "weight_mappings"]

Transform = Callable[[np.ndarray], np.ndarray]


def _transpose(array: np.ndarray) -> np.ndarray:
    return array.T


def _identity(array: np.ndarray) -> np.ndarray:
    return array


@dataclass(frozen=True)
class WeightMapping:
    """One hdf5 dataset, its expected shape, and the model parameters made from it."""

    dataset: str
    shape: tuple[int, ...]
    parameters: dict[str, Transform]


def weight_mappings(config: ElmoConfig) -> list[WeightMapping]:
    """Every dataset of an original weights file for `config`, in file order."""
    chars, embedding = config.char_vocab_size, config.char_embedding_dim
    filters, projection, cells = config.num_filters, config.projection_dim, config.cell_size
    mappings = [
        # The file has no row for id 0 ("no character"): the model's row 0 is the zero vector.
        WeightMapping(
            "char_embed",
            (chars - 1, embedding),
            {"char_encoder.char_embedding.weight": lambda w: np.concatenate([np.zeros_like(w[:1]), w])},
        )
    ]
    for index, (width, count) in enumerate(config.char_cnn_filters):
        target = f"char_encoder.convolutions.{index}"
        # TF conv2d kernel (1, width, in, out) -> torch Conv1d (out, in, width).
        mappings.append(
            WeightMapping(
                f"CNN/W_cnn_{index}",
                (1, width, embedding, count),
                {f"{target}.weight": lambda w: w[0].transpose(2, 1, 0)},
            )
        )
        mappings.append(WeightMapping(f"CNN/b_cnn_{index}", (count,), {f"{target}.bias": _identity}))
    for index in range(config.num_highway_layers):
        target = f"char_encoder.highways.{index}"
        for gate in ("carry", "transform"):
            mappings.append(
                WeightMapping(f"CNN_high_{index}/W_{gate}", (filters, filters), {f"{target}.{gate}.weight": _transpose})
            )
            mappings.append(
                WeightMapping(f"CNN_high_{index}/b_{gate}", (filters,), {f"{target}.{gate}.bias": _identity})
            )
    mappings.append(
        WeightMapping("CNN_proj/W_proj", (filters, projection), {"char_encoder.projection.weight": _transpose})
    )
    mappings.append(WeightMapping("CNN_proj/b_proj", (projection,), {"char_encoder.projection.bias": _identity}))
    for direction, stack in enumerate(("forward_lstm", "backward_lstm")):
        for layer in range(config.num_hidden_layers):
            source = f"RNN_{direction}/RNN/MultiRNNCell/Cell{layer}/LSTMCell"
            target = f"{stack}.layers.{layer}"
            # W_0 acts on [input; h_prev]: its first rows belong to the input, the last P to the state.
            mappings.append(
                WeightMapping(
                    f"{source}/W_0",
                    (projection + projection, 4 * cells),
                    {
                        f"{target}.input_projection.weight": lambda w: w[: w.shape[0] - projection].T,
                        f"{target}.state_projection.weight": lambda w: w[w.shape[0] - projection :].T,
                    },
                )
            )
            mappings.append(WeightMapping(f"{source}/B", (4 * cells,), {f"{target}.input_projection.bias": _identity}))
            mappings.append(
                WeightMapping(
                    f"{source}/W_P_0", (cells, projection), {f"{target}.output_projection.weight": _transpose}
                )
            )
    return mappings


def _dataset_names(weights: h5py.File) -> set[str]:
    names: set[str] = set()
    weights.visititems(lambda name, item: names.add(name) if isinstance(item, h5py.Dataset) else None)
    return names


def read_allennlp_weights(path: str | Path, config: ElmoConfig, *, progress: bool = True) -> dict[str, torch.Tensor]:
    """Read an original `weights.hdf5` into a state dict for `ElmoModel(config)`.

    Raises `ConversionError` naming the file and dataset when the file is not HDF5, a dataset is missing
    or extra, or a shape differs from what the options imply.
    """
    path = Path(path)
    if not path.is_file():
        raise ConversionError(f"{path}: no such weights file")
    try:
        weights = h5py.File(path, "r")
    except OSError as error:
        raise ConversionError(f"{path} is not an HDF5 weights file ({error})") from None
    mappings = weight_mappings(config)
    with weights:
        present = _dataset_names(weights)
        expected = {mapping.dataset for mapping in mappings}
        missing = sorted(expected - present)
        if missing:
            raise ConversionError(
                f"{path}: dataset {missing[0]} is missing"
                + (f" (and {len(missing) - 1} more)" if len(missing) > 1 else "")
                + "; do the options match these weights?"
            )
        unexpected = sorted(present - expected)
        if unexpected:
            raise ConversionError(
                f"{path}: dataset {unexpected[0]} is not described by the options"
                + (f" (and {len(unexpected) - 1} more)" if len(unexpected) > 1 else "")
                + f"; the options give {config.num_hidden_layers} LSTM layers, {config.num_highway_layers} highway"
                f" layers and {len(config.char_cnn_filters)} CNN filters"
            )
        state_dict = {}
        for mapping in tqdm(mappings, desc="Reading weights", unit="dataset", disable=not progress):
            dataset = weights[mapping.dataset]
            if dataset.shape != mapping.shape:
                raise ConversionError(
                    f"{path}: dataset {mapping.dataset} has shape {dataset.shape}, the options imply {mapping.shape}"
                )
            if dataset.dtype != np.float32:
                raise ConversionError(f"{path}: dataset {mapping.dataset} has dtype {dataset.dtype}, expected float32")
            array = dataset[...]
            for name, transform in mapping.parameters.items():
                state_dict[name] = torch.from_numpy(np.ascontiguousarray(transform(array)))
    return state_dict
