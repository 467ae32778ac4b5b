"""ELMo on onnxruntime for `elmo-embed`: a folder written by `elmo-convert onnx`, run by the serving package's
`GraphEmbedder` (`elmo_transformers.serving.graph_embedder`).

`OnnxEmbedder` is a `BatchEmbedder`, as PyTorch's `TorchEmbedder` is: what `elmo-embed` uses of a model. `elmo-embed
--model M-onnx` takes it where the folder holds a graph (`graph_layout.holds_graph`: its backend is `request.ONNX`,
which declares what it serves). It checks
the folder's files against its SHA256SUMS, and says each refusal of `GraphEmbedder` in elmo-embed's words.
onnxruntime is the `[onnx]` extra: without it, opening a graph is refused in one line.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from elmo_transformers.common.errors import EmbedError
from elmo_transformers.serving.graph_embedder import EncodedBatch, GraphEmbedder, GraphError
from elmo_transformers.serving.graph_layout import FLOAT_GRAPH, QUANTIZED_GRAPH, graph_files

from .request import ONNX
from .runner import BatchEmbedder, PendingVectors, PreparedBatch, recorded_sha256

__all__ = ["OnnxEmbedder", "SortedBatch"]

# The files of an ONNX folder that a run reads besides the graph's (the text front end's config among them): each is
# compared with the folder's SHA256SUMS before the graph is opened.
_READ_FILES = ("config.json", "tokenizer_config.json")


class OnnxEmbedder(BatchEmbedder):
    """The graph of an `elmo-convert onnx` folder on onnxruntime (CPU), giving the vectors of `layers` ("all",
    "top" or "average", as `TorchEmbedder`) for batches of sentences: `FLOAT_GRAPH`, or `QUANTIZED_GRAPH` if
    `quantized`.
    The text front end (`modeling_elmo.text_elmo`, numpy alone) splits raw text and gives the graph its ids: neither
    torch nor transformers is imported. Each distinct word's token vector is computed once a run (`GraphEmbedder`'s
    token cache, of its default size: as PyTorch's runner keeps a `TokenVectorCache` of as many words), the same bits
    as the whole graph's. `elmo-embed` checked `layers` before (`request.check_request`)."""

    backend = ONNX.name
    [compute_dtype] = ONNX.compute_dtypes
    [device_type] = ONNX.device_types

    def __init__(self, model: str, *, layers: str, quantized: bool = False, threads: int | None = None) -> None:
        folder = Path(model)
        graph = folder / (QUANTIZED_GRAPH if quantized else FLOAT_GRAPH)
        *structure, self.weights_file = graph_files(graph)  # the weights: beside the graph, or inside it
        for path in [*structure, *(folder / name for name in _READ_FILES)]:
            if path.is_file():
                recorded_sha256(path)  # (the weights file is compared once the run has its sha256)
        try:
            self.graph = GraphEmbedder(folder, quantized=quantized, threads=threads)
        except GraphError as error:  # (its line names the file and what is wrong with it)
            raise EmbedError(str(error)) from None
        self.layers = layers
        self.num_layers, self.width = self.graph.num_layers, self.graph.width

    def split_words(self, text: str) -> list[str]:
        return self.graph.split(text)

    def prepare(self, sentences: Sequence[Sequence[str]]) -> SortedBatch:
        """The front end's padded batch, longest sentence first (`GraphEmbedder.encode`): the graph's inputs
        (`graph_signature`) are its tensors."""
        encoded = self.graph.encode(sentences)
        return SortedBatch(encoded.inputs, encoded.lengths, encoded)

    def run(self, prepared: SortedBatch) -> PendingVectors:
        """The graph over the batch, its rows back in the sentences' order; the vectors are ready at once
        (`result()` does not wait)."""
        return PendingVectors(self.graph.run(prepared.encoded, self.layers), prepared.lengths)


@dataclass
class SortedBatch(PreparedBatch):
    """A `PreparedBatch` of `GraphEmbedder.encode`'s batch `encoded`, whose rows hold the sentences longest first."""

    encoded: EncodedBatch
