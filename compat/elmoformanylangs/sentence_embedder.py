"""`Embedder`, ELMoForManyLangs' class (see the package's docstring for what it copies and what differs)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from ..converted_models import check_sentences, load_converted, word_layers

__all__ = ["AVERAGE_OF_LAYERS", "EVERY_LAYER", "Embedder"]

AVERAGE_OF_LAYERS = -1  # sents2elmo's output_layer for the mean of the layers
EVERY_LAYER = -2  # ... for all of them


class Embedder:
    """ELMoForManyLangs' `Embedder(model_dir, batch_size=64)`: `sents2elmo` embeds lists of words.

    Attributes: `model_dir`, `batch_size` (sentences per batch, longest first: it sets the memory used, not the
    numbers), and this package's `model` and `tokenizer`.
    """

    def __init__(self, model_dir: str | Path, batch_size: int = 64) -> None:
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise ValueError(f"batch_size must be a positive integer, got {batch_size!r}")
        self.model_dir, self.batch_size = model_dir, batch_size
        converted = load_converted(model_dir)
        self.model, self.tokenizer = converted.model, converted.tokenizer

    def sents2elmo(self, sents: Sequence[Sequence[str]], output_layer: int = AVERAGE_OF_LAYERS) -> list[np.ndarray]:
        """One float32 array per sentence, in their order: `output_layer` -1, the mean of the layers, `(words,
        2 * projection_dim)`; -2, every layer, `(num_hidden_layers + 1, words, 2 * projection_dim)`; 0 (the token
        layer, twice) to `num_hidden_layers`, that layer, `(words, 2 * projection_dim)`. A word longer than the
        model's `max_characters_per_token - 2` characters is read cut to them, as theirs is."""
        layer_count = self.model.config.num_hidden_layers + 1
        if isinstance(output_layer, bool) or output_layer not in (AVERAGE_OF_LAYERS, EVERY_LAYER, *range(layer_count)):
            raise ValueError(
                f"output_layer must be -1 (the average), -2 (all layers) or a layer 0..{layer_count - 1}, got"
                f" {output_layer!r}"
            )
        sentences = check_sentences(sents, "sents")
        embedded: list[np.ndarray | None] = [None] * len(sentences)
        longest_first = sorted(range(len(sentences)), key=lambda index: -len(sentences[index]))
        for start in range(0, len(sentences), self.batch_size):
            rows = longest_first[start : start + self.batch_size]
            layers, _ = word_layers(self.model, self.tokenizer, [sentences[row] for row in rows])
            for layered, row in zip(layers, rows, strict=True):
                embedded[row] = _chosen(layered[:, : len(sentences[row])], output_layer)
        return embedded


def _chosen(layers: np.ndarray, output_layer: int) -> np.ndarray:
    """The output of one sentence's `layers` (layers, words, dim) that `output_layer` picks."""
    if output_layer == AVERAGE_OF_LAYERS:
        return layers.mean(axis=0)  # their np.average, which fails on a sentence without words
    if output_layer == EVERY_LAYER:
        return np.ascontiguousarray(layers)
    return np.ascontiguousarray(layers[output_layer])
