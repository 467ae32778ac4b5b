"""ELMo on onnxruntime: open a folder written by `elmo-convert onnx` and embed batches with its graph.

`OnnxEmbedder` is a `BatchEmbedder`, as PyTorch's `Embedder` is: what `elmo-embed` uses of a model. `elmo-embed
--model M-onnx` takes it where the folder holds a graph (`holds_onnx_graph`). onnxruntime is the `[onnx]` extra:
without it, opening a graph is refused in one line.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import torch

from elmo_transformers.common.errors import ElmoError, EmbedError, first_line
from elmo_transformers.common.extras import require_extra
from modeling_elmo import ElmoConfig, ElmoTokenizer

from .embedder import BatchEmbedder, Embedder, PendingVectors, PreparedBatch

if TYPE_CHECKING:
    import onnxruntime

__all__ = [
    "FLOAT_GRAPH",
    "LAYOUT_KEY",
    "LAYOUT_VERSION",
    "QUANTIZED_GRAPH",
    "OnnxEmbedder",
    "holds_onnx_graph",
    "open_embedder",
    "open_graph",
]

FLOAT_GRAPH = "model.onnx"  # optimum's names for an exported model and its quantised copy
QUANTIZED_GRAPH = "model_quantized.onnx"
# The metadata key naming the layout of the graph's inputs and outputs (`conversion.onnx_graph.LAYOUT_VERSION`).
LAYOUT_KEY = "elmo_onnx_layout"
LAYOUT_VERSION = "1"


def holds_onnx_graph(model: str | Path) -> bool:
    """Whether `model` is a local folder holding an exported graph (`FLOAT_GRAPH` or `QUANTIZED_GRAPH`)."""
    folder = Path(model)
    return folder.is_dir() and any((folder / name).is_file() for name in (FLOAT_GRAPH, QUANTIZED_GRAPH))


def open_graph(path: str | Path, error: type[ElmoError], *, threads: int | None = None) -> onnxruntime.InferenceSession:
    """An onnxruntime session (CPU) of the graph at `path`, after checking that this version reads its layout; a
    one-line `error` for a missing file, a graph that does not load, another layout or a missing extra."""
    require_extra("onnx", f"running {path}", error)
    import onnxruntime

    path = Path(path)
    if not path.is_file():
        raise error(f"{path.parent}: no ONNX graph {path.name} (write one with elmo-convert onnx)")
    options = onnxruntime.SessionOptions()
    if threads:
        options.intra_op_num_threads = threads
    try:
        session = onnxruntime.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    except Exception as failure:  # onnxruntime raises its own exception types, one per failure kind
        raise error(f"{path}: onnxruntime cannot load the graph: {first_line(failure)}") from None
    layout = session.get_modelmeta().custom_metadata_map.get(LAYOUT_KEY)
    if layout != LAYOUT_VERSION:
        found = "no ELMo graph layout" if layout is None else f"ELMo graph layout {layout}"
        raise error(
            f"{path}: {found}, this version of elmo-transformers reads layout {LAYOUT_VERSION}: export the model "
            "again with elmo-convert onnx"
        )
    return session


def open_embedder(
    model: str, *, layers: str, compute_dtype: str = "float32", device: str | None = None
) -> BatchEmbedder:
    """`elmo-embed`'s embedder of `model`: `OnnxEmbedder` where the folder holds an exported graph (float32, on CPU
    whatever `device`), else `Embedder` (PyTorch) on `device`."""
    if not holds_onnx_graph(model):
        return Embedder(model, layers=layers, compute_dtype=compute_dtype, device=device)
    if compute_dtype != "float32":
        raise EmbedError(f"--dtype {compute_dtype}: {model} holds an ONNX graph, which runs in float32 (on CPU)")
    return OnnxEmbedder(model, layers=layers)


class OnnxEmbedder(BatchEmbedder):
    """The graph of an `elmo-convert onnx` folder on onnxruntime (CPU), giving the vectors of `layers` ("all",
    "top" or "average", as `Embedder`) for batches of sentences. `quantized` runs `QUANTIZED_GRAPH`."""

    backend = "onnxruntime"
    compute_dtype = "float32"

    def __init__(self, model: str, *, layers: str, quantized: bool = False, threads: int | None = None) -> None:
        if layers not in ("all", "top", "average"):
            raise EmbedError(f"--layers {layers}: an ONNX folder serves all, top or average")
        folder = Path(model)
        name = QUANTIZED_GRAPH if quantized or not (folder / FLOAT_GRAPH).is_file() else FLOAT_GRAPH
        self.weights_file = folder / name
        self.session = open_graph(self.weights_file, EmbedError, threads=threads)
        if "hidden_states" not in {output.name for output in self.session.get_outputs()}:
            raise EmbedError(f"{folder / name}: the graph of a task head (logits), not of the biLM: export the biLM")
        self.layers = layers
        self.tokenizer = ElmoTokenizer.from_pretrained(model)
        config = ElmoConfig.from_pretrained(model)
        self.device = torch.device("cpu")
        self.width = 2 * config.projection_dim
        self.num_layers = config.num_hidden_layers + 1

    def prepare(self, sentences: Sequence[Sequence[str]]) -> PreparedBatch:
        """The tokenizer's padded batch (the graph's input is its character ids)."""
        inputs = self.tokenizer(
            [list(words) for words in sentences], is_split_into_words=True, padding=True, return_tensors="pt"
        )
        return PreparedBatch({"input_ids": inputs["input_ids"]}, [len(words) for words in sentences])

    def run(self, prepared: PreparedBatch) -> PendingVectors:
        """The graph over the batch; the vectors are ready at once (`result()` does not wait)."""
        wanted = ["last_hidden_state"] if self.layers == "top" else ["hidden_states"]
        (vectors,) = self.session.run(wanted, {"input_ids": prepared.tensors["input_ids"].numpy()})
        if self.layers != "top":
            vectors = vectors.transpose(1, 0, 2, 3)  # (batch, L+1, words, width)
            if self.layers == "average":
                vectors = vectors.mean(axis=1)
        return PendingVectors(torch.from_numpy(np.ascontiguousarray(vectors)), prepared.lengths)
