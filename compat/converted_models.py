"""What the drop-in modules of simple_elmo and ELMoForManyLangs share: a model converted on load, and the biLM's
layers of a batch of word lists.

A model is converted by `elmo-convert allennlp --archive`'s code (`conversion.nlpl_archive.convert_archive`): an
NLPL archive or its unzipped folder in any of its three layouts (bilm-tf weights, a bilm-tf checkpoint, an
ELMoForManyLangs model), and so an ELMoForManyLangs model folder too. The converted folder is written to a
temporary folder (`tempfile`'s, under $TMPDIR), loaded into memory and removed at once: nothing is left on disk,
and each load converts again (for a model loaded often, convert it once with `elmo-convert` and load the folder
with `from_pretrained`).
"""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from elmo_transformers.common.errors import ConversionError
from elmo_transformers.conversion.convert_options import AllennlpOptions
from elmo_transformers.conversion.nlpl_archive import convert_archive
from modeling_elmo import ElmoConfig, ElmoForBidirectionalLM, ElmoModel, ElmoTokenizer
from modeling_elmo.text_elmo import VOCABULARY_FILE

__all__ = ["ConvertedModel", "check_sentences", "load_converted", "word_layers"]

LstmState = tuple[torch.Tensor, torch.Tensor]


@dataclass(frozen=True)
class ConvertedModel:
    """A model converted on load: the biLM (`ElmoModel`) or the language model (`ElmoForBidirectionalLM`), its
    tokenizer, and for a language model the lines of its `vocab.txt` (the softmax's rows), else None."""

    model: torch.nn.Module
    tokenizer: ElmoTokenizer
    vocabulary_lines: list[str] | None = None


def load_converted(path: str | Path, *, language_model: bool = False) -> ConvertedModel:
    """The model of the archive or folder `path` (see the module docstring): the biLM, or with `language_model`
    the biLM with its softmax (a checkpoint's). A path that holds no model it can read, or with `language_model`
    none with a softmax, is a `ConversionError` of one line naming it."""
    if not Path(path).exists():
        raise ConversionError(f"{path}: no such archive or folder")
    with tempfile.TemporaryDirectory(prefix="elmo-compat-") as temporary:
        folder = Path(temporary) / "model"
        convert_archive(AllennlpOptions(archive=str(path), output=str(folder)))
        tokenizer = ElmoTokenizer.from_pretrained(folder)
        if not language_model:
            return ConvertedModel(ElmoModel.from_pretrained(folder).eval(), tokenizer)
        if not ElmoConfig.from_pretrained(folder).vocab_size:
            raise ConversionError(
                f"{path} holds a biLM without its softmax (bilm-tf weights): full=True needs a bilm-tf checkpoint"
                f" (model.ckpt-N.index and .data, options.json, {VOCABULARY_FILE})"
            )
        model = ElmoForBidirectionalLM.from_pretrained(folder).eval()
        lines = (folder / VOCABULARY_FILE).read_text(encoding="utf-8").splitlines()
    return ConvertedModel(model, tokenizer, lines)


def check_sentences(sentences: object, what: str) -> list[list[str]]:
    """`sentences` as a list of word lists, or a `ValueError` of one line naming the first one that is not a list
    of strings (`what` names the argument)."""
    if isinstance(sentences, str) or not isinstance(sentences, Sequence):
        raise ValueError(f"{what} must be a list of sentences (lists of words), got {type(sentences).__name__}")
    for index, sentence in enumerate(sentences):
        if isinstance(sentence, str) or not isinstance(sentence, Sequence):
            raise ValueError(
                f"{what}[{index}] must be a list of words, got {type(sentence).__name__} {sentence!r:.60}"
                " (split a string into words first)"
            )
        for word in sentence:
            if not isinstance(word, str):
                raise ValueError(f"{what}[{index}] holds {word!r:.40}, not a string: a sentence is a list of words")
    return [list(sentence) for sentence in sentences]


def word_layers(
    model: ElmoModel, tokenizer: ElmoTokenizer, sentences: list[list[str]], state: LstmState | None = None
) -> tuple[np.ndarray, LstmState | None]:
    """Every biLM layer of a batch of word lists: `(batch, num_hidden_layers + 1, words, 2 * projection_dim)`
    float32, zero after each sentence's words; with a `state` (`ElmoModel`'s `(h, c)` of the batch's rows) the rows
    continue from it, and the state after them is returned (else None)."""
    inputs = tokenizer(sentences, is_split_into_words=True, padding=True, return_tensors="pt")
    with torch.no_grad():
        output = model(**inputs, state=state, use_cache=state is not None, output_hidden_states=True)
    return torch.stack(output.hidden_states, dim=1).numpy(), output.state
