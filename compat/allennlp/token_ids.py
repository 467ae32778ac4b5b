"""AllenNLP 0.9's `batch_to_ids`: tokenized sentences -> character ids (batch, longest sentence, 50), each word its
UTF-8 bytes framed by bilm-tf's begin- and end-of-word ids (`<S>` and `</S>` their marker ids), padding all zero.
`ElmoTokenizer` computes them (the same ids: benchmarks/speed/bench_tokenizer.py checks it against AllenNLP's)."""

from __future__ import annotations

import functools
from collections.abc import Sequence

import torch

from modeling_elmo import ElmoTokenizer

from .checks import ConfigurationError

__all__ = ["batch_to_ids", "check_sentences"]


@functools.cache
def _tokenizer() -> ElmoTokenizer:
    return ElmoTokenizer()


def check_sentences(batch: Sequence[Sequence[str]]) -> None:
    """Refuse, with one line, a batch that is not a list of tokenized sentences (a word that is not a string is left
    to the encoder, which names it)."""
    if isinstance(batch, str) or not isinstance(batch, Sequence):
        raise ConfigurationError(f"batch_to_ids takes a list of tokenized sentences, got {type(batch).__name__}")
    for index, sentence in enumerate(batch):
        if isinstance(sentence, str):
            raise ConfigurationError(
                f"batch_to_ids: sentence {index} is a string, {sentence!r:.60}: split it into words"
            )


def batch_to_ids(batch: Sequence[Sequence[str]]) -> torch.Tensor:
    """Character ids (len(batch), longest sentence, 50) long of tokenized sentences (each a list of strings)."""
    check_sentences(batch)
    if not batch:
        return torch.zeros(0, 0, 50, dtype=torch.long)
    try:
        encoded = _tokenizer()(list(batch), is_split_into_words=True, padding=True, return_tensors="pt")
    except ValueError as error:  # a sentence that is not a list of strings
        raise ConfigurationError(f"batch_to_ids: {error}") from None
    return encoded["input_ids"]
