"""ELMo on onnxruntime: open a folder written by `elmo-convert onnx` and embed batches with its graph.

`OnnxEmbedder` is a `BatchEmbedder`, as PyTorch's `Embedder` is: what `elmo-embed` uses of a model. `elmo-embed
--model M-onnx` takes it where the folder holds a graph (`holds_onnx_graph`; `plan.open_embedder` chooses).
onnxruntime is the `[onnx]` extra: without it, opening a graph is refused in one line.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from elmo_transformers.common.errors import EmbedError
from elmo_transformers.serving.graph_layout import FLOAT_GRAPH, QUANTIZED_GRAPH, graph_files, open_graph
from modeling_elmo.text_elmo import ElmoTextEncoder

from .runner import BatchEmbedder, PendingVectors, PreparedBatch, recorded_sha256

__all__ = ["OnnxEmbedder", "SortedBatch", "holds_onnx_graph"]

# The files of an ONNX folder that a run reads besides the graph's (the text front end's config among them): each is
# compared with the folder's SHA256SUMS before the graph is opened.
_READ_FILES = ("config.json", "tokenizer_config.json")


def holds_onnx_graph(model: str | Path) -> bool:
    """Whether `model` is a local folder holding an exported graph (`FLOAT_GRAPH` or `QUANTIZED_GRAPH`)."""
    folder = Path(model)
    return folder.is_dir() and any((folder / name).is_file() for name in (FLOAT_GRAPH, QUANTIZED_GRAPH))


class OnnxEmbedder(BatchEmbedder):
    """The graph of an `elmo-convert onnx` folder on onnxruntime (CPU), giving the vectors of `layers` ("all",
    "top" or "average", as `Embedder`) for batches of sentences: `FLOAT_GRAPH`, or `QUANTIZED_GRAPH` if `quantized`.
    The text front end (`modeling_elmo.text_elmo`, numpy alone) splits raw text and gives the graph its ids: neither
    torch nor transformers is imported."""

    backend = "onnxruntime"
    compute_dtype = "float32"
    device_type = "cpu"

    def __init__(self, model: str, *, layers: str, quantized: bool = False, threads: int | None = None) -> None:
        if layers not in ("all", "top", "average"):
            raise EmbedError(f"--layers {layers}: an ONNX folder serves all, top or average")
        folder = Path(model)
        graph = folder / (QUANTIZED_GRAPH if quantized else FLOAT_GRAPH)
        *structure, self.weights_file = graph_files(graph)  # the weights: beside the graph, or inside it
        for path in [*structure, *(folder / name for name in _READ_FILES)]:
            if path.is_file():
                recorded_sha256(path)  # (the weights file is compared once the run has its sha256)
        self.session = open_graph(graph, EmbedError, threads=threads)
        outputs = {output.name: output for output in self.session.get_outputs()}
        if "hidden_states" not in outputs:
            raise EmbedError(f"{graph}: the graph of a task head (logits), not of the biLM: export the biLM")
        self.layers = layers
        self.input_names = [tensor.name for tensor in self.session.get_inputs()]
        try:
            self.encoder = ElmoTextEncoder.from_folder(folder)
        except ValueError as error:  # (it names the file and what is wrong with it)
            raise EmbedError(str(error)) from None
        # The graph's sizes, which `open_graph` found to be those of config.json.
        _, self.num_layers, _, self.width = outputs["hidden_states"].shape
        _check_framing(graph, self.encoder.max_characters_per_token, self.session)

    def split_words(self, text: str) -> list[str]:
        return self.encoder.split(text)

    def prepare(self, sentences: Sequence[Sequence[str]]) -> SortedBatch:
        """The front end's padded batch, longest sentence first (the order the graph runs its rows in, so that it
        keeps them as they come): the graph's inputs (`graph_signature`) are its keys."""
        order = sorted(range(len(sentences)), key=lambda row: -len(sentences[row]))  # stable: ties keep their order
        inputs = self.encoder.encode_words([list(sentences[row]) for row in order])
        tensors = {name: inputs[name] for name in self.input_names}
        return SortedBatch(tensors, [len(words) for words in sentences], order)

    def run(self, prepared: SortedBatch) -> PendingVectors:
        """The graph over the batch, its rows back in the sentences' order; the vectors are ready at once
        (`result()` does not wait)."""
        wanted = ["last_hidden_state"] if self.layers == "top" else ["hidden_states"]
        (vectors,) = self.session.run(wanted, dict(prepared.tensors))
        if self.layers == "average":
            vectors = vectors.mean(axis=1)  # hidden_states is (batch, L+1, words, width)
        restored = np.empty_like(vectors)
        restored[prepared.order] = vectors
        return PendingVectors(restored, prepared.lengths)


def _check_framing(graph: Path, characters: int, session) -> None:
    """Refuse a front end whose words are `characters` ids long where the graph reads words of another length (the
    folder's tokenizer_config.json and config.json disagree)."""
    expected = session.get_inputs()[0].shape[-1]
    if characters != expected:
        raise EmbedError(
            f"{graph.parent}: tokenizer_config.json frames words of {characters} characters, but the graph reads"
            f" {expected} (max_characters_per_token): the model and its tokenizer must frame words alike"
        )


@dataclass
class SortedBatch(PreparedBatch):
    """A `PreparedBatch` whose tensors hold the sentences in another order: row i is sentence `order[i]` (`lengths`
    are in the sentences' order)."""

    order: list[int]
