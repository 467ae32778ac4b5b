"""Whether a path is a usable ELMo model folder, and if not, one line that names the problem.

The converters, `elmo-embed` and pretraining all read model folders written by this package; they share this
check so the same folder gets the same verdict, and each raises it as its own error type.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from huggingface_hub.utils import HFValidationError, validate_repo_id
from safetensors import SafetensorError, safe_open
from transformers.tokenization_utils_base import TOKENIZER_CONFIG_FILE
from transformers.utils import CONFIG_NAME

from elmo_transformers.common.checksums import CHECKSUM_WAY_ON, folder_checksum_problem
from elmo_transformers.common.disk_space import format_bytes
from elmo_transformers.common.errors import first_line
from elmo_transformers.common.regular_files import NotARegularFile, TooBig, read_regular, regular_file_problem
from modeling_elmo import ElmoConfig
from modeling_elmo.configuration_elmo import shown_as_json
from modeling_elmo.modeling_elmo import non_finite_entry

__all__ = [
    "MAX_SETTINGS_BYTES",
    "damaged_file_problem",
    "damaged_weights_problem",
    "is_repo_id",
    "model_folder_problem",
    "model_type_problem",
    "non_finite_weight_problem",
    "require_model_folder",
]

# A config.json or tokenizer_config.json is a few KiB: one over this is no settings file, and is not read.
MAX_SETTINGS_BYTES = 1 << 20


def is_repo_id(model: str) -> bool:
    """Whether `model` can name a Hub repository ("name" or "namespace/name"), rather than only a local path."""
    try:
        validate_repo_id(model)
    except HFValidationError:
        return False
    return True


def model_type_problem(model: str | Path, model_type: object) -> str | None:
    """The problem with a config's `model_type`, or None when it is ELMo's."""
    if model_type != ElmoConfig.model_type:
        return f"{model}: model_type is {model_type!r}, expected {ElmoConfig.model_type!r}"
    return None


def model_folder_problem(model: str | Path, *, hub: bool = False) -> str | None:
    """One line naming why `model` is not a usable ELMo model folder, or None when it is.

    The problems, in the order they are looked for: no such folder; no config.json; a config.json that is not a
    JSON object; a model_type other than ELMo's; a config field of the wrong type or out of range (`ElmoConfig`'s
    check, named with config.json); a safetensors weights file that does not open (truncated or damaged); a weight
    that holds a NaN or an infinity, which would make every output NaN in silence (a pass over the weights: 0.3 s
    for the 94M weights of the original ELMo's shape on 2 idle cores, see `non_finite_weight_problem`); a file that
    differs from the folder's SHA256SUMS (`damaged_file_problem`). With
    `hub`, a path that does not exist but can name a Hub repository is not judged here: the caller loads it and
    checks what comes back (`model_type_problem`).
    """
    folder = Path(model)
    config_file = folder / CONFIG_NAME
    try:
        if not folder.exists():
            return None if hub and is_repo_id(str(model)) else f"{model}: no such model folder"
        if not config_file.exists():  # (a FIFO or a device there is named by the read below)
            return f"{model}: not a model folder (no {CONFIG_NAME})"
    except OSError as error:  # (a name too long; a folder this user may not search)
        return f"{model}: cannot be looked at as a model folder: {error.strerror}"
    try:
        config = json.loads(read_regular(config_file, MAX_SETTINGS_BYTES).decode("utf-8"))
        model_type = config.get("model_type")
    except OSError as error:  # (a config.json is a few KiB: a larger one is no config)
        return str(error)
    except (json.JSONDecodeError, UnicodeDecodeError, AttributeError) as error:
        return f"{config_file}: not a JSON object: {error}"
    return (
        model_type_problem(model, model_type)
        or _config_problem(config_file, config)
        or _unreadable_weights_problem(folder)
        or non_finite_weight_problem(folder)
        or damaged_file_problem(folder)
    )


def damaged_file_problem(folder: Path) -> str | None:
    """The line refusing a folder whose files differ from its SHA256SUMS (a flipped byte that loads and computes
    finite, wrong vectors), or whose record leaves out its weights (every record written lists them), with
    the way on; None when they match or nothing is recorded. Looked for last, so that a
    problem the files show themselves (config.json not JSON, truncated weights) is named as such."""
    weights = [path.name for path in sorted(folder.glob("*.safetensors"))]
    problem = folder_checksum_problem(folder, required=weights)
    return f"{problem}; {CHECKSUM_WAY_ON}" if problem else None


def _config_problem(config_file: Path, config: dict) -> str | None:
    """`ElmoConfig`'s refusal of a config.json's fields, named with the file (the load itself would raise it from
    deep inside from_pretrained), then a config that cannot be built here or that its tokenizer contradicts."""
    try:
        elmo_config = ElmoConfig.from_dict(config)
    except ValueError as error:
        return f"{config_file}: {error}"
    return _too_big_problem(config_file, elmo_config) or _tokenizer_problem(config_file, elmo_config)


def _tokenizer_problem(config_file: Path, config: ElmoConfig) -> str | None:
    """The character framing that tokenizer_config.json and config.json must agree on: the model's convolutions
    read words of `max_characters_per_token` characters and its embedding has rows for the special characters."""
    tokenizer_file = config_file.with_name(TOKENIZER_CONFIG_FILE)
    try:
        tokenizer = json.loads(read_regular(tokenizer_file, MAX_SETTINGS_BYTES).decode("utf-8"))
    except (NotARegularFile, TooBig) as error:  # (the tokenizer's load would wait on a FIFO, or read /dev/zero)
        return str(error)
    except (OSError, ValueError):
        return None  # no tokenizer here (a model alone) or none readable: the tokenizer's load says why
    special_char_ids = tokenizer.get("special_char_ids")
    if isinstance(special_char_ids, dict):  # (a tokenizer may have ids of its own besides: ELMoForManyLangs' oov)
        special_char_ids = {name: special_char_ids.get(name) for name in config.special_char_ids}
    for name, expected, made in (
        ("max_characters_per_token", config.max_characters_per_token, tokenizer.get("max_characters_per_token")),
        ("special_char_ids", config.special_char_ids, special_char_ids),
    ):
        if made is not None and made != expected:
            return (
                f"{config_file}: {name} is {shown_as_json(expected)} but {tokenizer_file.name} makes "
                f"{shown_as_json(made)}: the model and its tokenizer must frame words alike"
            )
    return None


def _too_big_problem(config_file: Path, config: ElmoConfig) -> str | None:
    """A config whose weights alone would not fit in this machine's memory, named by the fields of its largest part
    (rather than an allocation error from deep inside from_pretrained)."""
    parts = weight_counts(config)
    fields, count = max(parts.items(), key=lambda part: part[1])
    float32_bytes = 4
    needed, memory = sum(parts.values()) * float32_bytes, physical_memory()
    if needed <= memory:
        return None
    shown = ", ".join(f"{name} {shown_as_json(getattr(config, name))}" for name in fields)
    return (
        f"{config_file}: {shown} make {count:,} weights, {format_bytes(needed)} in all, more than this machine's "
        f"{format_bytes(memory)} of memory: the config cannot be built here"
    )


def weight_counts(config: ElmoConfig) -> dict[tuple[str, ...], int]:
    """How many weights each part of the biLM and its softmax holds, keyed by the config fields that size it."""
    C, P, L = config.cell_size, config.projection_dim, config.num_hidden_layers
    F = config.num_filters
    E = config.char_embedding_dim
    convolutions = sum(width * E * count + count for width, count in config.char_cnn_filters)
    return {
        ("char_vocab_size", "char_embedding_dim"): config.char_vocab_size * E,
        ("word_vocab_size", "word_embedding_dim"): config.word_vocab_size * config.word_embedding_dim,
        # the convolutions, the highway layers (carry and transform) and the projection to P
        ("char_cnn_filters", "num_highway_layers"): convolutions
        + config.num_highway_layers * 2 * (F * F + F)
        + (F + config.word_embedding_dim) * P
        + P,
        # two directions of L layers: the input and state products (4C x P each, 4C biases) and the projection
        ("cell_size", "projection_dim", "num_hidden_layers"): 2 * L * (8 * C * P + 4 * C + C * P),
        ("vocab_size", "projection_dim"): (config.vocab_size or 0) * (P + 1),
    }


def physical_memory() -> int:
    """This machine's memory in bytes."""
    return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")


def require_model_folder(model: str | Path, error_type: type[Exception], *, hub: bool = False) -> None:
    """Raise `error_type` with `model_folder_problem`'s line when `model` is not a usable ELMo model folder."""
    problem = model_folder_problem(model, hub=hub)
    if problem:
        raise error_type(problem)


def _unreadable_weights_problem(folder: Path) -> str | None:
    """The first safetensors file of `folder` whose header does not open: an interrupted download or copy."""
    for path in sorted(folder.glob("*.safetensors")):
        problem = regular_file_problem(path, "weights file")
        if problem:
            return problem
        try:
            with safe_open(path, framework="pt"):
                pass
        except SafetensorError as error:
            return damaged_weights_problem(path, error)
    return None


def non_finite_weight_problem(folder: Path) -> str | None:
    """The first weight in `folder`'s safetensors files that holds a NaN or an infinity, with its index."""
    for path in sorted(folder.glob("*.safetensors")):
        with safe_open(path, framework="pt") as weights:
            for name in weights.keys():
                found = non_finite_entry(weights.get_tensor(name))
                if found is not None:
                    index, value = found
                    return (
                        f"{path}: {name} holds a non-finite value ({value}) at index {index}: the weights are damaged"
                        " (every output would be NaN); copy or convert them again"
                    )
    return None


def damaged_weights_problem(path: str | Path, error: Exception) -> str:
    """The line for a weights file that safetensors cannot read."""
    return (
        f"{path}: the weights cannot be read ({first_line(error)}): the file is damaged or incomplete;"
        " copy or convert it again"
    )
