"""The biLM that AllenNLP 0.9's `options_file` and `weight_file` name, as an `ElmoModel` in the form the compat
modules compute with.

`options_file` and `weight_file` are read as AllenNLP read them (a local path, or an http(s) URL fetched once:
`cached_files.cached_path`). Besides, `options_file` may name a model folder this package wrote, or a Hub id, with
`weight_file` None (or left at AllenNLP's default URL): the folder holds its weights.

The model's LSTM gate biases hold the forget bias (1.0, which bilm-tf adds at run time) as AllenNLP's
`state_linearity.bias` holds it, and its config adds none: the same sums in float32 (`fl(B + 1)`), so that a state
dict in AllenNLP's names converts to the model's and back without a rounding (`state_dict_names`).
"""

from __future__ import annotations

import os
from pathlib import Path

import torch

from elmo_transformers.common.errors import ElmoError
from elmo_transformers.common.model_folder import is_repo_id
from elmo_transformers.common.options_json import read_options
from elmo_transformers.conversion.allennlp import load_allennlp_model, load_converted_model
from modeling_elmo import ElmoConfig, ElmoModel

from .cached_files import cached_path
from .checks import ConfigurationError

__all__ = ["DEFAULT_OPTIONS_FILE", "DEFAULT_WEIGHT_FILE", "load_bilm"]

_RELEASE = "https://allennlp.s3.amazonaws.com/models/elmo/2x4096_512_2048cnn_2xhighway/"
DEFAULT_OPTIONS_FILE = _RELEASE + "elmo_2x4096_512_2048cnn_2xhighway_options.json"
DEFAULT_WEIGHT_FILE = _RELEASE + "elmo_2x4096_512_2048cnn_2xhighway_weights.hdf5"


def load_bilm(options_file: str | os.PathLike | None, weight_file: str | os.PathLike | None) -> ElmoModel:
    """The biLM of `options_file` + `weight_file` (or of the model folder or Hub id `options_file`), in eval mode,
    its forget bias held in the gate biases. Raises `ConfigurationError` in one line for any bad input."""
    if options_file is None:
        raise ConfigurationError("options_file is None: name an ELMo options file (or pass module= to Elmo)")
    try:
        if _names_a_model_folder(options_file, weight_file):
            model = _model_folder(os.fspath(options_file))
        else:
            if weight_file is None:
                raise ConfigurationError(f"weight_file is None: name the ELMo weights file of {options_file}")
            model = _original_files(options_file, weight_file)
    except ElmoError as error:
        raise ConfigurationError(str(error)) from None
    _require_bilm_tf_characters(model.config, options_file)
    _hold_forget_bias_in_gate_biases(model)
    return model.eval()


def _names_a_model_folder(options_file: str | os.PathLike, weight_file: str | os.PathLike | None) -> bool:
    text = os.fspath(options_file)
    if os.path.isdir(text):
        named = True
    else:
        named = not os.path.exists(text) and "://" not in text and is_repo_id(text)
    if named and weight_file not in (None, DEFAULT_WEIGHT_FILE):
        raise ConfigurationError(f"{text} is a model folder, which holds its weights: pass weight_file=None")
    return named


def _model_folder(model: str) -> ElmoModel:
    if os.path.isdir(model):
        return load_converted_model(model)
    try:
        return ElmoModel.from_pretrained(model).eval()
    except (OSError, ValueError) as error:
        first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise ConfigurationError(f"{model}: neither a local file nor a model the Hub gives ({first})") from None


def _original_files(options_file: str | os.PathLike, weight_file: str | os.PathLike) -> ElmoModel:
    options_path, weights_path = cached_path(options_file), cached_path(weight_file)
    options = read_options(options_path)
    if not isinstance(options.get("lstm"), dict) or not options["lstm"].get("use_skip_connections"):
        # AllenNLP 0.9's own check (its _ElmoBiLm)
        raise ConfigurationError(f"{options_file}: We only support pretrained biLMs with residual connections")
    return load_allennlp_model(options, weights_path, source=str(options_file), progress=False)


def _require_bilm_tf_characters(config: ElmoConfig, source: str | os.PathLike) -> None:
    """AllenNLP's character ids (`batch_to_ids`) are UTF-8 bytes framed by bilm-tf's special ids; a model with
    other characters or a word embedding (ELMoForManyLangs') reads something else."""
    default = ElmoConfig()
    special = ("char_vocab_size", "bow_char_id", "eow_char_id", "bos_char_id", "eos_char_id", "char_pad_id")
    if config.word_embedding_dim or any(getattr(config, name) != getattr(default, name) for name in special):
        raise ConfigurationError(
            f"{Path(source)}: the model reads other characters than AllenNLP's batch_to_ids gives (UTF-8 bytes), or"
            " words: use its own tokenizer (AutoTokenizer) with ElmoModel instead"
        )


@torch.no_grad()
def _hold_forget_bias_in_gate_biases(model: ElmoModel) -> None:
    for stack in (model.forward_lstm, model.backward_lstm):
        for layer in stack.layers:
            cells = layer.cell_size
            layer.input_projection.bias[2 * cells : 3 * cells] += layer.forget_bias
            layer.forget_bias = 0.0
    model.config.lstm_forget_bias = 0.0
