"""The frozen-biLM workflow: compute the biLM's layers once per dataset and reuse them.

With `freeze_bilm=True` (the paper's setting) the biLM gives every sentence the same layers in every epoch and
for every way of mixing them, so they are computed once and stored with the `datasets` library: an Arrow file
in a cache folder, memory-mapped when loaded (no pickles, no parsing: each row is read straight from the file's
buffers). `ElmoCachedFeaturesCollator` (`elmo_transformers.training.finetuning.collator`) batches the stored rows for
the heads, which then take `bilm_layers` instead of running the biLM.

Storage: one row per sentence, `bilm_layers` of shape (words, layers, 2P) as `datasets.Array3D` with a dynamic
first dimension, float32 by default (bit for bit what the biLM computed) or float16 (half the disk; a relative
rounding error of at most 2**-11, about 5e-4).

The cache file is named by a key over everything that decides its content: the biLM's weights (a sha256 of
every tensor of its state dict, so weights changed in memory count too), the biLM's configuration fields
(all but ElmoConfig's `TASK_HEAD_FIELDS`, the mixing and task-head fields, so one cache serves every mixing
scheme), the sentences' inputs (`input_ids`, plus `input_word_ids` and `attention_mask` where present) and the
storage dtype. The number of stored layers is in the file name: a model that mixes fewer layers
(`mix_layers=[0, 1]`) reuses a file with more, and otherwise gets a file of its own with only the layers it
computes.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import torch
from datasets import Array3D, Dataset, Features, concatenate_datasets

from modeling_elmo import ElmoModel
from modeling_elmo.configuration_elmo import ELMO_CONFIG_FIELDS, TASK_HEAD_FIELDS
from modeling_elmo.modeling_elmo import ElmoTaskModel
from modeling_elmo.tokenization_elmo import pad_sentences

__all__ = ["FEATURES_COLUMN", "bilm_features_key", "cache_bilm_features"]

FEATURES_COLUMN = "bilm_layers"
FEATURE_CACHE_DTYPES = {"float32": torch.float32, "float16": torch.float16}
# The columns the biLM reads; `input_ids` is required.
INPUT_COLUMNS = ("input_ids", "input_word_ids", "attention_mask")
KEY_VERSION = 1
_FILE_PATTERN = re.compile(r"bilm-(?P<key>[0-9a-f]{40})-(?P<layers>\d+)layers-(?P<dtype>float\d+)\.arrow")


def cache_bilm_features(
    dataset: Dataset,
    model: ElmoModel | ElmoTaskModel,
    cache_dir: str | os.PathLike,
    *,
    batch_size: int = 32,
    storage_dtype: str = "float32",
) -> Dataset:
    """`dataset` with a `bilm_layers` column: per row, the biLM's layers of shape (words, layers, 2P).

    Args:
        dataset: rows with `input_ids` (words, max_characters_per_token) from `ElmoTokenizer`, and optionally
            `input_word_ids` (words,) and `attention_mask` (words,). Its other columns (labels, text) are kept.
        model: the biLM, or a task head (its `.elmo` is used). It runs on its own device, in eval mode, and
            stores the `config.mix_depth + 1` layers its mix reads (layer 0 is `[token; token]`).
        cache_dir: the folder of the cache files (created if needed).
        batch_size: sentences per biLM call while computing.
        storage_dtype: `float32` (exact) or `float16`.

    Returns:
        The rows of `dataset` with `bilm_layers` appended, read from the memory-mapped cache file as NumPy
        arrays of the storage dtype (the other columns stay Python objects). A cache file with the same key
        and at least as many layers is reused without running the biLM.
    """
    elmo = model.elmo if isinstance(model, ElmoTaskModel) else model
    if storage_dtype not in FEATURE_CACHE_DTYPES:
        raise ValueError(f"storage_dtype must be one of {sorted(FEATURE_CACHE_DTYPES)}, got {storage_dtype!r}")
    if "input_ids" not in dataset.column_names:
        raise ValueError(f"the dataset has no input_ids column (columns: {', '.join(dataset.column_names)})")
    if FEATURES_COLUMN in dataset.column_names:
        raise ValueError(f"the dataset already has a {FEATURES_COLUMN} column")
    num_layers = elmo.config.mix_depth + 1
    key = bilm_features_key(dataset, elmo, storage_dtype)
    cache_dir = Path(cache_dir)
    cache_dir.mkdir(parents=True, exist_ok=True)
    existing = _existing_cache_file(cache_dir, key, num_layers, storage_dtype)
    if existing is not None:
        features = Dataset.from_file(str(existing))
    else:
        features = _compute_features(dataset, elmo, cache_dir, key, num_layers, storage_dtype, batch_size)
    combined = concatenate_datasets([dataset, features], axis=1)
    # dtype=None keeps the stored dtype (the NumPy format would cast float16 to float32).
    return combined.with_format("numpy", columns=[FEATURES_COLUMN], output_all_columns=True, dtype=None)


def bilm_features_key(dataset: Dataset, elmo: ElmoModel, storage_dtype: str) -> str:
    """The cache key (40 hex digits) of `dataset`'s biLM layers computed by `elmo`, stored as `storage_dtype`."""
    hasher = hashlib.sha256()
    bilm_config = {name: getattr(elmo.config, name) for name in _bilm_config_fields()}
    hasher.update(json.dumps({"version": KEY_VERSION, "config": bilm_config, "dtype": storage_dtype}).encode())
    for name, tensor in sorted(elmo.state_dict().items()):
        hasher.update(f"{name}:{tensor.dtype}:{tuple(tensor.shape)}".encode())
        hasher.update(tensor.detach().cpu().contiguous().reshape(-1).view(torch.uint8).numpy())
    columns = [column for column in INPUT_COLUMNS if column in dataset.column_names]
    hasher.update(f"{len(dataset)} rows; columns {columns}".encode())
    for batch in dataset.select_columns(columns).with_format("arrow").iter(batch_size=1024):
        for column in columns:
            for part in _arrow_value_parts(batch.column(column).combine_chunks()):
                hasher.update(part)
    return hasher.hexdigest()[:40]


def _bilm_config_fields() -> list[str]:
    """ElmoConfig's own fields that can change what the biLM computes: all but the task head's."""
    return [name for name in ELMO_CONFIG_FIELDS if name not in TASK_HEAD_FIELDS]


def _arrow_value_parts(array: pa.Array) -> list[bytes]:
    """What identifies a (nested) list array's content, whatever its chunking or slicing: the lengths at each
    level, the type of the innermost values and the values."""
    parts = []
    while pa.types.is_list(array.type) or pa.types.is_large_list(array.type) or pa.types.is_fixed_size_list(array.type):
        parts.append(pc.list_value_length(array).to_numpy(zero_copy_only=False).tobytes())
        array = pc.list_flatten(array)
    parts.append(str(array.type).encode())
    parts.append(array.to_numpy(zero_copy_only=False).tobytes())
    return parts


def _existing_cache_file(cache_dir: Path, key: str, num_layers: int, storage_dtype: str) -> Path | None:
    """The cache file of `key` with the fewest layers, at least `num_layers`, or None."""
    candidates = []
    for path in cache_dir.glob(f"bilm-{key}-*layers-{storage_dtype}.arrow"):
        match = _FILE_PATTERN.fullmatch(path.name)
        if match and int(match["layers"]) >= num_layers:
            candidates.append((int(match["layers"]), path))
    return min(candidates)[1] if candidates else None


def _compute_features(
    dataset: Dataset,
    elmo: ElmoModel,
    cache_dir: Path,
    key: str,
    num_layers: int,
    storage_dtype: str,
    batch_size: int,
) -> Dataset:
    """Run the biLM over `dataset` and write its layers to the cache file of `key` (atomically, by `datasets`)."""
    width = elmo.config.hidden_size
    features = Features({FEATURES_COLUMN: Array3D(shape=(None, num_layers, width), dtype=storage_dtype)})
    dtype = FEATURE_CACHE_DTYPES[storage_dtype]
    was_training = elmo.training
    elmo.eval()

    def bilm_layers(batch: dict[str, list]) -> dict[str, list[np.ndarray]]:
        inputs, lengths = _pad_inputs(batch, elmo.config.max_characters_per_token, elmo.device)
        with torch.inference_mode():
            layers = elmo(**inputs, output_hidden_states=True, num_layers=num_layers - 1).hidden_states
        stacked = torch.stack(layers, dim=2).to("cpu", dtype)  # (batch, words, layers, 2P)
        return {FEATURES_COLUMN: [stacked[row, :length].numpy() for row, length in enumerate(lengths)]}

    try:
        return dataset.map(
            bilm_layers,
            batched=True,
            batch_size=batch_size,
            remove_columns=dataset.column_names,
            features=features,
            cache_file_name=str(cache_dir / f"bilm-{key}-{num_layers}layers-{storage_dtype}.arrow"),
            load_from_cache_file=True,
            new_fingerprint=key,
            desc="Computing the biLM's layers",
        )
    finally:
        elmo.train(was_training)


def _pad_inputs(
    batch: dict[str, list], max_characters: int, device: torch.device
) -> tuple[dict[str, torch.Tensor], list[int]]:
    """The rows of a batch padded on the right as the tokenizer pads them: `input_ids` (batch, words, chars),
    `attention_mask` and `input_word_ids` (batch, words); and each row's length (its stored positions, padding
    included)."""
    lengths = [len(row) for row in batch["input_ids"]]
    words = max(lengths, default=0)
    examples = [dict(zip(batch, values, strict=True)) for values in zip(*batch.values(), strict=True)]
    padded = pad_sentences(examples, words, [0] * max_characters)
    shapes = {"input_ids": (len(lengths), words, max_characters), "attention_mask": (len(lengths), words)}
    if "input_word_ids" in batch:
        shapes["input_word_ids"] = (len(lengths), words)
    # The shape is given: torch cannot infer it from the nested lists of a batch of empty sentences.
    inputs = {name: torch.tensor(padded.get(name, []), dtype=torch.long).view(shape) for name, shape in shapes.items()}
    return {name: tensor.to(device) for name, tensor in inputs.items()}, lengths
