"""`ElmoEmbedder.from_graph`'s biLM: the ONNX graph of an `elmo-convert onnx` folder on onnxruntime's CPU provider
(`serving.GraphEmbedder`), giving what `ElmoEmbedder.batch_to_embeddings` gives. Its int8 graph reads a quarter of
the float32 weights per step, which is what one long sentence at batch 1 (a protein) waits on.

The graph starts every sentence from a zero state: no state is carried from call to call (`stateful=False`).
"""

from __future__ import annotations

import os
from collections.abc import Sequence

import torch

from elmo_transformers.serving.graph_embedder import GraphEmbedder, GraphError

from .bilm_modules import _check_character_ids
from .checks import ConfigurationError
from .token_ids import check_sentences

__all__ = ["GraphBiLm"]


class GraphBiLm:
    """The graph of the `elmo-convert onnx` folder `folder`: `model_quantized.onnx` (written by `--quantize int8`)
    if `quantized`, else `model.onnx`, with `threads` threads within an operator (onnxruntime's choice if None).
    A folder it cannot use, or onnxruntime missing, is one line (`ConfigurationError`)."""

    def __init__(self, folder: str | os.PathLike, *, quantized: bool, threads: int | None) -> None:
        if threads is not None and (type(threads) is not int or threads < 1):
            raise ConfigurationError(
                f"threads must be a positive integer or None (onnxruntime's choice), got {threads!r:.40}"
            )
        try:
            self.embedder = GraphEmbedder(folder, quantized=quantized, threads=threads)
        except GraphError as error:  # (one line naming the file, or the extra to install)
            raise ConfigurationError(str(error)) from None

    def layers(self, batch: Sequence[Sequence[str]]) -> tuple[torch.Tensor, torch.Tensor]:
        """Every layer (batch, L + 1, words, 2P) float32 and the words' mask (batch, words) long of tokenized
        sentences, each from a zero state, as `_ElmoBiLm.layers_without_markers` with `stateful=False`."""
        check_sentences(batch)
        try:
            encoded = self.embedder.encode(batch)
        except TypeError as error:  # a word that is not a string
            raise ConfigurationError(f"batch_to_ids: {error}") from None
        _check_character_ids(torch.from_numpy(encoded.inputs["input_ids"]))  # (refused as by the PyTorch path)
        vectors = torch.from_numpy(self.embedder.run(encoded))
        lengths = torch.tensor(encoded.lengths)
        mask = (torch.arange(vectors.shape[2]) < lengths[:, None]).long()
        return vectors, mask
