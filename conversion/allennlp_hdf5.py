"""AllenNLP/bilm-tf `weights.hdf5` -> `ElmoModel` state dict.

`weight_mappings` lists every dataset of the original file, the shape the options imply for it, and the
parameters it becomes; nothing is converted that is not listed, and every listed shape is asserted.
"""

from __future__ import annotations

from pathlib import Path

import h5py
import numpy as np
import torch
from tqdm.auto import tqdm

from elmo_transformers.common.errors import ConversionError
from elmo_transformers.common.regular_files import regular_file_problem
from modeling_elmo import ElmoConfig

from .weight_mapping import WeightMapping, character_embedding, check_finite, transposed, unchanged

__all__ = ["read_allennlp_weights", "weight_mappings", "write_allennlp_weights"]


def weight_mappings(config: ElmoConfig) -> list[WeightMapping]:
    """Every dataset of an original weights file for `config`, in file order."""
    chars, embedding = config.char_vocab_size, config.char_embedding_dim
    filters, projection, cells = config.num_filters, config.projection_dim, config.cell_size
    mappings = [character_embedding("char_embed", (chars - 1, embedding))]
    for index, (width, count) in enumerate(config.char_cnn_filters):
        target = f"char_encoder.convolutions.{index}"
        # TF conv2d kernel (1, width, in, out) <-> torch Conv1d weight (out, in, width).
        mappings.append(
            WeightMapping(
                f"CNN/W_cnn_{index}",
                (1, width, embedding, count),
                (f"{target}.weight",),
                lambda array: (array[0].transpose(2, 1, 0),),
                lambda weight: weight.transpose(2, 1, 0)[None],
            )
        )
        mappings.append(unchanged(f"CNN/b_cnn_{index}", (count,), f"{target}.bias"))
    for index in range(config.num_highway_layers):
        target = f"char_encoder.highways.{index}"
        for gate in ("carry", "transform"):
            mappings.append(transposed(f"CNN_high_{index}/W_{gate}", (filters, filters), f"{target}.{gate}.weight"))
            mappings.append(unchanged(f"CNN_high_{index}/b_{gate}", (filters,), f"{target}.{gate}.bias"))
    mappings.append(transposed("CNN_proj/W_proj", (filters, projection), "char_encoder.projection.weight"))
    mappings.append(unchanged("CNN_proj/b_proj", (projection,), "char_encoder.projection.bias"))
    for direction, stack in enumerate(("forward_lstm", "backward_lstm")):
        for layer in range(config.num_hidden_layers):
            source = f"RNN_{direction}/RNN/MultiRNNCell/Cell{layer}/LSTMCell"
            target = f"{stack}.layers.{layer}"
            # W_0 acts on [input; h_prev]: its first rows belong to the input, the last P to the state.
            mappings.append(
                WeightMapping(
                    f"{source}/W_0",
                    (projection + projection, 4 * cells),
                    (f"{target}.input_projection.weight", f"{target}.state_projection.weight"),
                    lambda array: (array[:-projection].T, array[-projection:].T),
                    lambda input_weight, state_weight: np.concatenate([input_weight.T, state_weight.T]),
                )
            )
            mappings.append(unchanged(f"{source}/B", (4 * cells,), f"{target}.input_projection.bias"))
            mappings.append(transposed(f"{source}/W_P_0", (cells, projection), f"{target}.output_projection.weight"))
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
    problem = regular_file_problem(path, "weights file")
    if problem:
        raise ConversionError(problem)
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
            original = dataset[...]
            check_finite(original, f"{path}: dataset {mapping.dataset}")
            for name, array in zip(mapping.parameters, mapping.to_model(original), strict=True):
                state_dict[name] = torch.from_numpy(np.ascontiguousarray(array))
    return state_dict


def write_allennlp_weights(path: str | Path, state_dict: dict[str, torch.Tensor], config: ElmoConfig) -> None:
    """Write a state dict of `ElmoModel(config)` as an original `weights.hdf5` (float32, original names)."""
    char_embedding = state_dict["char_encoder.char_embedding.weight"]
    if char_embedding[0].any():
        raise ConversionError("row 0 of the character embedding is not zero: the original format cannot hold it")
    with h5py.File(path, "w") as weights:
        for mapping in weight_mappings(config):
            parameters = [state_dict[name].detach().cpu().float().numpy() for name in mapping.parameters]
            array = np.ascontiguousarray(mapping.to_original(*parameters), dtype=np.float32)
            if array.shape != mapping.shape:
                raise AssertionError(f"{mapping.dataset}: built shape {array.shape}, expected {mapping.shape}")
            weights.create_dataset(mapping.dataset, data=array)
