"""bilm-tf/AllenNLP `options.json` -> `ElmoConfig`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from common.errors import ConversionError
from modeling_elmo import ElmoConfig

__all__ = ["config_from_options", "options_from_config", "read_options"]

# n_characters is 261 in options written for training (no padding id) and 262 in those written for use.
_CHAR_VOCAB_SIZES = (261, 262)


def read_options(path: str | Path) -> dict[str, Any]:
    """Parse an options.json file, with errors that name the file."""
    path = Path(path)
    try:
        options = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConversionError(f"{path}: no such options file") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise ConversionError(f"{path} is not a JSON options file: {error}") from None
    if not isinstance(options, dict):
        raise ConversionError(f"{path}: expected a JSON object with 'lstm' and 'char_cnn' sections")
    return options


def config_from_options(options: dict[str, Any], *, source: str = "options.json") -> ElmoConfig:
    """Build the `ElmoConfig` an options dict describes; `source` names it in error messages."""

    def require(section: dict[str, Any], key: str, where: str) -> Any:
        if key not in section:
            raise ConversionError(f"{source}: missing required option {where}.{key}")
        return section[key]

    lstm = require(options, "lstm", "<top level>")
    char_cnn = require(options, "char_cnn", "<top level>")
    embedding = require(char_cnn, "embedding", "char_cnn")
    n_characters = char_cnn.get("n_characters", 262)
    if n_characters not in _CHAR_VOCAB_SIZES:
        raise ConversionError(f"{source}: char_cnn.n_characters must be 261 or 262, got {n_characters}")
    training_options = {key: value for key, value in options.items() if key not in ("lstm", "char_cnn")}
    try:
        return ElmoConfig(
            char_vocab_size=262,
            max_characters_per_token=require(char_cnn, "max_characters_per_token", "char_cnn"),
            char_embedding_dim=require(embedding, "dim", "char_cnn.embedding"),
            char_cnn_filters=require(char_cnn, "filters", "char_cnn"),
            char_cnn_activation=char_cnn.get("activation", "relu"),
            num_highway_layers=char_cnn.get("n_highway", 0),
            projection_dim=require(lstm, "projection_dim", "lstm"),
            cell_size=require(lstm, "dim", "lstm"),
            num_hidden_layers=require(lstm, "n_layers", "lstm"),
            cell_clip=lstm.get("cell_clip"),
            proj_clip=lstm.get("proj_clip"),
            use_skip_connections=lstm.get("use_skip_connections", False),
            vocab_size=training_options.pop("n_tokens_vocab", None),
            dropout=training_options.pop("dropout", 0.1),
            training_options=training_options,
        )
    except (TypeError, ValueError) as error:
        raise ConversionError(f"{source}: {error}") from None


def options_from_config(config: ElmoConfig) -> dict[str, Any]:
    """The options.json that AllenNLP and bilm-tf read for `config` (the inverse of `config_from_options`)."""
    options: dict[str, Any] = {
        "lstm": {
            "dim": config.cell_size,
            "projection_dim": config.projection_dim,
            "n_layers": config.num_hidden_layers,
            "cell_clip": config.cell_clip,
            "proj_clip": config.proj_clip,
            "use_skip_connections": config.use_skip_connections,
        },
        "char_cnn": {
            "activation": config.char_cnn_activation,
            "embedding": {"dim": config.char_embedding_dim},
            "filters": config.char_cnn_filters,
            "n_highway": config.num_highway_layers,
            "n_characters": config.char_vocab_size,
            "max_characters_per_token": config.max_characters_per_token,
        },
        "dropout": config.dropout,
    }
    if config.vocab_size is not None:
        options["n_tokens_vocab"] = config.vocab_size
    options.update(config.training_options)
    return options
