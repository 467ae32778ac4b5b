"""The biLM graph of an `elmo-convert onnx` folder split in two at its token layer, in memory, so that
`GraphEmbedder` computes each distinct word's token vector once per run rather than once per occurrence:

- the token graph: the character encoder, `TOKEN_CHAR_IDS` (words, chars) int64 -> `TOKEN_VECTORS` (words, P)
  float32, each row by itself;
- the contextual graph: the whole graph with `TOKEN_VECTORS` as an input in place of the character encoder (still
  fed `input_ids` and `attention_mask`, from which it takes the words, the markers' places and the rows' order).

Both are the folder's graph's own nodes and weights (each weight goes to the graph that reads it), cut where the
builder names the two tensors (`graph_layout.TOKEN_CHAR_IDS`, `TOKEN_VECTORS`); a folder exported before those
names has no cut (`split_token_layer` gives None). Nothing is written to the folder.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from modeling_elmo.text_elmo import BILM_TF_CHAR_IDS, framed_char_ids
from modeling_elmo.word_slots_elmo import WordSlots

from .graph_layout import TOKEN_CHAR_IDS, TOKEN_VECTORS

if TYPE_CHECKING:
    import onnx
    import onnxruntime

__all__ = ["GraphTokenCache", "TokenLayerSplit", "marker_char_ids", "split_token_layer"]

# config.json's fields of the ids that frame words and make the sentence markers (`ElmoConfig.special_char_ids`).
_CHAR_ID_FIELDS = {"bow": "bow_char_id", "eow": "eow_char_id", "bos": "bos_char_id", "eos": "eos_char_id"}
_CHAR_ID_FIELDS["pad"] = "char_pad_id"


@dataclass(frozen=True)
class TokenLayerSplit:
    """The two graphs of `split_token_layer`, serialised (as `onnxruntime.InferenceSession` takes them)."""

    token: bytes
    contextual: bytes


def split_token_layer(model: onnx.ModelProto) -> TokenLayerSplit | None:
    """The token and contextual graphs (the module docstring) of the biLM graph `model` (its weights loaded), or None
    where `model` does not name the cut (a graph exported before it)."""
    from onnx import TensorProto, helper

    graph = model.graph
    produced = {name for node in graph.node for name in node.output}
    if not {TOKEN_CHAR_IDS, TOKEN_VECTORS} <= produced:
        return None
    chars = graph.input[0].type.tensor_type.shape.dim[-1].dim_value  # input_ids (batch, words, chars)
    width = graph.output[0].type.tensor_type.shape.dim[-1].dim_value  # last_hidden_state (batch, words, 2P)
    char_ids = helper.make_tensor_value_info(TOKEN_CHAR_IDS, TensorProto.INT64, ["tokens", chars])
    vectors = helper.make_tensor_value_info(TOKEN_VECTORS, TensorProto.FLOAT, ["tokens", width // 2])
    token = _subgraph(model, [char_ids], [vectors])
    contextual = _subgraph(model, [*graph.input, vectors], list(graph.output))
    return TokenLayerSplit(token.SerializeToString(), contextual.SerializeToString())


def _subgraph(
    model: onnx.ModelProto, inputs: list[onnx.ValueInfoProto], outputs: list[onnx.ValueInfoProto]
) -> onnx.ModelProto:
    """The part of `model` that computes `outputs` from `inputs` (names of its tensors): the nodes they need, in the
    graph's order, and the weights those read; its opset, IR version and metadata."""
    from onnx import helper

    graph = model.graph
    nodes = _needed_nodes(graph.node, {output.name for output in outputs}, {tensor.name for tensor in inputs})
    read = {name for node in nodes for name in _reads(node)}
    weights = [tensor for tensor in graph.initializer if tensor.name in read]
    part = helper.make_graph(nodes, graph.name, inputs, outputs, weights)
    result = helper.make_model(part, opset_imports=list(model.opset_import), producer_name=model.producer_name)
    result.ir_version = model.ir_version
    result.metadata_props.extend(model.metadata_props)
    return result


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


def marker_char_ids(config: Mapping[str, Any], chars: int) -> np.ndarray:
    """The rows of character ids (2, `chars`) int64 of <S> and </S>, which the graph marks each sentence with
    (`graph_builder._token_layer`), from config.json's fields `config` (`ElmoConfig`'s defaults where it has none)."""
    ids = {name: config.get(field, BILM_TF_CHAR_IDS[name]) for name, field in _CHAR_ID_FIELDS.items()}
    return np.array([framed_char_ids([ids[marker]], ids, chars) for marker in ("bos", "eos")], dtype=np.int64)


class GraphTokenCache:
    """The token layer of the contextual graph's batches (`contextual_input`), each distinct word's vector computed
    once by the `token` session (the token graph of `split_token_layer`) and then kept, at most `max_words` of them
    (`WordSlots`: least recently used out first): `max_words x P x 4` bytes, allocated as the words come. The
    markers' vectors (`markers`: `marker_char_ids`) are computed once.

    The vectors are the whole graph's bits: each row of the token graph is computed by itself (its products and the
    int8 graph's row quantisation read one row; tests/onnx/test_graph_token_cache.py checks 1 to 73 rows and whole
    runs against the whole graph, on onnxruntime's CPU provider). `hits` and `misses` count the distinct words of
    each batch found held and computed."""

    def __init__(self, token: onnxruntime.InferenceSession, markers: np.ndarray, max_words: int) -> None:
        self.token = token
        self.slots = WordSlots(max_words)
        self.bos, self.eos = token.run(None, {TOKEN_CHAR_IDS: markers})[0]
        self._vectors = np.empty((0, self.bos.shape[0]), dtype=np.float32)
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
        held, slots, missing = self.slots.find(keys)
        vectors = np.empty((len(keys), self.bos.shape[0]), dtype=np.float32)
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
