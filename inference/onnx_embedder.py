"""ELMo on onnxruntime: open a folder written by `elmo-convert onnx` and embed batches with its graph.

`OnnxEmbedder` is a `BatchEmbedder`, as PyTorch's `Embedder` is: what `elmo-embed` uses of a model. `elmo-embed
--model M-onnx` takes it where the folder holds a graph (`holds_onnx_graph`). onnxruntime is the `[onnx]` extra:
without it, opening a graph is refused in one line.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from accelerate import PartialState

from elmo_transformers.common.errors import EmbedError
from elmo_transformers.common.onnx_layout import FLOAT_GRAPH, QUANTIZED_GRAPH, open_graph
from modeling_elmo import ElmoConfig, ElmoTokenizer

from .embedder import BatchEmbedder, Embedder, PendingVectors, PreparedBatch

__all__ = ["OnnxEmbedder", "SortedBatch", "holds_onnx_graph", "open_embedder"]


def holds_onnx_graph(model: str | Path) -> bool:
    """Whether `model` is a local folder holding an exported graph (`FLOAT_GRAPH` or `QUANTIZED_GRAPH`)."""
    folder = Path(model)
    return folder.is_dir() and any((folder / name).is_file() for name in (FLOAT_GRAPH, QUANTIZED_GRAPH))


def open_embedder(
    model: str, *, layers: str, compute_dtype: str = "float32", device: str | None = None
) -> BatchEmbedder:
    """`elmo-embed`'s embedder of `model`: `OnnxEmbedder` where the folder holds an exported graph (on CPU whatever
    `device`), else `Embedder` (PyTorch) on `device`. The graph is the float32 one; a folder holding only the int8
    graph is run with it, and a one-line notice says so (its vectors are near float32's, not equal)."""
    if not holds_onnx_graph(model):
        return Embedder(model, layers=layers, compute_dtype=compute_dtype, device=device)
    if compute_dtype != "float32":
        raise EmbedError(f"--dtype {compute_dtype}: {model} holds an ONNX graph, which runs in float32 (on CPU)")
    quantized = not (Path(model) / FLOAT_GRAPH).is_file()
    if quantized and PartialState().is_main_process:
        print(
            f"elmo-embed: notice: {model} holds no {FLOAT_GRAPH}: embedding with its int8 graph {QUANTIZED_GRAPH}"
            " (8-bit products: vectors near float32's, not equal to them)",
            file=sys.stderr,
        )
    return OnnxEmbedder(model, layers=layers, quantized=quantized)


class OnnxEmbedder(BatchEmbedder):
    """The graph of an `elmo-convert onnx` folder on onnxruntime (CPU), giving the vectors of `layers` ("all",
    "top" or "average", as `Embedder`) for batches of sentences: `FLOAT_GRAPH`, or `QUANTIZED_GRAPH` if `quantized`."""

    backend = "onnxruntime"
    compute_dtype = "float32"

    def __init__(self, model: str, *, layers: str, quantized: bool = False, threads: int | None = None) -> None:
        if layers not in ("all", "top", "average"):
            raise EmbedError(f"--layers {layers}: an ONNX folder serves all, top or average")
        folder = Path(model)
        name = QUANTIZED_GRAPH if quantized else FLOAT_GRAPH
        self.weights_file = folder / name
        self.session = open_graph(self.weights_file, EmbedError, threads=threads)
        if "hidden_states" not in {output.name for output in self.session.get_outputs()}:
            raise EmbedError(f"{folder / name}: the graph of a task head (logits), not of the biLM: export the biLM")
        self.layers = layers
        self.input_names = [tensor.name for tensor in self.session.get_inputs()]
        self.tokenizer = ElmoTokenizer.from_pretrained(model)
        config = ElmoConfig.from_pretrained(model)
        self.device = torch.device("cpu")
        self.width = 2 * config.projection_dim
        self.num_layers = config.num_hidden_layers + 1

    def prepare(self, sentences: Sequence[Sequence[str]]) -> SortedBatch:
        """The tokenizer's padded batch, longest sentence first (the order the graph runs its rows in, so that it
        keeps them as they come): the graph's inputs (`graph_signature`) are its keys."""
        order = sorted(range(len(sentences)), key=lambda row: -len(sentences[row]))  # stable: ties keep their order
        inputs = self.tokenizer(
            [list(sentences[row]) for row in order], is_split_into_words=True, padding=True, return_tensors="pt"
        )
        tensors = {name: inputs[name] for name in self.input_names}
        return SortedBatch(tensors, [len(words) for words in sentences], order)

    def run(self, prepared: SortedBatch) -> PendingVectors:
        """The graph over the batch, its rows back in the sentences' order; the vectors are ready at once
        (`result()` does not wait)."""
        wanted = ["last_hidden_state"] if self.layers == "top" else ["hidden_states"]
        (vectors,) = self.session.run(wanted, {name: tensor.numpy() for name, tensor in prepared.tensors.items()})
        if self.layers == "average":
            vectors = vectors.mean(axis=1)  # hidden_states is (batch, L+1, words, width)
        restored = np.empty_like(vectors)
        restored[prepared.order] = vectors
        return PendingVectors(torch.from_numpy(restored), prepared.lengths)


@dataclass
class SortedBatch(PreparedBatch):
    """A `PreparedBatch` whose tensors hold the sentences in another order: row i is sentence `order[i]` (`lengths`
    are in the sentences' order)."""

    order: list[int]
