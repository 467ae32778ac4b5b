"""Small random models in ELMoForManyLangs' folder format (config.json, the network config, char.dic,
word.dic, token_embedder.pkl, encoder.pkl), as their `biLM.py train` writes them."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import torch

CHARACTERS = list("abcdefghijklmnopqrstuvwxyz.,éïЖжизньдом中文字\u3000")  # U+3000 tests their reader's quirk
WORDS = ["the", "cat", "café", "naïve", "жизнь", "中文", "."]
FILTERS = [[1, 4], [2, 5], [3, 6]]

# Changes to the network config that its loader cannot use, with the problem the converter names.
BAD_NETWORK_CONFIGS = {
    "no encoder": (lambda network: network.pop("encoder"), "missing required option <top level>.encoder"),
    "no filters": (
        lambda network: network["token_embedder"].pop("filters"),
        "missing required option token_embedder.filters",
    ),
    "projection_dim abc": (
        lambda network: network["encoder"].update(projection_dim="abc"),
        'encoder.projection_dim must be a positive integer, got "abc"',
    ),
    "n_layers -1": (
        lambda network: network["encoder"].update(n_layers=-1),
        "encoder.n_layers must be a positive integer, got -1",
    ),
    "encoder a list": (lambda network: network.update(encoder=[1]), "encoder must be an object, got [1]"),
    "filter wider than a word": (
        lambda network: network["token_embedder"].update(filters=[[11, 4]]),
        "ElmoConfig: char_cnn_filters must be no wider than max_characters_per_token (10), got a filter of width 11",
    ),
}


def write_small_model(folder: Path, *, seed: int = 0, word_dim: int = 3, legacy_format: bool = False) -> Path:
    """A model with 10 characters per word, 3 filters, 2 highway layers, P=6, C=8 and 2 layers."""
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    network = {
        "encoder": {"name": "elmo", "projection_dim": 6, "cell_clip": 3, "proj_clip": 3, "dim": 8, "n_layers": 2},
        "token_embedder": {
            "name": "cnn",
            "activation": "relu",
            "filters": FILTERS,
            "n_highway": 2,
            "word_dim": word_dim,
            "char_dim": 4,
            "max_characters_per_token": 10,
        },
        "classifier": {"name": "sampled_softmax", "n_samples": 8192},
        "dropout": 0.1,
    }
    (folder / "cnn_small.json").write_text(json.dumps(network))
    (folder / "config.json").write_text(
        json.dumps({"config_path": "/their/absolute/path/cnn_small.json", "optimizer": "adam", "max_epoch": 10})
    )
    chars = {char: index for index, char in enumerate(CHARACTERS)}
    for special in ("<bos>", "<eos>", "<oov>", "<pad>", "<bow>", "<eow>"):
        chars[special] = len(chars)
    (folder / "char.dic").write_text("".join(f"{char}\t{index}\n" for char, index in chars.items()), encoding="utf-8")
    words = {special: index for index, special in enumerate(("<oov>", "<bos>", "<eos>", "<pad>"))}
    for word in WORDS:
        words[word] = len(words)
    (folder / "word.dic").write_text("".join(f"{word}\t{index}\n" for word, index in words.items()), encoding="utf-8")

    def uniform(*shape: int, scale: float = 0.5) -> torch.Tensor:
        return torch.tensor(rng.uniform(-scale, scale, size=shape), dtype=torch.float32)

    filters = sum(count for _, count in FILTERS)
    token_embedder = {}
    if word_dim:
        token_embedder["word_emb_layer.embedding.weight"] = uniform(len(words), word_dim)
    token_embedder["char_emb_layer.embedding.weight"] = uniform(len(chars), 4)  # <pad>'s row is not zero
    for index, (width, count) in enumerate(FILTERS):
        token_embedder[f"convolutions.{index}.weight"] = uniform(count, 4, width)
        token_embedder[f"convolutions.{index}.bias"] = uniform(count)
    for index in range(2):
        token_embedder[f"highways._layers.{index}.weight"] = uniform(2 * filters, filters)
        token_embedder[f"highways._layers.{index}.bias"] = uniform(2 * filters)
    token_embedder["projection.weight"] = uniform(6, word_dim + filters)
    token_embedder["projection.bias"] = uniform(6)
    encoder = {}
    for layer in range(2):
        for direction in ("forward", "backward"):
            prefix = f"{direction}_layer_{layer}"
            encoder[f"{prefix}.input_linearity.weight"] = uniform(32, 6)
            encoder[f"{prefix}.state_linearity.weight"] = uniform(32, 6)
            encoder[f"{prefix}.state_linearity.bias"] = uniform(32)
            encoder[f"{prefix}.state_projection.weight"] = uniform(6, 8, scale=2.0)  # large: exercises proj_clip
    options = {"_use_new_zipfile_serialization": False} if legacy_format else {}
    torch.save(token_embedder, folder / "token_embedder.pkl", **options)
    torch.save(encoder, folder / "encoder.pkl", **options)
    return folder
