"""The layout of an `elmo-convert onnx` folder, which the export writes and every reader checks: the graphs' file
names, the metadata keys naming the layout and the exported architecture, the graph's inputs and outputs
(`graph_signature`), and `open_graph`, which opens a graph only once it matches its folder's config.json.

One home for both sides: the export (`onnx_export`) writes folders of this layout; the embedder (`graph_embedder`),
`elmo-embed` and the benchmarks read them.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from elmo_transformers.common.errors import first_line
from elmo_transformers.common.extras import require_extra
from elmo_transformers.common.regular_files import regular_file_problem

if TYPE_CHECKING:
    import onnx
    import onnxruntime

__all__ = [
    "ARCHITECTURE_KEY",
    "CONFORMANCE_FILE",
    "FLOAT_GRAPH",
    "HEAD_ARCHITECTURES",
    "LAYOUT_KEY",
    "LAYOUT_VERSION",
    "MARKER_CHAR_IDS",
    "QUANTIZABLE_PREFIX",
    "QUANTIZED_GRAPH",
    "TOKEN_CHAR_IDS",
    "TOKEN_VECTORS",
    "GraphConfig",
    "GraphSignature",
    "GraphTensor",
    "SessionOpener",
    "exported_architecture",
    "graph_bytes",
    "graph_files",
    "graph_inputs",
    "graph_signature",
    "graph_weights",
    "holds_graph",
    "open_graph",
    "open_graph_part",
    "read_graph_config",
    "save_graph",
    "whole_graph_session",
]

FLOAT_GRAPH = "model.onnx"  # optimum's names for an exported model and its quantised copy
QUANTIZED_GRAPH = "model_quantized.onnx"
# The text front end's conformance file (raw lines, their words, ids and mask), copied from beside text_elmo.py.
CONFORMANCE_FILE = "text_elmo_conformance.json"
# The metadata key naming the layout of the graph's inputs and outputs (`graph_signature`), and the layout this
# version writes and reads; the key naming the exported architecture.
LAYOUT_KEY = "elmo_onnx_layout"
LAYOUT_VERSION = "2"  # 2: the tokenizer's attention_mask goes in, hidden_states is batch-first
ARCHITECTURE_KEY = "elmo_architecture"
# The names of the large weight products, which the builder gives them and `--quantize int8` finds them by (the
# LSTM's input, state and output projections, the highway layers and the token projection). The character embedding
# and convolutions stay float32.
QUANTIZABLE_PREFIX = "quantizable_product"
# The names of the cut between the token layer and the rest of the biLM, which the builder gives the two tensors and
# `GraphEmbedder` splits the graph at, to compute each distinct word's token vector once per run: the marked sentences'
# words as rows of character ids (batch x (words + 2), chars) int64, and the character encoder's vectors of those rows
# (batch x (words + 2), projection_dim) float32. `--quantize int8` keeps both (it renames no tensor between products).
TOKEN_CHAR_IDS = "token_char_ids"
TOKEN_VECTORS = "token_vectors"
# The names of the weights that hold the character ids of <S> and </S>, which the graph marks each sentence with (1,
# 1, chars) int64: the split graph's token layer reads them from the graph, which owns them (config.json's char ids
# made them at the export).
MARKER_CHAR_IDS = {"bos": "bos_char_ids", "eos": "eos_char_ids"}
# How `open_graph` makes the session of a graph file, given its threads and providers: `whole_graph_session`, or a
# session of a part of it (`token_graph.TokenLayerOpener`).
SessionOpener = Callable[[Path, "int | None", "list[str | tuple[str, dict]]"], "onnxruntime.InferenceSession"]
# The task heads of this package (each with its mixes of the biLM's layers), which have a graph of their own; any
# other architecture is exported as the biLM.
HEAD_ARCHITECTURES = ("ElmoForTokenClassification", "ElmoForSequenceClassification")
# transformers' CONFIG_NAME: importing transformers (a second) is what a folder's reader does without.
_CONFIG_FILE = "config.json"
# transformers' number of labels of a config without id2label (PreTrainedConfig's default, which config.json omits).
_DEFAULT_NUM_LABELS = 2
# A graph's weights are ONNX external data in one file beside it, "<graph>_data" (optimum's model.onnx_data):
# onnxruntime reads that file rather than parsing the weights out of the graph's protobuf, which took 1.0 s for the
# float32 graph of the original shape (374 MB) against 0.4 s so (docs/onnx.md#opening-the-graph-issue-41). Tensors
# under this many bytes stay in the graph.
_EXTERNAL_DATA_MIN_BYTES = 1024


def holds_graph(model: str | Path) -> bool:
    """Whether `model` is a local folder holding an exported graph (`FLOAT_GRAPH` or `QUANTIZED_GRAPH`): elmo-embed
    runs it on onnxruntime, anything else on PyTorch. Looked at without importing more than this module. A path that
    cannot be looked at (a name too long, a folder not searchable) holds none: the PyTorch model's load says why."""
    # (os.path's tests are False for a path they cannot look at, where pathlib's raise: a name too long, EACCES)
    return os.path.isdir(model) and any(os.path.isfile(Path(model, name)) for name in (FLOAT_GRAPH, QUANTIZED_GRAPH))


def graph_weights(graph: str | Path) -> Path:
    """The file of the graph `graph`'s weights (external data), beside it: model.onnx -> model.onnx_data."""
    graph = Path(graph)
    return graph.with_name(graph.name + "_data")


def graph_files(graph: str | Path) -> list[Path]:
    """The files of the graph `graph`: the graph, and its weights' file where it has one (a folder exported before
    the weights went beside the graph holds them inside it)."""
    weights = graph_weights(graph)
    return [Path(graph), *([weights] if weights.is_file() else [])]


def graph_bytes(graph: str | Path) -> int:
    """The size of the graph `graph` on disk: its files (`graph_files`) together."""
    return sum(path.stat().st_size for path in graph_files(graph))


def save_graph(model: onnx.ModelProto, path: Path) -> None:
    """Write `model` as the graph `path` with its weights beside it (`graph_weights`); the file must not exist (onnx
    appends to it). The weights of its subgraphs (the loops') move to its main graph first (`_hoist_initializers`).
    `model`'s tensors become references to the file."""
    import onnx

    _hoist_initializers(model)
    onnx.save(
        model,
        str(path),  # (onnx before 1.15 writes the external data only beside a path given as a str)
        save_as_external_data=True,
        all_tensors_to_one_file=True,
        location=graph_weights(path).name,
        size_threshold=_EXTERNAL_DATA_MIN_BYTES,
    )


def _hoist_initializers(model: onnx.ModelProto) -> None:
    """Move every subgraph's initializers (the weights of the biLSTM's Scan loops) to the main graph, from which the
    subgraphs read them as outer-scope values: onnxruntime 1.32 refuses a subgraph's external data held in a linked
    file (a symbolic link, as the Hub's cache makes, or a hard link), and takes the main graph's. The vectors are the
    same to the bit, and as fast (docs/onnx.md#opening-the-graph-issue-41)."""
    main = model.graph
    names = {tensor.name for tensor in main.initializer}
    subgraphs = [attribute.g for node in main.node for attribute in node.attribute if attribute.HasField("g")]
    while subgraphs:
        graph = subgraphs.pop()
        for tensor in graph.initializer:
            if tensor.name in names:
                raise ValueError(f"the initializer {tensor.name} is defined twice: its subgraph's cannot move")
            names.add(tensor.name)
        main.initializer.extend(graph.initializer)
        del graph.initializer[:]
        subgraphs.extend(attribute.g for node in graph.node for attribute in node.attribute if attribute.HasField("g"))


def exported_architecture(architectures: list[str] | None) -> str:
    """What `elmo-convert onnx` exports of a folder whose config.json names `architectures`: its task head where it
    has a graph of one, else the biLM (`ElmoModel`; a language model's softmax is left out)."""
    architecture = (architectures or [""])[0]
    return architecture if architecture in HEAD_ARCHITECTURES else "ElmoModel"


@dataclass(frozen=True)
class GraphConfig:
    """What a folder's config.json says of its graph (`graph_signature`): the exported architecture and the sizes
    of the graph's inputs and outputs. Read from config.json's fields (`of`), so that a reader of an ONNX folder needs
    neither transformers nor torch (`read_graph_config`)."""

    architecture: str
    max_characters_per_token: int
    projection_dim: int
    num_hidden_layers: int
    num_labels: int

    @classmethod
    def of(cls, config: Mapping[str, Any]) -> GraphConfig:
        """The graph's config of config.json's fields `config` (or an `ElmoConfig`'s `to_dict()`); a ValueError
        names a size that is missing or not a positive integer."""
        sizes = {}
        for name in ("max_characters_per_token", "projection_dim", "num_hidden_layers"):
            value = config.get(name)
            if name not in config:
                raise ValueError(f"no {name}, which sizes the graph")
            if type(value) is not int or value < 1:
                raise ValueError(f"{name} must be a positive integer, got {json.dumps(value)}")
            sizes[name] = value
        labels = config.get("id2label") or {}
        num_labels = len(labels) if isinstance(labels, Mapping) and labels else _DEFAULT_NUM_LABELS
        return cls(exported_architecture(config.get("architectures")), num_labels=num_labels, **sizes)

    @property
    def hidden_size(self) -> int:
        """Width of every output layer: the forward and backward halves (`ElmoConfig.hidden_size`)."""
        return 2 * self.projection_dim


def read_graph_config(folder: Path, error: type[Exception]) -> GraphConfig:
    """The `GraphConfig` of `folder`'s config.json; a one-line `error` where there is none, it is not a JSON object,
    or a size of the graph is missing or wrong."""
    config_file = folder / _CONFIG_FILE
    if not config_file.is_file():
        raise error(f"{folder}: not a model folder (no {_CONFIG_FILE})")  # as `model_folder_problem` says it
    try:
        config = json.loads(config_file.read_text(encoding="utf-8"))
        if not isinstance(config, dict):
            raise ValueError(f"a JSON {type(config).__name__}")
    except (ValueError, UnicodeDecodeError) as problem:
        raise error(f"{config_file}: not a JSON object: {problem}") from None
    try:
        return GraphConfig.of(config)
    except ValueError as problem:
        raise error(f"{config_file}: {problem}") from None


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


def graph_signature(config: GraphConfig) -> GraphSignature:
    """The inputs and outputs of layout `LAYOUT_VERSION` of the graph of a folder's config (its architecture and
    sizes): the one statement of them, which the export declares in the graph
    (`serving.graph_builder.build_graph`) and `open_graph` checks a graph against.

    The inputs are the keys `ElmoTokenizer` returns (`return_tensors="np"`), so that its output goes in as it is:
    `input_ids` (batch, words, max_characters_per_token) int64 and `attention_mask` (batch, words) int64. The mask
    decides each sentence's words (`serving.graph_builder._word_mask`). Every output is batch-first, as Triton's
    dynamic batching needs: of the biLM `last_hidden_state` (batch, words, 2P), `hidden_states` (batch, L+1, words,
    2P), `word_mask` (batch, words) bool; of a token head `logits` (batch, words, labels), of a sequence head
    `logits` (batch, labels)."""
    chars, architecture = config.max_characters_per_token, config.architecture
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


def _missing_external_data(graph: Path) -> Path | None:
    """The first file the graph `graph` keeps weights in (ONNX external data, beside it) that is not there, or None
    (read only when onnxruntime fails to load it: the graph's structure, without its weights)."""
    import onnx
    from onnx.external_data_helper import ExternalDataInfo, uses_external_data

    try:
        model = onnx.load(str(graph), load_external_data=False)
    except Exception:  # (not a graph onnx reads: onnxruntime's own line says more)
        return None
    for tensor in model.graph.initializer:  # (the export keeps every weight in the main graph: save_graph)
        if uses_external_data(tensor):
            location = graph.parent / ExternalDataInfo(tensor).location
            if not location.is_file():
                return location
    return None


def open_graph(
    path: str | Path,
    error: type[Exception],
    *,
    threads: int | None = None,
    providers: Sequence[str | tuple[str, dict]] = ("CPUExecutionProvider",),
    opener: SessionOpener | None = None,
) -> onnxruntime.InferenceSession:
    """An onnxruntime session of the graph at `path` on `providers` (onnxruntime's execution providers, in order of
    preference; `threads` threads within an operator, onnxruntime's choice if None), once checked against its
    folder: the folder's config.json gives the graph's sizes (`read_graph_config`), this version reads the graph's
    layout, and its architecture, inputs and outputs are those the config makes (`graph_signature`). A one-line
    `error` for a missing file or config.json, a graph that does not load, another layout, a graph of another model,
    or a missing extra. `opener` makes the session (`whole_graph_session` by default)."""
    require_extra("onnx", f"running {path}", error)
    path = Path(path)
    try:
        is_graph = path.is_file()
    except OSError as problem:  # (a name too long; a folder this user may not search)
        raise error(f"{path}: cannot be looked at: {problem.strerror}") from None
    if not is_graph:
        raise error(f"{path.parent}: no ONNX graph {path.name} (write one with elmo-convert onnx)")
    config = read_graph_config(path.parent, error)
    try:
        session = (opener or whole_graph_session)(path, threads, list(providers))
    except Exception as failure:  # onnxruntime raises its own exception types, one per failure kind
        missing = _missing_external_data(path)
        if missing is not None and missing.exists():  # (a FIFO, a device, a folder in its place)
            raise error(f"{regular_file_problem(missing, 'weights file')} of {path}") from None
        if missing is not None:  # (onnxruntime's words: a paragraph that names neither file)
            raise error(
                f"{path}: its weights file {missing.name} is missing (the graph keeps its weights beside it, in"
                f" {missing}): copy the whole folder, or export the model again with elmo-convert onnx"
            ) from None
        raise error(f"{path}: onnxruntime cannot load the graph: {first_line(failure)}") from None
    metadata = session.get_modelmeta().custom_metadata_map
    layout = metadata.get(LAYOUT_KEY)
    if layout != LAYOUT_VERSION:
        found = "no ELMo graph layout" if layout is None else f"ELMo graph layout {layout}"
        raise error(
            f"{path}: {found}, this version of elmo-transformers reads layout {LAYOUT_VERSION}: export the model "
            "again with elmo-convert onnx"
        )
    problem = _mismatch(session, metadata.get(ARCHITECTURE_KEY), config, path.parent / _CONFIG_FILE)
    if problem:
        raise error(
            f"{path}: {problem}: the graph and config.json are of different models; export the model again with"
            " elmo-convert onnx"
        )
    return session


def graph_inputs(session: onnxruntime.InferenceSession) -> list[onnxruntime.NodeArg]:
    """The inputs of the graph that `session` runs, those `graph_signature` names: the graph's part after its token
    layer (`token_graph`) also takes the token layer's vectors, which are not the graph's but its own part's."""
    return [tensor for tensor in session.get_inputs() if tensor.name != TOKEN_VECTORS]


def whole_graph_session(
    graph: Path, threads: int | None, providers: Sequence[str | tuple[str, dict]]
) -> onnxruntime.InferenceSession:
    """onnxruntime's session of the graph file `graph` (`open_graph`'s `SessionOpener` by default)."""
    import onnxruntime

    return onnxruntime.InferenceSession(str(graph), _session_options(threads), providers=list(providers))


def open_graph_part(
    part: bytes,
    weights: Mapping[str, onnxruntime.OrtValue],
    *,
    threads: int | None,
    providers: Sequence[str | tuple[str, dict]],
) -> onnxruntime.InferenceSession:
    """An onnxruntime session of `part`, a serialised graph made in memory of a folder's graph (its token or
    contextual part: `token_graph.split_token_layer`), with the options `whole_graph_session` gives the graph.
    `weights` are the values, by name, of the part's initializers kept in its graph's weights file
    (`token_graph.mapped_weights`), which the session reads in place: they must outlive it."""
    import onnxruntime

    options = _session_options(threads)
    if weights:
        options.add_external_initializers(list(weights), list(weights.values()))
    return onnxruntime.InferenceSession(part, options, providers=list(providers))


def _session_options(threads: int | None) -> onnxruntime.SessionOptions:
    """onnxruntime's options of a graph's session: `threads` threads within an operator (onnxruntime's choice if
    None)."""
    import onnxruntime

    options = onnxruntime.SessionOptions()
    if threads:
        options.intra_op_num_threads = threads
    return options


def _mismatch(
    session: onnxruntime.InferenceSession, architecture: str | None, config: GraphConfig, config_file: Path
) -> str | None:
    """The first way the graph's architecture (its metadata), inputs or outputs differ from what `config` (read
    from `config_file`) makes them; None when they agree."""
    expected_architecture = config.architecture
    if architecture != expected_architecture:
        return (
            f"its {ARCHITECTURE_KEY} is {architecture!r}, but {config_file} makes it {expected_architecture!r}"
            " (architectures)"
        )
    signature = graph_signature(config)
    for kind, declared, expected in (
        ("input", graph_inputs(session), signature.inputs),
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
