"""The biLM a training run starts from: a new one from bilm-tf options, or a saved folder whose softmax is
created or re-mapped to the run's vocabulary."""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from pathlib import Path

import torch

from elmo_transformers.common.errors import DataFileError
from elmo_transformers.common.model_folder import require_model_folder
from elmo_transformers.common.options_json import config_from_options, read_options
from modeling_elmo import ElmoConfig, ElmoForBidirectionalLM, ElmoTokenizer
from modeling_elmo.text_elmo import UNK_WORD, VOCABULARY_FILE

from .lm_vocabulary import LmVocabulary

__all__ = ["StartingModel", "load_starting_model", "transfer_softmax"]

logger = logging.getLogger(__name__)


@dataclass
class StartingModel:
    model: ElmoForBidirectionalLM
    tokenizer: ElmoTokenizer
    summary: str  # one line on where the weights came from, for the log and the model card


def load_starting_model(
    vocabulary: LmVocabulary,
    *,
    options_file: str | None = None,
    model_name_or_path: str | None = None,
    num_sampled: int | None = None,
    dropout: float | None = None,
) -> StartingModel:
    """A new biLM (`options_file`) or a saved one (`model_name_or_path`), with a softmax over `vocabulary`."""
    if (options_file is None) == (model_name_or_path is None):
        raise ValueError("give either --options_file (a new biLM) or --model_name_or_path (continue a saved one)")
    if options_file is not None:
        options = read_options(options_file)
        config = config_from_options(options, source=options_file)
        if config.vocab_size not in (None, len(vocabulary)):
            raise DataFileError(
                f"{options_file} has n_tokens_vocab={config.vocab_size} but the vocabulary has {len(vocabulary)} "
                "words: they must agree (or drop n_tokens_vocab from the options)"
            )
        config.vocab_size = len(vocabulary)
        _set_training_options(config, num_sampled, dropout)
        model = ElmoForBidirectionalLM(config)
        return StartingModel(model, ElmoTokenizer(), f"new biLM from {options_file}")

    require_model_folder(model_name_or_path, DataFileError, hub=True)
    folder = Path(model_name_or_path)
    config = ElmoConfig.from_pretrained(folder)
    had_softmax = config.vocab_size is not None and (folder / VOCABULARY_FILE).is_file()
    if not had_softmax:
        config.vocab_size = len(vocabulary)
    _set_training_options(config, num_sampled, dropout)
    model = ElmoForBidirectionalLM.from_pretrained(folder, config=config)
    tokenizer = ElmoTokenizer.from_pretrained(folder)
    if not had_softmax:
        return StartingModel(model, tokenizer, f"biLM of {folder} with a new softmax of {len(vocabulary):,} words")
    old_words = LmVocabulary.from_file(folder / VOCABULARY_FILE)
    if len(old_words) != config.vocab_size:
        raise DataFileError(
            f"{folder / VOCABULARY_FILE} has {len(old_words)} words but the model's softmax {config.vocab_size} rows"
        )
    if old_words.words == vocabulary.words:
        return StartingModel(model, tokenizer, f"{folder}, softmax and vocabulary kept")
    kept = transfer_softmax(model, old_words, vocabulary)
    summary = (
        f"{folder}, softmax re-mapped to the new vocabulary: {kept:,} of {len(vocabulary):,} words kept their rows, "
        f"{len(vocabulary) - kept:,} new words start from the old <UNK> row"
    )
    return StartingModel(model, tokenizer, summary)


def transfer_softmax(model: ElmoForBidirectionalLM, old: LmVocabulary, new: LmVocabulary) -> int:
    """Give `model` a softmax over `new`: words of `old` keep their rows; returns how many did.

    Every other word (and the new `<UNK>`) starts as a copy of the old `<UNK>` row with its bias lowered by
    log(n + 1), n the number of new words: the model then keeps the odds between the words it knew (their
    probabilities are exactly the old ones when no word was dropped) and splits the probability it gave to
    `<UNK>` evenly among the words that were hidden in it, so training starts from the old model's
    predictions instead of from noise.
    """
    weight, bias = model.softmax.weight.detach(), model.softmax.bias.detach()
    old_unk = old.ids[UNK_WORD]
    new_rows = [index for index, word in enumerate(new.words) if word not in old or word == UNK_WORD]
    rows = torch.tensor([old.ids.get(word, old_unk) for word in new.words])
    new_weight, new_bias = weight[rows].clone(), bias[rows].clone()
    new_bias[new_rows] -= math.log(len(new_rows))  # len(new_rows) counts <UNK> too: n + 1
    model.softmax.weight = torch.nn.Parameter(new_weight)
    model.softmax.bias = torch.nn.Parameter(new_bias)
    model.config.vocab_size = len(new)
    return len(new) - len(new_rows)


def _set_training_options(config: ElmoConfig, num_sampled: int | None, dropout: float | None) -> None:
    if num_sampled is not None:
        # 0 trains with the full softmax; a sample as large as the vocabulary is the full softmax too.
        config.training_options["n_negative_samples_batch"] = num_sampled or None
    if dropout is not None:
        config.dropout = dropout
