"""ELMo on onnxruntime: open a folder written by `elmo-convert onnx` and embed batches with its graph.

`OnnxEmbedder` is a `BatchEmbedder`, as PyTorch's `Embedder` is: what `elmo-embed` uses of a model. `elmo-embed
--model M-onnx` takes it where the folder holds a graph (`holds_onnx_graph`). onnxruntime is the `[onnx]` extra:
without it, opening a graph is refused in one line.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import torch
from transformers.utils import CONFIG_NAME

from elmo_transformers.common.errors import ElmoError, EmbedError, first_line
from elmo_transformers.common.extras import require_extra
from elmo_transformers.common.model_folder import require_model_folder
from modeling_elmo import (
    ElmoConfig,
    ElmoForSequenceClassification,
    ElmoForTokenClassification,
    ElmoModel,
    ElmoPreTrainedModel,
    ElmoTokenizer,
)

from .embedder import BatchEmbedder, Embedder, PendingVectors, PreparedBatch

if TYPE_CHECKING:
    import onnxruntime

__all__ = [
    "ARCHITECTURE_KEY",
    "FLOAT_GRAPH",
    "LAYOUT_KEY",
    "LAYOUT_VERSION",
    "QUANTIZED_GRAPH",
    "GraphSignature",
    "GraphTensor",
    "OnnxEmbedder",
    "SortedBatch",
    "exported_class",
    "graph_signature",
    "holds_onnx_graph",
    "open_embedder",
    "open_graph",
]

FLOAT_GRAPH = "model.onnx"  # optimum's names for an exported model and its quantised copy
QUANTIZED_GRAPH = "model_quantized.onnx"
# The metadata key naming the layout of the graph's inputs and outputs (`graph_signature`), and the layout this
# version writes and reads; the key naming the exported architecture.
LAYOUT_KEY = "elmo_onnx_layout"
LAYOUT_VERSION = "2"  # 2: the tokenizer's attention_mask goes in, hidden_states is batch-first
ARCHITECTURE_KEY = "elmo_architecture"
_HEADS = {head.__name__: head for head in (ElmoForTokenClassification, ElmoForSequenceClassification)}


def exported_class(config: ElmoConfig) -> type[ElmoPreTrainedModel]:
    """What `elmo-convert onnx` exports of a folder with this config: its task head where it has a graph of one,
    else the biLM (`ElmoModel`; a language model's softmax is left out)."""
    return _HEADS.get((config.architectures or [""])[0], ElmoModel)


@dataclass(frozen=True)
class GraphTensor:
    """An input or output of the exported graph: its name, element type (ONNX's spelling: int64, float, bool), its
    shape (a number where config.json fixes the size, a name where each call chooses it), and the config.json
    fields that fix the numbers."""

    name: str
    element: str
    shape: tuple[int | str, ...]
    fields: tuple[str, ...] = ()

    def __str__(self) -> str:
        return f"{self.element} [{', '.join(map(str, self.shape))}]"


@dataclass(frozen=True)
class GraphSignature:
    """The inputs and outputs of a graph, in order."""

    inputs: tuple[GraphTensor, ...]
    outputs: tuple[GraphTensor, ...]


def graph_signature(config: ElmoConfig, architecture: str) -> GraphSignature:
    """The inputs and outputs of layout `LAYOUT_VERSION` of the graph of `architecture` (a class name) for a
    folder's config: the one statement of them, which the export declares in the graph
    (`conversion.onnx_graph.build_graph`) and `open_graph` checks a graph against.

    The inputs are the keys `ElmoTokenizer` returns (`return_tensors="np"`), so that its output goes in as it is:
    `input_ids` (batch, words, max_characters_per_token) int64 and `attention_mask` (batch, words) int64. The mask
    decides each sentence's words (`conversion.onnx_graph._word_mask`). Every output is batch-first, as Triton's
    dynamic batching needs: of the biLM `last_hidden_state` (batch, words, 2P), `hidden_states` (batch, L+1, words,
    2P), `word_mask` (batch, words) bool; of a token head `logits` (batch, words, labels), of a sequence head
    `logits` (batch, labels)."""
    chars = config.max_characters_per_token
    inputs = (
        GraphTensor("input_ids", "int64", ("batch", "words", chars), ("max_characters_per_token",)),
        GraphTensor("attention_mask", "int64", ("batch", "words")),
    )
    if architecture == "ElmoForTokenClassification":
        outputs = (GraphTensor("logits", "float", ("batch", "words", config.num_labels), ("id2label",)),)
    elif architecture == "ElmoForSequenceClassification":
        outputs = (GraphTensor("logits", "float", ("batch", config.num_labels), ("id2label",)),)
    else:
        width, layers = config.hidden_size, config.num_hidden_layers + 1
        outputs = (
            GraphTensor("last_hidden_state", "float", ("batch", "words", width), ("projection_dim",)),
            GraphTensor(
                "hidden_states", "float", ("batch", layers, "words", width), ("num_hidden_layers", "projection_dim")
            ),
            GraphTensor("word_mask", "bool", ("batch", "words")),
        )
    return GraphSignature(inputs, outputs)


def holds_onnx_graph(model: str | Path) -> bool:
    """Whether `model` is a local folder holding an exported graph (`FLOAT_GRAPH` or `QUANTIZED_GRAPH`)."""
    folder = Path(model)
    return folder.is_dir() and any((folder / name).is_file() for name in (FLOAT_GRAPH, QUANTIZED_GRAPH))


def open_graph(path: str | Path, error: type[ElmoError], *, threads: int | None = None) -> onnxruntime.InferenceSession:
    """An onnxruntime session (CPU) of the graph at `path`, once checked against its folder: the folder is a model
    folder (`require_model_folder`), this version reads the graph's layout, and its architecture, inputs and outputs
    are those the folder's config.json makes (`graph_signature`). A one-line `error` for a missing file or
    config.json, a graph that does not load, another layout, a graph of another model, or a missing extra."""
    require_extra("onnx", f"running {path}", error)
    import onnxruntime

    path = Path(path)
    if not path.is_file():
        raise error(f"{path.parent}: no ONNX graph {path.name} (write one with elmo-convert onnx)")
    require_model_folder(path.parent, error)
    options = onnxruntime.SessionOptions()
    if threads:
        options.intra_op_num_threads = threads
    try:
        session = onnxruntime.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    except Exception as failure:  # onnxruntime raises its own exception types, one per failure kind
        raise error(f"{path}: onnxruntime cannot load the graph: {first_line(failure)}") from None
    metadata = session.get_modelmeta().custom_metadata_map
    layout = metadata.get(LAYOUT_KEY)
    if layout != LAYOUT_VERSION:
        found = "no ELMo graph layout" if layout is None else f"ELMo graph layout {layout}"
        raise error(
            f"{path}: {found}, this version of elmo-transformers reads layout {LAYOUT_VERSION}: export the model "
            "again with elmo-convert onnx"
        )
    config_file = path.parent / CONFIG_NAME
    problem = _mismatch(session, metadata.get(ARCHITECTURE_KEY), ElmoConfig.from_pretrained(path.parent), config_file)
    if problem:
        raise error(
            f"{path}: {problem}: the graph and config.json are of different models; export the model again with"
            " elmo-convert onnx"
        )
    return session


def _mismatch(
    session: onnxruntime.InferenceSession, architecture: str | None, config: ElmoConfig, config_file: Path
) -> str | None:
    """The first way the graph's architecture (its metadata), inputs or outputs differ from what `config` (read
    from `config_file`) makes them; None when they agree."""
    expected_architecture = exported_class(config).__name__
    if architecture != expected_architecture:
        return (
            f"its {ARCHITECTURE_KEY} is {architecture!r}, but {config_file} makes it {expected_architecture!r}"
            " (architectures)"
        )
    signature = graph_signature(config, expected_architecture)
    for kind, declared, expected in (
        ("input", session.get_inputs(), signature.inputs),
        ("output", session.get_outputs(), signature.outputs),
    ):
        names, expected_names = [tensor.name for tensor in declared], [tensor.name for tensor in expected]
        if names != expected_names:
            return f"its {kind}s are {names}, but {config_file} makes them {expected_names}"
        for tensor, wanted in zip(declared, expected, strict=True):
            found = GraphTensor(tensor.name, tensor.type.removeprefix("tensor(").removesuffix(")"), tuple(tensor.shape))
            if (found.element, found.shape) != (wanted.element, wanted.shape):
                fields = f" ({', '.join(wanted.fields)})" if wanted.fields else ""
                return f"its {kind} {wanted.name} is {found}, but {config_file} makes it {wanted}{fields}"
    return None


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
