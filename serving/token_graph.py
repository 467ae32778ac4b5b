"""The biLM graph of an `elmo-convert onnx` folder split in two at its token layer, in memory, so that
`GraphEmbedder` computes each distinct word's token vector once per run rather than once per occurrence:

- the token graph: the character encoder, `TOKEN_CHAR_IDS` (words, chars) int64 -> `TOKEN_VECTORS` (words, P)
  float32, each row by itself;
- the contextual graph: the whole graph with `TOKEN_VECTORS` as an input in place of the character encoder (still
  fed `input_ids` and `attention_mask`, from which it takes the words, the markers' places and the rows' order).

Both are the folder's graph's own nodes and weights (each weight goes to the graph that reads it, whose session
reads it in place from the folder's weights file, mapped into memory: `open_token_layer`), cut where the builder names
the two tensors (`graph_layout.TOKEN_CHAR_IDS`, `TOKEN_VECTORS`). The character ids of the markers <S> and </S>,
whose token vectors the contextual graph's input holds too, are the graph's own weights (`MARKER_CHAR_IDS`). A folder
exported before those names has no cut (`split_token_layer` gives None). Nothing is written to the folder.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from elmo_transformers.common.regular_files import open_regular
from modeling_elmo.token_cache_elmo import WordSlots

from .graph_layout import (
    MARKER_CHAR_IDS,
    TOKEN_CHAR_IDS,
    TOKEN_VECTORS,
    graph_weights,
    open_graph_part,
    whole_graph_session,
)

if TYPE_CHECKING:
    import onnx
    import onnxruntime

__all__ = [
    "GraphPart",
    "GraphTokenCache",
    "TokenLayerOpener",
    "TokenLayerSessions",
    "TokenLayerSplit",
    "mapped_weights",
    "open_token_layer",
    "split_token_layer",
]


@dataclass(frozen=True)
class GraphPart:
    """A part of a graph, serialised (as `onnxruntime.InferenceSession` takes it), and the names of its initializers
    whose values are in the graph's weights file (`external`: the part refers to them there, as the graph does)."""

    graph: bytes
    external: tuple[str, ...]


@dataclass(frozen=True)
class TokenLayerSplit:
    """The two graphs of `split_token_layer` (the module docstring)."""

    token: GraphPart
    contextual: GraphPart


@dataclass(frozen=True)
class TokenLayerSessions:
    """onnxruntime sessions of the two graphs of `split_token_layer`, the weights they read in place from the
    graph's weights file (`mapped_weights`), kept as long as the sessions run, and the graph's rows of character ids
    of <S> and </S> (`markers`: (2, chars) int64)."""

    token: onnxruntime.InferenceSession
    contextual: onnxruntime.InferenceSession
    weights: Mapping[str, onnxruntime.OrtValue]
    markers: np.ndarray


def open_token_layer(
    graph: Path, *, threads: int | None, providers: Sequence[str | tuple[str, dict]]
) -> TokenLayerSessions | None:
    """Sessions of the token and contextual graphs of the biLM graph at `graph` (with `whole_graph_session`'s options:
    `threads`, `providers`), or None where the graph names no cut (exported before it did). The graph's structure
    is read (kilobytes); its weights are mapped from its weights file, not read twice nor copied (`mapped_weights`).
    A ValueError names a weights file the graph does not refer to as the export writes it."""
    import onnx

    model = onnx.load(str(graph), load_external_data=False)
    split = split_token_layer(model)
    if split is None:
        return None
    weights = mapped_weights(graph, model)
    token, contextual = (
        open_graph_part(
            part.graph, {name: weights[name] for name in part.external}, threads=threads, providers=providers
        )
        for part in (split.token, split.contextual)
    )
    return TokenLayerSessions(token, contextual, weights, _markers(model, weights))


def _markers(model: onnx.ModelProto, weights: Mapping[str, onnxruntime.OrtValue]) -> np.ndarray:
    """The rows of character ids (2, chars) int64 of <S> and </S> in the graph `model` (`MARKER_CHAR_IDS`), read
    from its weights file where it keeps them there (`weights`, of `mapped_weights`)."""
    from onnx import numpy_helper

    kept = {tensor.name: tensor for tensor in model.graph.initializer}
    rows = [
        weights[name].numpy() if name in weights else numpy_helper.to_array(kept[name])
        for name in MARKER_CHAR_IDS.values()
    ]
    return np.stack([row.reshape(-1) for row in rows]).astype(np.int64, copy=False)


class TokenLayerOpener:
    """An `open_graph` opener (`graph_layout.SessionOpener`) that splits the graph at its token layer: the session it
    makes, which `open_graph` checks, is of the contextual part, and `sessions` holds both parts; where the graph names
    no cut, the session is the whole graph's and `sessions` None. The graph is opened once either way."""

    def __init__(self) -> None:
        self.sessions: TokenLayerSessions | None = None

    def __call__(
        self, graph: Path, threads: int | None, providers: Sequence[str | tuple[str, dict]]
    ) -> onnxruntime.InferenceSession:
        self.sessions = open_token_layer(graph, threads=threads, providers=providers)
        if self.sessions is None:
            return whole_graph_session(graph, threads, providers)
        return self.sessions.contextual


def mapped_weights(graph: Path, model: onnx.ModelProto) -> dict[str, onnxruntime.OrtValue]:
    """The initializers of `model` (the graph at `graph`, loaded without its weights) that its weights file holds
    (`graph_weights`; none for a graph exported before the weights went beside it), by name: onnxruntime values over
    the file mapped into memory, read-only. Mapped through a link too, which onnx's own loader refuses: the Hub's cache
    holds a folder's files as symbolic links. The export keeps every weight in the main graph (`save_graph`)."""
    import mmap

    import onnxruntime
    from onnx import helper
    from onnx.external_data_helper import ExternalDataInfo, uses_external_data

    external = [tensor for tensor in model.graph.initializer if uses_external_data(tensor)]
    if not external:
        return {}
    weights = graph_weights(graph)
    with open_regular(weights) as file:  # (a FIFO in its place would block an open for reading)
        data = np.frombuffer(mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ), dtype=np.uint8)
    values = {}
    for tensor in external:
        info = ExternalDataInfo(tensor)
        if info.location != weights.name:  # (the export writes one file: a graph naming another is not its)
            raise ValueError(f"{graph}: its weight {tensor.name} is in {info.location}, not in {weights.name}")
        start = info.offset or 0  # (onnx leaves out an offset of 0, and the length of a tensor up to the end)
        array = data[start : start + info.length if info.length else len(data)]
        array = array.view(helper.tensor_dtype_to_np_dtype(tensor.data_type)).reshape(tuple(tensor.dims))
        values[tensor.name] = onnxruntime.OrtValue.ortvalue_from_numpy(array)
    return values


def split_token_layer(model: onnx.ModelProto) -> TokenLayerSplit | None:
    """The token and contextual graphs (the module docstring) of the biLM graph `model`, with or without its weights
    loaded, or None where `model` does not name the cut (a graph exported before it)."""
    from onnx import TensorProto, helper

    graph = model.graph
    produced = {name for node in graph.node for name in node.output}
    weights = {tensor.name for tensor in graph.initializer}
    if not {TOKEN_CHAR_IDS, TOKEN_VECTORS} <= produced or not set(MARKER_CHAR_IDS.values()) <= weights:
        return None
    chars = graph.input[0].type.tensor_type.shape.dim[-1].dim_value  # input_ids (batch, words, chars)
    char_ids = helper.make_tensor_value_info(TOKEN_CHAR_IDS, TensorProto.INT64, ["tokens", chars])
    vectors = helper.make_tensor_value_info(TOKEN_VECTORS, TensorProto.FLOAT, ["tokens", "projection_dim"])
    return TokenLayerSplit(
        _subgraph(model, [char_ids], [vectors]), _subgraph(model, [*graph.input, vectors], list(graph.output))
    )


def _subgraph(
    model: onnx.ModelProto, inputs: list[onnx.ValueInfoProto], outputs: list[onnx.ValueInfoProto]
) -> GraphPart:
    """The part of `model` that computes `outputs` from `inputs` (names of its tensors): the nodes they need, in the
    graph's order, and the weights those read; its opset, IR version and metadata."""
    from onnx import helper
    from onnx.external_data_helper import uses_external_data

    graph = model.graph
    nodes = _needed_nodes(graph.node, {output.name for output in outputs}, {tensor.name for tensor in inputs})
    read = {name for node in nodes for name in _reads(node)}
    weights = [tensor for tensor in graph.initializer if tensor.name in read]
    part = helper.make_graph(nodes, graph.name, inputs, outputs, weights)
    result = helper.make_model(part, opset_imports=list(model.opset_import), producer_name=model.producer_name)
    result.ir_version = model.ir_version
    result.metadata_props.extend(model.metadata_props)
    external = tuple(tensor.name for tensor in weights if uses_external_data(tensor))
    return GraphPart(result.SerializeToString(), external)


def _needed_nodes(nodes: Iterable[onnx.NodeProto], wanted: set[str], given: set[str]) -> list[onnx.NodeProto]:
    """The nodes (a graph's, in its topological order) that the tensors `wanted` need, the tensors `given` taken as
    they are: walked back from the end, a node is needed where another needed node, or an output, reads one of its
    outputs. A node reads its inputs and whatever its loops' bodies read of the graph around them (`_reads`), which
    `onnx.utils.Extractor` leaves out."""
    needed = set(wanted) - given
    kept = []
    for node in reversed(list(nodes)):
        if needed.isdisjoint(node.output):
            continue
        kept.append(node)
        needed.update(name for name in _reads(node) if name not in given)
    return kept[::-1]


def _reads(node: onnx.NodeProto) -> set[str]:
    """The tensor names `node` reads: its inputs and every name its subgraphs (Scan and Loop bodies) read, theirs
    included (those are unique across the whole graph: a subgraph's own name is no tensor of the graph around it)."""
    names = {name for name in node.input if name}
    for attribute in node.attribute:
        if attribute.HasField("g"):
            names.update(name for inner in attribute.g.node for name in _reads(inner))
    return names


class GraphTokenCache:
    """The token layer of the contextual graph's batches (`contextual_input`), each distinct word's vector computed
    once by the token graph's session (`sessions.token`: `open_token_layer`) and then kept, at most `max_words` of them
    (`WordSlots`: least recently used out first): `max_words x P x 4` bytes, allocated as the words come. The
    markers' vectors (`TokenLayerSessions.markers`) are computed once.

    The vectors are the whole graph's bits: each row of the token graph is computed by itself (its products and the
    int8 graph's row quantisation read one row; tests/onnx/test_graph_token_cache.py checks 1 to 73 rows and whole
    runs against the whole graph, on onnxruntime's CPU provider). `hits` and `misses` count the distinct words of
    each batch found held and computed."""

    def __init__(self, sessions: TokenLayerSessions, max_words: int) -> None:
        self.sessions = sessions  # (with the weights both sessions read in place)
        self.token = sessions.token
        self.slots = WordSlots(max_words)
        self.bos, self.eos = self.token.run(None, {TOKEN_CHAR_IDS: sessions.markers})[0]
        self._vectors = np.empty((0, self.bos.shape[0]), dtype=np.float32)
        self._lock = threading.Lock()
        self.hits = self.misses = 0

    def contextual_input(self, input_ids: np.ndarray, attention_mask: np.ndarray) -> np.ndarray:
        """`TOKEN_VECTORS` of a batch of the graph's inputs, as the whole graph computes it
        (`graph_builder._token_layer`): the rows in the graph's order, longest first (TopK's: ties keep their order),
        each <S>, its words, </S> right after the last word, then padding (zeros here: the graph zeroes it), as one
        (batch x (words + 2), P) float32 array."""
        words = np.cumsum(attention_mask == 0, axis=1) == 0  # the graph's word mask (`_word_mask`)
        lengths = words.sum(axis=1)
        order = np.argsort(-lengths, kind="stable")
        words, lengths = words[order], lengths[order]
        batch, width = words.shape
        tokens = np.zeros((batch, width + 2, self.bos.shape[0]), dtype=np.float32)
        tokens[:, 0] = self.bos
        rows, positions = np.nonzero(words)
        tokens[rows, positions + 1] = self.vectors(input_ids[order][rows, positions])
        tokens[np.arange(batch), lengths + 1] = self.eos
        return tokens.reshape(batch * (width + 2), -1)

    def vectors(self, char_ids: np.ndarray) -> np.ndarray:
        """The token vectors (N, P) of `char_ids` (N, chars) int64: those held from the cache, the others computed
        in one run of the token graph, and kept."""
        if not len(char_ids):
            return np.empty((0, self.bos.shape[0]), dtype=np.float32)
        distinct, inverse = np.unique(char_ids, axis=0, return_inverse=True)
        keys = [row.tobytes() for row in distinct]
        vectors = np.empty((len(keys), self.bos.shape[0]), dtype=np.float32)
        # One batch at a time: a GraphEmbedder may serve several threads (an onnxruntime session does), and a
        # word's row may move or the storage grow under another batch's lookup.
        with self._lock:
            held, slots, missing = self.slots.find(keys)
            vectors[held] = self._vectors[slots]
            if missing:
                encoded = self.token.run(None, {TOKEN_CHAR_IDS: distinct[missing]})[0]
                vectors[missing] = encoded
                self._keep([keys[index] for index in missing], encoded)
            self.hits, self.misses = self.hits + len(held), self.misses + len(missing)
        return vectors[inverse.reshape(-1)]

    def _keep(self, keys: list[bytes], encoded: np.ndarray) -> None:
        """Keep the vectors `encoded` of the new words `keys` in the rows `WordSlots.take` gives them."""
        dropped, slots = self.slots.take(keys)
        rows = self.slots.grown(len(self._vectors))
        if rows > len(self._vectors):
            grown = np.empty((rows, self._vectors.shape[1]), dtype=np.float32)
            grown[: len(self._vectors)] = self._vectors
            self._vectors = grown
        self._vectors[slots] = encoded[dropped:]
