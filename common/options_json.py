"""bilm-tf/AllenNLP `options.json` <-> `ElmoConfig`: one table (`OPTION_FIELDS`) read in both directions."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from elmo_transformers.common.errors import ConversionError
from elmo_transformers.common.regular_files import NotARegularFile, TooBig, read_regular
from modeling_elmo import ElmoConfig
from modeling_elmo.configuration_elmo import BILM_TF_CHAR_VOCAB_SIZE, check_field, shown_as_json

__all__ = [
    "MAX_OPTIONS_BYTES",
    "OPTION_FIELDS",
    "OptionField",
    "config_from_options",
    "field_values",
    "options_from_config",
    "read_options",
]

# n_characters is 261 in options written for training (no padding id) and 262 in those written for use.
_CHAR_VOCAB_SIZES = (BILM_TF_CHAR_VOCAB_SIZE - 1, BILM_TF_CHAR_VOCAB_SIZE)
_REQUIRED = object()  # an `OptionField` default: the entry must be given
# bilm-tf's options.json is under 1 KiB; a file over this is no options file (and /dev/zero is never read whole).
MAX_OPTIONS_BYTES = 1 << 20


def _char_vocab_size(n_characters: Any) -> int:
    """Either count (`_CHAR_VOCAB_SIZES`) describes the same 262-row embedding: id 0 of the model is the all-zero
    padding row. (What bilm-tf's files may say, not what the field may hold: ELMoForManyLangs' vocabularies differ.)"""
    if type(n_characters) is not int or n_characters not in _CHAR_VOCAB_SIZES:
        raise ValueError(f"must be one of {', '.join(map(str, _CHAR_VOCAB_SIZES))}, got {shown_as_json(n_characters)}")
    return BILM_TF_CHAR_VOCAB_SIZE


@dataclass(frozen=True)
class OptionField:
    """One options.json entry and the `ElmoConfig` field it is; what it may hold is the field's check
    (`configuration_elmo.check_field`), run when the entry is read."""

    path: tuple[str, ...]  # where in options.json, e.g. ("char_cnn", "embedding", "dim")
    field: str  # the ElmoConfig attribute
    default: Any = _REQUIRED  # the value when options.json leaves the entry out
    to_config: Callable[[Any], Any] | None = None  # how the entry becomes the field's value (raising ValueError)
    written_when_none: bool = True  # False: a field of None is left out of a written options.json

    @property
    def name(self) -> str:
        return ".".join(self.path)

    def field_value(self, options: dict[str, Any]) -> Any:
        """The field's value from `options`; ValueError("must be EXPECTED, got VALUE") when the entry cannot be it."""
        value = _entry(options, self.path, self.default)
        value = self.to_config(value) if self.to_config else value
        check_field(self.field, value)
        return value


# The one mapping between options.json and ElmoConfig, in the order options.json is written. The sections (lstm,
# char_cnn, char_cnn.embedding) are required; every other top-level entry is a training option, kept verbatim in
# `ElmoConfig.training_options`.
OPTION_FIELDS = (
    OptionField(("lstm", "dim"), "cell_size"),
    OptionField(("lstm", "projection_dim"), "projection_dim"),
    OptionField(("lstm", "n_layers"), "num_hidden_layers"),
    OptionField(("lstm", "cell_clip"), "cell_clip", default=None),
    OptionField(("lstm", "proj_clip"), "proj_clip", default=None),
    OptionField(("lstm", "use_skip_connections"), "use_skip_connections", default=False),
    OptionField(("char_cnn", "activation"), "char_cnn_activation", default="relu"),
    OptionField(("char_cnn", "embedding", "dim"), "char_embedding_dim"),
    OptionField(("char_cnn", "filters"), "char_cnn_filters"),
    OptionField(("char_cnn", "n_highway"), "num_highway_layers", default=0),
    OptionField(
        ("char_cnn", "n_characters"), "char_vocab_size", default=BILM_TF_CHAR_VOCAB_SIZE, to_config=_char_vocab_size
    ),
    OptionField(("char_cnn", "max_characters_per_token"), "max_characters_per_token"),
    OptionField(("dropout",), "dropout", default=0.1),
    OptionField(("n_tokens_vocab",), "vocab_size", default=None, written_when_none=False),
)
_TOP_LEVEL_ENTRIES = {field.path[0] for field in OPTION_FIELDS}


def read_options(path: str | Path) -> dict[str, Any]:
    """Parse an options.json file, with errors that name the file: missing, not a regular file (a FIFO, a device, a
    folder: refused without waiting on it), over `MAX_OPTIONS_BYTES`, unreadable, not JSON, not a JSON object."""
    path = Path(path)
    try:
        options = json.loads(read_regular(path, MAX_OPTIONS_BYTES).decode("utf-8"))
    except FileNotFoundError:
        raise ConversionError(f"{path}: no such options file") from None
    except (NotARegularFile, TooBig) as error:
        raise ConversionError(f"{error}: name the options.json file itself") from None
    except OSError as error:
        raise ConversionError(f"{path}: the options file cannot be read ({error.strerror or error})") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise ConversionError(f"{path} is not a JSON options file: {error}") from None
    if not isinstance(options, dict):
        raise ConversionError(f"{path}: expected a JSON object with 'lstm' and 'char_cnn' sections")
    return options


def config_from_options(options: dict[str, Any], *, source: str = "options.json") -> ElmoConfig:
    """Build the `ElmoConfig` an options dict describes (`OPTION_FIELDS`); `source` names it in error messages."""
    fields = field_values(options, OPTION_FIELDS, source=source)
    try:
        training_options = {key: value for key, value in options.items() if key not in _TOP_LEVEL_ENTRIES}
        return ElmoConfig(**fields, training_options=training_options)
    except (TypeError, ValueError) as error:
        raise ConversionError(f"{source}: {error}") from None


def field_values(options: dict[str, Any], fields: Sequence[OptionField], *, source: str) -> dict[str, Any]:
    """The `ElmoConfig` field values that the entries `fields` of the JSON object `options` give, each checked: a
    missing section or required entry, or a value the field cannot hold, is a `ConversionError` naming `source`,
    the entry, what it must be and what it is."""
    sections = dict.fromkeys(field.path[:depth] for field in fields for depth in range(1, len(field.path)))
    for section in (*sections, *(field.path for field in fields if field.default is _REQUIRED)):
        _require(options, section, source)
    values = {}
    for field in fields:
        try:
            values[field.field] = field.field_value(options)
        except ValueError as error:
            raise ConversionError(f"{source}: {field.name} {error}") from None
    return values


def _require(options: dict[str, Any], path: tuple[str, ...], source: str) -> None:
    section = options
    for depth, key in enumerate(path):
        if not isinstance(section, dict):
            where = ".".join(path[:depth])
            raise ConversionError(f"{source}: {where} must be an object, got {shown_as_json(section)}")
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
