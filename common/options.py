"""bilm-tf/AllenNLP `options.json` <-> `ElmoConfig`: one table (`OPTION_FIELDS`) read in both directions."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from elmo_transformers.common.errors import ConversionError
from modeling_elmo import ElmoConfig
from modeling_elmo.configuration_elmo import BILM_TF_CHAR_VOCAB_SIZE, CHAR_CNN_ACTIVATIONS

__all__ = ["OPTION_FIELDS", "OptionField", "ValueRule", "config_from_options", "options_from_config", "read_options"]

# n_characters is 261 in options written for training (no padding id) and 262 in those written for use.
_CHAR_VOCAB_SIZES = (BILM_TF_CHAR_VOCAB_SIZE - 1, BILM_TF_CHAR_VOCAB_SIZE)
_REQUIRED = object()  # an `OptionField` default: the entry must be given


def _char_vocab_size(n_characters: int) -> int:
    """Either count (`_CHAR_VOCAB_SIZES`) describes the same 262-row embedding: id 0 of the model is the all-zero
    padding row."""
    return BILM_TF_CHAR_VOCAB_SIZE


def _is_integer(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)  # JSON true is not a count


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


@dataclass(frozen=True)
class ValueRule:
    """What an options.json entry may hold, checked when it is read: without it a string or a fraction reaches
    torch (a TypeError from `torch.empty`) or the filter list (\"not enough values to unpack\")."""

    description: str  # completes "lstm.dim must be ...", e.g. "a positive integer"
    accepts: Callable[[Any], bool]


def _one_of(*values: Any) -> ValueRule:
    return ValueRule(
        "one of " + ", ".join(json.dumps(value) for value in values),
        lambda value: any(type(value) is type(allowed) and value == allowed for allowed in values),
    )


_POSITIVE_INTEGER = ValueRule("a positive integer", lambda value: _is_integer(value) and value > 0)
_COUNT = ValueRule("an integer of 0 or more", lambda value: _is_integer(value) and value >= 0)
_CLIP = ValueRule("a positive number or null", lambda value: value is None or (_is_number(value) and value > 0))
_BOOLEAN = ValueRule("true or false", lambda value: isinstance(value, bool))
_PROBABILITY = ValueRule("a number from 0 to less than 1", lambda value: _is_number(value) and 0 <= value < 1)
_FILTERS = ValueRule(
    "a non-empty list of [width, count] pairs of positive integers",
    lambda value: (
        isinstance(value, list)
        and len(value) > 0
        and all(
            isinstance(pair, list) and len(pair) == 2 and all(map(_POSITIVE_INTEGER.accepts, pair)) for pair in value
        )
    ),
)
_VOCABULARY_SIZE = ValueRule(
    "a positive integer or null", lambda value: value is None or _POSITIVE_INTEGER.accepts(value)
)


@dataclass(frozen=True)
class OptionField:
    """One options.json entry and the `ElmoConfig` field it is."""

    path: tuple[str, ...]  # where in options.json, e.g. ("char_cnn", "embedding", "dim")
    field: str  # the ElmoConfig attribute
    rule: ValueRule  # what the entry may hold
    default: Any = _REQUIRED  # the value when options.json leaves the entry out
    to_config: Callable[[Any], Any] | None = None  # how the entry becomes the field's value, where it is not as-is
    written_when_none: bool = True  # False: a field of None is left out of a written options.json

    @property
    def name(self) -> str:
        return ".".join(self.path)


# The one mapping between options.json and ElmoConfig, in the order options.json is written. The sections (lstm,
# char_cnn, char_cnn.embedding) are required; every other top-level entry is a training option, kept verbatim in
# `ElmoConfig.training_options`.
OPTION_FIELDS = (
    OptionField(("lstm", "dim"), "cell_size", _POSITIVE_INTEGER),
    OptionField(("lstm", "projection_dim"), "projection_dim", _POSITIVE_INTEGER),
    OptionField(("lstm", "n_layers"), "num_hidden_layers", _POSITIVE_INTEGER),
    OptionField(("lstm", "cell_clip"), "cell_clip", _CLIP, default=None),
    OptionField(("lstm", "proj_clip"), "proj_clip", _CLIP, default=None),
    OptionField(("lstm", "use_skip_connections"), "use_skip_connections", _BOOLEAN, default=False),
    OptionField(("char_cnn", "activation"), "char_cnn_activation", _one_of(*CHAR_CNN_ACTIVATIONS), default="relu"),
    OptionField(("char_cnn", "embedding", "dim"), "char_embedding_dim", _POSITIVE_INTEGER),
    OptionField(("char_cnn", "filters"), "char_cnn_filters", _FILTERS),
    OptionField(("char_cnn", "n_highway"), "num_highway_layers", _COUNT, default=0),
    OptionField(
        ("char_cnn", "n_characters"),
        "char_vocab_size",
        _one_of(*_CHAR_VOCAB_SIZES),
        default=BILM_TF_CHAR_VOCAB_SIZE,
        to_config=_char_vocab_size,
    ),
    OptionField(("char_cnn", "max_characters_per_token"), "max_characters_per_token", _POSITIVE_INTEGER),
    OptionField(("dropout",), "dropout", _PROBABILITY, default=0.1),
    OptionField(("n_tokens_vocab",), "vocab_size", _VOCABULARY_SIZE, default=None, written_when_none=False),
)
_SECTIONS = tuple(dict.fromkeys(field.path[:depth] for field in OPTION_FIELDS for depth in range(1, len(field.path))))
_TOP_LEVEL_ENTRIES = {field.path[0] for field in OPTION_FIELDS}


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
    """Build the `ElmoConfig` an options dict describes (`OPTION_FIELDS`); `source` names it in error messages."""
    for section in (*_SECTIONS, *(field.path for field in OPTION_FIELDS if field.default is _REQUIRED)):
        _require(options, section, source)
    fields = {}
    for field in OPTION_FIELDS:
        value = _entry(options, field.path, field.default)
        if not field.rule.accepts(value):
            raise ConversionError(
                f"{source}: {field.name} must be {field.rule.description}, got {json.dumps(value):.80}"
            )
        fields[field.field] = field.to_config(value) if field.to_config else value
    try:
        training_options = {key: value for key, value in options.items() if key not in _TOP_LEVEL_ENTRIES}
        return ElmoConfig(**fields, training_options=training_options)
    except (TypeError, ValueError) as error:
        raise ConversionError(f"{source}: {error}") from None


def _require(options: dict[str, Any], path: tuple[str, ...], source: str) -> None:
    section = options
    for depth, key in enumerate(path):
        if not isinstance(section, dict):
            where = ".".join(path[:depth])
            raise ConversionError(f"{source}: {where} must be an object, got {json.dumps(section)}")
        if key not in section:
            where = ".".join(path[:depth]) or "<top level>"
            raise ConversionError(f"{source}: missing required option {where}.{key}")
        section = section[key]


def _entry(options: dict[str, Any], path: tuple[str, ...], default: Any) -> Any:
    *sections, key = path
    for name in sections:
        options = options[name]
    return options.get(key, default)


def options_from_config(config: ElmoConfig) -> dict[str, Any]:
    """The options.json that AllenNLP and bilm-tf read for `config` (the inverse of `config_from_options`)."""
    options: dict[str, Any] = {}
    for field in OPTION_FIELDS:
        value = getattr(config, field.field)
        if value is None and not field.written_when_none:
            continue
        *sections, key = field.path
        section = options
        for name in sections:
            section = section.setdefault(name, {})
        section[key] = value
    options.update(config.training_options)
    return options
