"""bilm-tf training checkpoint -> `ElmoForBidirectionalLM` folder (`elmo-convert bilm-tf-checkpoint`).

A training checkpoint is the only place the ELMo softmax survives: bilm-tf's `dump_weights`, and so every
released weights.hdf5, leaves it out. bilm-tf's `train` saves every variable: the model under `lm/`, one
optimizer slot per trainable variable (`<variable>/Adagrad`), and `global_step` and `train_perplexity`
outside `lm/`. Only the model is converted.

`dump_weights` wrote each biLM variable as an hdf5 dataset whose name it derived from the variable's;
`tf_variable_name` maps the datasets of the hdf5 mapping (`allennlp_hdf5.weight_mappings`) back to their
variables, so both routes build the same tensors through the same `WeightMapping`s.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np
import torch

from elmo_transformers.common.errors import ConversionError
from elmo_transformers.common.options_json import config_from_options, read_options
from elmo_transformers.common.vocabulary_file import read_vocabulary
from modeling_elmo import ElmoConfig, ElmoForBidirectionalLM
from modeling_elmo.text_elmo import BILM_TF_SPECIAL_WORDS, VOCABULARY_FILE

from .allennlp_hdf5 import weight_mappings
from .convert_options import BilmTfCheckpointOptions, ModelFolderOptions
from .converted_model_card import SourceDescription, model_page_source
from .saving import conversion_summary, output_options, save_converted_folder
from .tf_checkpoint import TfCheckpoint
from .weight_mapping import check_finite

__all__ = [
    "checkpoint_files",
    "convert_bilm_tf_checkpoint",
    "load_bilm_tf_checkpoint",
    "read_bilm_tf_vocabulary",
    "run",
    "run_conversion",
    "tf_variable_name",
]

SOFTMAX_WEIGHT, SOFTMAX_BIAS = "lm/softmax/W", "lm/softmax/b"
_LSTM_DATASET = re.compile(
    r"RNN_(?P<direction>\d+)/RNN/MultiRNNCell/Cell(?P<layer>\d+)/LSTMCell/(?P<weight>W_0|B|W_P_0)"
)
# LSTMCell(num_proj=P) names its gate kernel `kernel`, its bias `bias` and its projection `projection/kernel`.
_LSTM_VARIABLES = {"W_0": "kernel", "B": "bias", "W_P_0": "projection/kernel"}


def tf_variable_name(dataset: str, num_layers: int) -> str:
    """The bilm-tf variable that `dump_weights` wrote as the hdf5 dataset `dataset` (the inverse of its
    `_get_outname`): `CNN/W_cnn_0` <- `lm/CNN/W_cnn_0`, `RNN_1/RNN/MultiRNNCell/Cell0/LSTMCell/W_0` <-
    `lm/RNN_1/rnn/multi_rnn_cell/cell_0/lstm_cell/kernel`.

    bilm-tf wraps the LSTM layers in a `MultiRNNCell` only when there are several, so the variables of a
    one-layer model lie directly under `rnn/lstm_cell`.
    """
    match = _LSTM_DATASET.fullmatch(dataset)
    if match is None:
        return f"lm/{dataset}"
    cell = "lstm_cell" if num_layers == 1 else f"multi_rnn_cell/cell_{match['layer']}/lstm_cell"
    return f"lm/RNN_{match['direction']}/rnn/{cell}/{_LSTM_VARIABLES[match['weight']]}"


def _expected_shapes(config: ElmoConfig) -> dict[str, tuple[int, ...]]:
    """Every model variable the options imply, with its shape, in the order of the hdf5 mapping."""
    shapes = {
        tf_variable_name(mapping.dataset, config.num_hidden_layers): mapping.shape
        for mapping in weight_mappings(config)
    }
    shapes[SOFTMAX_WEIGHT] = (config.vocab_size, config.projection_dim)
    shapes[SOFTMAX_BIAS] = (config.vocab_size,)
    return shapes


def _and_n_more(names: list[str]) -> str:
    return f" (and {len(names) - 1} more)" if len(names) > 1 else ""


def _check_variables(checkpoint: TfCheckpoint, expected: dict[str, tuple[int, ...]], config: ElmoConfig) -> None:
    """Each variable the options imply is there, float32, of the implied shape, and nothing under `lm/` is
    left unexplained (optimizer slots, `<variable>/<slot>`, are expected and ignored)."""
    where, entries = checkpoint.index_path, checkpoint.entries
    if "lm/embedding" in entries:
        raise ConversionError(
            f"{where}: a word-input bilm-tf model (lm/embedding, no character CNN): only character models convert"
        )
    missing = [name for name in expected if name not in entries]
    if missing:
        raise ConversionError(
            f"{where}: tensor {missing[0]} is missing{_and_n_more(missing)}; do the options match this checkpoint?"
        )
    unexplained = [name for name in entries if name.startswith("lm/") and name not in expected]
    # Slots (`<variable>/Adagrad`, or another optimizer's) of any variable are not counted as variables.
    unexplained = [name for name in unexplained if not any(name.startswith(f"{other}/") for other in entries)]
    if unexplained:
        raise ConversionError(
            f"{where}: tensor {unexplained[0]} is not described by the options{_and_n_more(unexplained)}; the options"
            f" give {config.num_hidden_layers} LSTM layers, {config.num_highway_layers} highway layers and"
            f" {len(config.char_cnn_filters)} CNN filters"
        )
    for name, shape in expected.items():
        entry = entries[name]
        if entry.shape != shape:
            raise ConversionError(f"{where}: tensor {name} has shape {entry.shape}, the options imply {shape}")
        if entry.dtype != "float32":
            raise ConversionError(f"{where}: tensor {name} has dtype {entry.dtype}, expected float32")


def _softmax_size(checkpoint: TfCheckpoint) -> int:
    """The number of softmax rows (words) the checkpoint holds."""
    entry = checkpoint.entries.get(SOFTMAX_WEIGHT)
    if entry is None:
        raise ConversionError(
            f"{checkpoint.index_path}: tensor {SOFTMAX_WEIGHT} is missing: not a bilm-tf training checkpoint"
            " (its tensors are " + ", ".join(list(checkpoint.entries)[:3]) + ", ...)"
        )
    return entry.shape[0] if entry.shape else 0


def read_bilm_tf_vocabulary(path: str | Path, vocab_size: int) -> list[str]:
    """The words of a bilm-tf vocabulary file, one per softmax row: `vocab_size` lines, the first three
    `<S>`, `</S>`, `<UNK>`."""
    words = read_vocabulary(path, error=ConversionError)
    if tuple(words[: len(BILM_TF_SPECIAL_WORDS)]) != BILM_TF_SPECIAL_WORDS:
        raise ConversionError(
            f"{path}: a bilm-tf vocabulary starts with the lines {', '.join(BILM_TF_SPECIAL_WORDS)} (ids 0, 1, 2);"
            f" this one starts with {', '.join(words[: len(BILM_TF_SPECIAL_WORDS)])}"
        )
    if len(words) != vocab_size:
        raise ConversionError(
            f"{path} has {len(words):,} words, but the softmax ({SOFTMAX_WEIGHT}) has {vocab_size:,} rows: the"
            " vocabulary must be the one the model was trained with, one line per softmax row"
        )
    return words


def load_bilm_tf_checkpoint(
    checkpoint_path: str | Path,
    options: dict[str, Any],
    vocabulary_file: str | Path,
    *,
    options_source: str = "options.json",
) -> ElmoForBidirectionalLM:
    """An `ElmoForBidirectionalLM` holding the biLM and softmax of a bilm-tf checkpoint described by `options`.

    Raises `ConversionError` naming the file and tensor when a variable is missing, unexplained or of
    another shape than the options imply, and when the vocabulary does not fit the softmax.
    """
    config = config_from_options(options, source=options_source)
    checkpoint = TfCheckpoint(checkpoint_path)
    # The options' n_tokens_vocab, where given, is checked like any other shape; without it the softmax decides.
    config.vocab_size = config.vocab_size or _softmax_size(checkpoint)
    expected = _expected_shapes(config)
    _check_variables(checkpoint, expected, config)
    read_bilm_tf_vocabulary(vocabulary_file, config.vocab_size)

    def read(name: str) -> np.ndarray:
        array = checkpoint.read(name)
        check_finite(array, f"{checkpoint.index_path}: tensor {name}")
        return array

    state_dict = {}
    for mapping in weight_mappings(config):
        array = read(tf_variable_name(mapping.dataset, config.num_hidden_layers))
        for name, parameter in zip(mapping.parameters, mapping.to_model(array), strict=True):
            state_dict[f"elmo.{name}"] = torch.from_numpy(np.ascontiguousarray(parameter))
    state_dict["softmax.weight"] = torch.from_numpy(read(SOFTMAX_WEIGHT))
    state_dict["softmax.bias"] = torch.from_numpy(read(SOFTMAX_BIAS))

    model = ElmoForBidirectionalLM(config)
    result = model.load_state_dict(state_dict, strict=False)
    if result.missing_keys or result.unexpected_keys:  # a gap in the mapping itself, not in the user's input
        raise AssertionError(f"mapping incomplete: missing {result.missing_keys}, unexpected {result.unexpected_keys}")
    return model.eval()


def checkpoint_files(checkpoint_path: str | Path) -> tuple[Path, ...]:
    """The files of a checkpoint: its index and data shards (named with their checksums on the model page)."""
    checkpoint = TfCheckpoint(checkpoint_path)
    return (checkpoint.index_path, *(checkpoint.data_path(shard) for shard in range(checkpoint.num_shards)))


def convert_bilm_tf_checkpoint(
    checkpoint_path: str | Path,
    options: dict[str, Any],
    vocabulary_file: str | Path,
    output: str | Path,
    *,
    source: SourceDescription,
    options_source: str = "options.json",
    repo_id: str | None = None,
    overwrite: bool = False,
    space_check: bool = True,
) -> tuple[ElmoForBidirectionalLM, float]:
    """Convert and save model, tokenizer, code, the vocabulary (as `vocab.txt`) and model page to `output`
    (atomically).

    Returns the saved model, reloaded, and its parity: the largest difference at any biLM layer between the
    saved float32 model and a float64 computation with the checkpoint's weights. The folder loads as
    `ElmoForBidirectionalLM` (biLM and softmax, to go on training) and with `AutoModel` (the biLM alone).
    `repo_id` (default: the folder name) is what the model page's snippets load.
    """
    return save_converted_folder(
        lambda: load_bilm_tf_checkpoint(checkpoint_path, options, vocabulary_file, options_source=options_source),
        output,
        source=source,
        repo_id=repo_id,
        overwrite=overwrite,
        space_check=space_check,
        copies={VOCABULARY_FILE: Path(vocabulary_file)},
    )


def run_conversion(
    options: ModelFolderOptions,
    checkpoint_path: str | Path,
    options_json: dict[str, Any],
    options_source: str,
    vocabulary_file: str | Path,
    source: SourceDescription,
    named: Path,
) -> str:
    """Convert the checkpoint to the arguments' output (as `convert_bilm_tf_checkpoint`); the summary line names
    `named`."""
    model, parity = convert_bilm_tf_checkpoint(
        checkpoint_path,
        options_json,
        vocabulary_file,
        options.output,
        source=source,
        options_source=options_source,
        **output_options(options),
    )
    summary = conversion_summary(named, options.output, model.elmo, parity)
    return f"{summary}; with its softmax of {model.config.vocab_size:,} words and vocab.txt"


def run(options: BilmTfCheckpointOptions) -> str:
    files = checkpoint_files(options.checkpoint)
    source = model_page_source(
        options,
        f"the bilm-tf training checkpoint {files[0].with_suffix('').name}",
        files,
        "the corpus its checkpoint was trained on (not recorded in the checkpoint)",
        options_file=options.options,
    )
    options_json = read_options(options.options)
    return run_conversion(
        options, options.checkpoint, options_json, options.options, options.vocab, source, Path(options.checkpoint)
    )
