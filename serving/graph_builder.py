"""The ONNX graph of an ELMo model (the biLM, or a task head over it), written node by node with `onnx.helper`.

The graph computes what `ElmoModel(..., output_hidden_states=True)` computes, in the same order of operations:
the character CNN over each distinct word (`Unique`), the sentence markers `<S>`/`</S>` added inside the graph,
then per biLSTM layer one product for the input gates of every position and an ONNX `Scan` over the time steps
(one per direction), bilm-tf's cell (gates `i, j, f, o`, forget bias, cell clip, projection, projection
clip) written out as products and element-wise steps. The loop is not unrolled: one graph serves every batch size
and sentence length, empty sentences included. The inputs are the tokenizer's `input_ids` and `attention_mask`
(the mask decides the words: `_word_mask`); every output is batch-first.

The LSTMs run as `ElmoModel`'s do: over the rows sorted longest first (inside the graph, so a client need not sort;
the outputs come back in the input's order), each step computing only the rows still running. A row's words come
first in both directions (the backward stack reads each row's words reversed, padding left in place), so padding
never reaches a word; the outputs are zeroed there at the end.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator

import numpy as np
import onnx
import torch
from onnx import TensorProto, helper, numpy_helper

from modeling_elmo import ElmoLayerMix, ElmoModel
from modeling_elmo.modeling_elmo import ElmoForTokenClassification, ElmoLstmLayer, ElmoTaskModel
from modeling_elmo.text_elmo import framed_char_ids

from .graph_layout import (
    MARKER_CHAR_IDS,
    QUANTIZABLE_PREFIX,
    TOKEN_CHAR_IDS,
    TOKEN_VECTORS,
    GraphConfig,
    GraphTensor,
    graph_signature,
)

__all__ = ["OPSET", "build_graph"]

# The default domain's opset of every graph (the export's, and what the tests check it against). The nodes use its
# attribute forms, which opset 18 replaced: ReduceMax/ReduceMean take `axes=` as an attribute (an input from 18 on)
# and Split has no `num_outputs` (from 18 on it needs that or a `split` input); a new opset means rewriting those nodes.
OPSET = 17


class _Builder:
    """Nodes and weights of one ONNX graph (the main graph or a loop body); names are unique across all builders
    sharing `names` (a subgraph may not reuse a name of the graph around it)."""

    def __init__(self, names: Iterator[int]) -> None:
        self.names = names
        self.nodes: list[onnx.NodeProto] = []
        self.initializers: list[onnx.TensorProto] = []

    def fresh(self, hint: str) -> str:
        return f"{hint}_{next(self.names)}"

    def op(
        self,
        op_type: str,
        *inputs: str,
        outputs: int = 1,
        name: str | None = None,
        output: str | None = None,
        **attributes,
    ) -> str | list[str]:
        """A node of `op_type` over `inputs`, its `outputs` outputs named afresh (or its one output `output`, a name
        a reader finds the tensor by: `graph_layout.TOKEN_CHAR_IDS`)."""
        names = [output] if output else [self.fresh(op_type.lower()) for _ in range(outputs)]
        node_name = self.fresh(name or op_type)
        self.nodes.append(helper.make_node(op_type, list(inputs), names, name=node_name, **attributes))
        return names[0] if outputs == 1 else names

    def constant(self, value: np.ndarray | torch.Tensor, hint: str = "const", *, name: str | None = None) -> str:
        """A weight of the graph, named afresh after `hint` (or `name`, a name a reader finds it by:
        `graph_layout.MARKER_CHAR_IDS`)."""
        array = value.detach().cpu().numpy() if isinstance(value, torch.Tensor) else np.asarray(value)
        name = name or self.fresh(hint)
        self.initializers.append(numpy_helper.from_array(np.ascontiguousarray(array), name))
        return name

    def ints(self, *values: int) -> str:
        return self.constant(np.array(values, dtype=np.int64), "ints")

    def scalar(self, value: float) -> str:
        return self.constant(np.array(value, dtype=np.float32), "scalar")

    def linear(self, x: str, weight: torch.Tensor, bias: torch.Tensor | None, *, name: str = "linear") -> str:
        """`x @ weight.T + bias`, as `nn.Linear`."""
        product = self.op("MatMul", x, self.constant(weight.T, f"{name}_weight"), name=name)
        return product if bias is None else self.op("Add", product, self.constant(bias, f"{name}_bias"))

    def unsqueeze(self, x: str, *axes: int) -> str:
        return self.op("Unsqueeze", x, self.ints(*axes))

    def dim(self, x: str, axis: int) -> str:
        """The size of `x` along `axis`, as a (1,) int64 tensor."""
        return self.op("Shape", x, start=axis, end=axis + 1)


def graph_config(model: ElmoModel | ElmoTaskModel) -> GraphConfig:
    """What the graph of `model` is exported as: its config's sizes, and its own class (what the graph computes)."""
    return GraphConfig.of({**model.config.to_dict(), "architectures": [type(model).__name__]})


def build_graph(model: ElmoModel | ElmoTaskModel, metadata: dict[str, str]) -> onnx.ModelProto:
    """The ONNX model of `model` (in eval mode, float32): an `ElmoModel` or a task head, with the inputs and outputs
    of `graph_signature` (layout `LAYOUT_VERSION`). `metadata` goes into the model's metadata_props."""
    config = model.config
    if config.word_embedding_dim:
        raise ValueError("models with a word embedding (ELMoForManyLangs') are not exported to ONNX")
    graph = _Builder(itertools.count())
    signature = graph_signature(graph_config(model))
    input_ids, attention_mask = (tensor.name for tensor in signature.inputs)
    word_mask = _word_mask(graph, input_ids, attention_mask)
    with torch.no_grad():
        if isinstance(model, ElmoTaskModel):
            layers = _bilm(graph, model.elmo, input_ids, word_mask, config.mix_depth)
            named = {"logits": _head(graph, model, layers, word_mask)}
        else:
            layers = _bilm(graph, model, input_ids, word_mask, config.num_hidden_layers)
            stacked = graph.op("Concat", *(graph.unsqueeze(layer, 1) for layer in layers), axis=1)  # batch-first
            named = {"last_hidden_state": layers[-1], "hidden_states": stacked, "word_mask": word_mask}
    for tensor in signature.outputs:
        name = tensor.name
        graph.nodes.append(helper.make_node("Identity", [named[name]], [name], name=f"output_{name}"))
    onnx_graph = helper.make_graph(
        graph.nodes,
        type(model).__name__,
        [_value_info(tensor) for tensor in signature.inputs],
        [_value_info(tensor) for tensor in signature.outputs],
        graph.initializers,
    )
    onnx_model = helper.make_model(
        onnx_graph, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="elmo-transformers"
    )
    onnx_model.ir_version = 8  # onnxruntime >= 1.14 reads it
    helper.set_model_props(onnx_model, metadata)
    return onnx_model


def _value_info(tensor: GraphTensor) -> onnx.ValueInfoProto:
    """The graph's declaration of one of its inputs or outputs."""
    return helper.make_tensor_value_info(tensor.name, TensorProto.DataType.Value(tensor.element.upper()), tensor.shape)


def _word_mask(graph: _Builder, input_ids: str, attention_mask: str) -> str:
    """Each sentence's words (batch, words) bool: the attention mask decides, the ids do not. A sentence's words are
    the positions before the first 0 of its mask (any non-zero value is a word, as `ElmoModel`'s `.bool()`); what
    follows is padding, whatever the mask or the ids say there. For every mask `ElmoTokenizer` gives, and every mask
    `ElmoModel` accepts (a prefix of ones), this is `ElmoModel`'s word mask; `ElmoModel` refuses any other mask, which
    a graph cannot do, and the first 0 is where right padding starts: no position the mask calls padding becomes a
    word (the biLM's `word_mask` output tells what was taken). The mask must have the ids' (batch, words) shape:
    a `Concat` with the ids fails on any other (where `Mul` would broadcast a mask of one row to every row)."""
    checked = graph.op("Concat", graph.unsqueeze(attention_mask, 2), input_ids, axis=2)
    mask = graph.op("Squeeze", graph.op("Slice", checked, graph.ints(0), graph.ints(1), graph.ints(2)), graph.ints(2))
    is_padding = graph.op("Cast", graph.op("Equal", mask, graph.ints(0)), to=TensorProto.INT64)
    padding_so_far = graph.op("CumSum", is_padding, graph.constant(np.array(1, dtype=np.int64)))
    return graph.op("Equal", padding_so_far, graph.ints(0))


def _bilm(graph: _Builder, model: ElmoModel, input_ids: str, word_mask: str, num_layers: int) -> list[str]:
    """The biLM's first `num_layers + 1` layers over the words of `word_mask` (`_word_mask`), each (batch, words, 2P)
    and zero at padding, as `ElmoModel.forward`; the ids past a sentence's words are not read. The rows run longest
    first, as `ElmoModel`'s LSTMs run them (so that each step's running rows come first: `_lstm_layer`), and come
    out in the order they came in."""
    order, restore = _longest_first(graph, word_mask)
    sorted_ids = graph.op("Gather", input_ids, order, axis=0)
    sorted_mask = graph.op("Gather", word_mask, order, axis=0)
    token, marked_mask = _token_layer(graph, model, sorted_ids, sorted_mask)
    layers = [graph.op("Concat", token, token, axis=2), *_bilstm(graph, model, token, marked_mask, num_layers)]

    # Drop the markers' positions (word i sits at i + 1), zero the padding, and put the rows back in order.
    word_mask3 = graph.unsqueeze(sorted_mask, 2)
    trimmed = []
    for layer in layers:
        words_only = graph.op("Slice", layer, graph.ints(1), graph.ints(-1), graph.ints(1))
        zeroed = graph.op("Where", word_mask3, words_only, graph.scalar(0.0))
        trimmed.append(graph.op("Gather", zeroed, restore, axis=0))
    return trimmed


def _longest_first(graph: _Builder, word_mask: str) -> tuple[str, str]:
    """The rows' order longest first (`order` (batch,): the row taken i-th; equal lengths keep their order, as
    TopK's ties do) and the way back (`restore` (batch,): where row r went), both int64."""
    lengths = graph.op("ReduceSum", graph.op("Cast", word_mask, to=TensorProto.INT64), graph.ints(1), keepdims=0)
    batch = graph.dim(word_mask, 0)
    _, order = graph.op("TopK", lengths, batch, outputs=2, axis=0, largest=1, sorted=1)
    taken = _range(graph, batch)
    restore = graph.op("ScatterElements", taken, order, taken, axis=0)
    return order, restore


def _token_layer(graph: _Builder, model: ElmoModel, input_ids: str, word_mask: str) -> tuple[str, str]:
    """The token layer over each marked sentence (<S>, the words, </S> right after the last word): its vectors
    (batch, T = words + 2, P), zero past each marked sentence, and the marked sentences' mask (batch, T) bool."""
    config = model.config
    chars = config.max_characters_per_token
    mask_ints = graph.op("Cast", word_mask, to=TensorProto.INT64)
    lengths = graph.op("ReduceSum", mask_ints, graph.ints(1), keepdims=0)  # (batch,)
    batch = graph.dim(input_ids, 0)
    marker_shape = graph.op("Concat", batch, graph.ints(1, chars), axis=0)

    def marker(which: str) -> str:
        ids = framed_char_ids([config.special_char_ids[which]], config.special_char_ids, chars)
        return graph.constant(np.array(ids, dtype=np.int64).reshape(1, 1, chars), name=MARKER_CHAR_IDS[which])

    words = graph.op("Mul", input_ids, graph.unsqueeze(mask_ints, 2))
    empty = graph.op("Expand", graph.constant(np.zeros((1, 1, chars), np.int64)), marker_shape)
    marked = graph.op("Concat", graph.op("Expand", marker("bos"), marker_shape), words, empty, axis=1)
    steps = graph.op("Add", graph.dim(input_ids, 1), graph.ints(2))
    positions = graph.unsqueeze(_range(graph, steps), 0)  # (1, T)
    after_words = graph.unsqueeze(graph.op("Add", lengths, graph.ints(1)), 1)  # (batch, 1): </S>'s position
    is_eos = graph.unsqueeze(graph.op("Equal", positions, after_words), 2)
    marked = graph.op("Where", is_eos, marker("eos"), marked)
    marked_mask = graph.op("Less", positions, graph.op("Add", after_words, graph.ints(1)))  # (batch, T)

    flat = graph.op("Reshape", marked, graph.ints(-1, chars), output=TOKEN_CHAR_IDS)
    vectors = _char_encoder(graph, model, flat)
    token_shape = graph.op("Concat", batch, steps, graph.ints(config.projection_dim), axis=0)
    token = graph.op("Reshape", vectors, token_shape)
    return graph.op("Where", graph.unsqueeze(marked_mask, 2), token, graph.scalar(0.0)), marked_mask


def _range(graph: _Builder, size: str) -> str:
    """0, 1, ..., size - 1 (int64) for a (1,) int64 `size`."""
    zero, one = (graph.constant(np.array(value, dtype=np.int64)) for value in (0, 1))
    return graph.op("Range", zero, graph.op("Squeeze", size), one)


def _bilstm(graph: _Builder, model: ElmoModel, token: str, marked_mask: str, num_layers: int) -> list[str]:
    """The first `num_layers` biLSTM layers over the `token` layer (batch, T, P) of rows sorted longest first, each
    (batch, T, 2P) (the forward and backward stacks' outputs side by side; anything past a row's marked sentence).

    The backward stack reads each row's marked sentence reversed, padding left in place, so that in both directions
    a row's positions come first, and step t runs the rows longer than t: the first `counts[t]` rows. The LSTM's
    input products run on those positions only (a third of a batch of sentences of 10-30 words is padding), taken
    time-major: step t's input gates are positions `starts[t]` to `ends[t]` of them."""
    config = model.config
    forward_input = graph.op("Transpose", token, perm=[1, 0, 2])  # (T, batch, P)
    positions = graph.unsqueeze(_range(graph, graph.dim(token, 1)), 0)  # (1, T)
    marked_lengths = graph.op("ReduceSum", graph.op("Cast", marked_mask, to=TensorProto.INT64), graph.ints(1))
    from_end = graph.op("Sub", graph.op("Sub", marked_lengths, graph.ints(1)), positions)  # (batch, T)
    reversing = graph.op("Where", graph.op("GreaterOrEqual", from_end, graph.ints(0)), from_end, positions)
    reversing = graph.op(
        "Expand", graph.unsqueeze(graph.op("Transpose", reversing), 2), graph.op("Shape", forward_input)
    )
    backward_input = graph.op("GatherElements", forward_input, reversing, axis=0)

    by_step = graph.op("Reshape", graph.op("Transpose", marked_mask), graph.ints(-1))  # (T * batch,)
    running = graph.op("Transpose", graph.op("NonZero", by_step))  # (positions, 1)
    counts = graph.op("ReduceSum", graph.op("Cast", marked_mask, to=TensorProto.INT64), graph.ints(0), keepdims=0)
    ends = graph.op("CumSum", counts, graph.constant(np.array(0, dtype=np.int64)))
    steps = {"starts": graph.op("Sub", ends, counts), "ends": ends, "counts": counts}
    steps = {name: graph.unsqueeze(value, 1) for name, value in steps.items()}  # (T, 1): a (1,) tensor per step

    batch = graph.dim(token, 0)
    zeros = {
        width: graph.op("ConstantOfShape", graph.op("Concat", batch, graph.ints(width), axis=0))
        for width in (config.projection_dim, config.cell_size)
    }
    stack_inputs, layers = [forward_input, backward_input], []
    for index in range(num_layers):
        pair = (model.forward_lstm.layers[index], model.backward_lstm.layers[index])
        state = zeros[config.projection_dim], zeros[config.cell_size]
        pairs = zip(pair, stack_inputs, strict=True)
        outputs = [_lstm_layer(graph, layer, x, running, steps, state) for layer, x in pairs]
        if index > 0 and config.use_skip_connections:
            outputs = [graph.op("Add", output, x) for output, x in zip(outputs, stack_inputs, strict=True)]
        stack_inputs = outputs
        forward = graph.op("Transpose", outputs[0], perm=[1, 0, 2])
        backward = graph.op("Transpose", graph.op("GatherElements", outputs[1], reversing, axis=0), perm=[1, 0, 2])
        layers.append(graph.op("Concat", forward, backward, axis=2))
    return layers


def _char_encoder(graph: _Builder, model: ElmoModel, char_ids: str) -> str:
    """`ElmoCharacterEncoder` over char ids (N, chars) -> token vectors (N, P), each distinct word encoded once."""
    encoder = model.char_encoder
    distinct, _, inverse, _ = graph.op("Unique", char_ids, outputs=4, axis=0)
    # Gather reads a negative index from the end of the table: a negative id would be a character. It is made the
    # first id past the table instead, so that it fails the run as an id over the table's last does (`ElmoModel`
    # refuses both too).
    rows = encoder.char_embedding.num_embeddings
    in_table = graph.op("Where", graph.op("Less", distinct, graph.ints(0)), graph.ints(rows), distinct)
    embedded = graph.op("Gather", graph.constant(encoder.char_embedding.weight, "char_embedding"), in_table)
    embedded = graph.op("Transpose", embedded, perm=[0, 2, 1])  # (U, E, chars)
    activation = "Relu" if model.config.char_cnn_activation == "relu" else "Tanh"
    features = []
    for convolution in encoder.convolutions:
        convolved = graph.op(
            "Conv", embedded, graph.constant(convolution.weight, "conv_weight"), graph.constant(convolution.bias)
        )
        features.append(graph.op(activation, graph.op("ReduceMax", convolved, axes=[2], keepdims=0)))
    x = graph.op("Concat", *features, axis=1)
    for highway in encoder.highways:
        gate = graph.op("Sigmoid", graph.linear(x, highway.carry.weight, highway.carry.bias, name=QUANTIZABLE_PREFIX))
        transformed = graph.op(
            "Relu", graph.linear(x, highway.transform.weight, highway.transform.bias, name=QUANTIZABLE_PREFIX)
        )
        carried = graph.op("Mul", graph.op("Sub", graph.scalar(1.0), gate), x)
        x = graph.op("Add", graph.op("Mul", gate, transformed), carried)
    projected = graph.linear(x, encoder.projection.weight, encoder.projection.bias, name=QUANTIZABLE_PREFIX)
    return graph.op("Gather", projected, inverse, output=TOKEN_VECTORS)


def _lstm_layer(
    graph: _Builder, layer: ElmoLstmLayer, inputs: str, running: str, steps: dict[str, str], state: tuple[str, str]
) -> str:
    """One `ElmoLstmLayer` over its time-major `inputs` (T, batch, P), rows sorted longest first, from `state` (h0,
    c0) -> its outputs (T, batch, P), before any skip connection (past a row's end: its last output). One product
    for the input gates of the `running` positions ((positions, 1) indices into T * batch), then a `Scan` over the
    steps computing only the rows still running, as `ElmoModel`'s LSTMs do: step t takes input gates `starts[t]` to
    `ends[t]` and updates the first `counts[t]` rows of the state, which keeps its (batch, ...) shape (`steps`: each
    (T, 1) int64).

    Each direction of each layer has its own loop, as PyTorch's layer-by-layer schedule on CPUs: its state and output
    weights stay in the CPU's caches from step to step (one loop for both directions took 8% longer at the original
    shape, batch 32, onnxruntime 1.32 on one thread). They are the loop body's own initializers rather than the outer
    graph's (7% faster there)."""
    by_position = graph.op("Reshape", inputs, graph.ints(-1, layer.input_projection.in_features))
    picked = graph.op("GatherND", by_position, running)
    input_gates = graph.linear(picked, layer.input_projection.weight, layer.gate_bias(), name=QUANTIZABLE_PREFIX)
    body = _Builder(graph.names)
    h, c, start, end, count = (body.fresh(name) for name in ("h", "c", "start", "end", "count"))
    first, rest, axis = body.ints(0), body.ints(np.iinfo(np.int64).max), body.ints(0)
    gates = body.op("Slice", input_gates, start, end, axis)  # (count, 4C), from the graph around the loop
    h_running, c_running = (body.op("Slice", x, first, count, axis) for x in (h, c))
    h_running, c_running = _lstm_cell(graph, body, layer, gates, h_running, c_running)
    h_next, c_next = (
        body.op("Concat", running_rows, body.op("Slice", x, count, rest, axis), axis=0)
        for running_rows, x in ((h_running, h), (c_running, c))
    )
    step_inputs = {h: TensorProto.FLOAT, c: TensorProto.FLOAT, start: TensorProto.INT64, end: TensorProto.INT64}
    step_inputs[count] = TensorProto.INT64
    step_outputs = [h_next, c_next, body.op("Identity", h_next)]
    body_graph = helper.make_graph(
        body.nodes,
        graph.fresh("lstm_step"),
        [helper.make_tensor_value_info(name, element, None) for name, element in step_inputs.items()],
        [helper.make_tensor_value_info(name, TensorProto.FLOAT, None) for name in step_outputs],
        body.initializers,
    )
    scanned = (steps["starts"], steps["ends"], steps["counts"])
    return graph.op("Scan", *state, *scanned, outputs=3, body=body_graph, num_scan_inputs=len(scanned))[2]


def _lstm_cell(
    graph: _Builder, body: _Builder, layer: ElmoLstmLayer, input_gates: str, h: str, c: str
) -> tuple[str, str]:
    """One step of `layer`'s cell (bilm-tf's: gates i, j, f, o, cell clip, projection, projection clip) in the loop
    body `body`, from the step's `input_gates` and the state (`h`, `c`) of the rows it runs -> their new (h, c)."""
    # The state product is added to the input gates, as torch.addmm(input_gates, h, W_state.T).
    state_weight = body.constant(layer.state_projection.weight.T, "state_weight")
    gates = body.op("Add", input_gates, body.op("MatMul", h, state_weight, name=QUANTIZABLE_PREFIX))
    i, j, f, o = body.op("Split", gates, outputs=4, axis=1)
    c = body.op(
        "Add",
        body.op("Mul", body.op("Sigmoid", f), c),
        body.op("Mul", body.op("Sigmoid", i), body.op("Tanh", j)),
    )
    if layer.cell_clip is not None:
        c = body.op("Clip", c, graph.scalar(-layer.cell_clip), graph.scalar(layer.cell_clip))
    hidden = body.op("Mul", body.op("Sigmoid", o), body.op("Tanh", c))
    output_weight = body.constant(layer.output_projection.weight.T, "output_weight")
    h = body.op("MatMul", hidden, output_weight, name=QUANTIZABLE_PREFIX)
    if layer.proj_clip is not None:
        h = body.op("Clip", h, graph.scalar(-layer.proj_clip), graph.scalar(layer.proj_clip))
    return h, c


def _head(graph: _Builder, model: ElmoTaskModel, layers: list[str], word_mask: str) -> str:
    """A task head's logits over the biLM's `layers`, as `ElmoTaskModel._features` and its subclasses' forward."""
    config = model.config
    mask = graph.unsqueeze(graph.op("Cast", word_mask, to=TensorProto.FLOAT), 2)  # (batch, words, 1)
    mixed_layers = [layers[index] for index in config.mixed_layers]
    representations = [_mix(graph, mix, mixed_layers, mask) for mix in model.mixes]
    features = representations[0]
    if model.task_encoder is not None:
        features = _task_encoder(graph, model.task_encoder, features, word_mask)
    if len(representations) > 1:
        features = graph.op("Concat", features, representations[1], axis=2)
    features = graph.op("Mul", features, mask)
    if isinstance(model, ElmoForTokenClassification):
        return graph.linear(features, model.classifier.weight, model.classifier.bias, name="classifier")
    # Max over each sentence's words; a floor row keeps the max defined without words, where the result is 0.
    lowest = graph.scalar(float(torch.finfo(torch.float32).min))
    masked = graph.op("Where", graph.unsqueeze(word_mask, 2), features, lowest)
    floor_shape = graph.op("Concat", graph.dim(features, 0), graph.ints(1), graph.dim(features, 2), axis=0)
    floor = graph.op("Expand", lowest, floor_shape)
    pooled = graph.op("ReduceMax", graph.op("Concat", masked, floor, axis=1), axes=[1], keepdims=0)
    words = graph.op("ReduceSum", graph.op("Cast", word_mask, to=TensorProto.INT64), graph.ints(1), keepdims=1)
    has_words = graph.op("Greater", words, graph.ints(0))  # (batch, 1)
    pooled = graph.op("Where", has_words, pooled, graph.scalar(0.0))
    return graph.linear(pooled, model.classifier.weight, model.classifier.bias, name="classifier")


def _mix(graph: _Builder, mix: ElmoLayerMix, layers: list[str], mask: str) -> str:
    """`ElmoLayerMix` (eval mode) over `layers` (batch, words, D), `mask` (batch, words, 1) float."""
    if mix.mode == "concat":
        mixed = graph.op("Concat", *layers, axis=2)
    elif mix.mode == "layer":
        (mixed,) = layers
    elif mix.mode == "average":
        mixed = graph.op(
            "ReduceMean", graph.op("Concat", *(graph.unsqueeze(x, 0) for x in layers), axis=0), axes=[0], keepdims=0
        )
    elif mix.mode == "scalar_mix":
        if mix.layer_norm:
            layers = [_masked_layer_norm(graph, layer, mask) for layer in layers]
        weights = torch.softmax(mix.mix_weights, dim=0)
        pairs = zip(weights, layers, strict=True)
        terms = [graph.op("Mul", graph.scalar(float(weight)), layer) for weight, layer in pairs]
        total = terms[0]
        for term in terms[1:]:
            total = graph.op("Add", total, term)
        mixed = graph.op("Mul", graph.scalar(float(mix.mix_gamma)), total)
    else:  # per_token
        stacked = graph.op("Concat", *(graph.unsqueeze(x, 2) for x in layers), axis=2)  # (batch, words, layers, D)
        scores = graph.linear(stacked, mix.mix_scorer.weight, mix.mix_scorer.bias, name="mix_scorer")
        weights = graph.op("Softmax", scores, axis=2)
        summed = graph.op("ReduceSum", graph.op("Mul", weights, stacked), graph.ints(2), keepdims=0)
        mixed = graph.op("Mul", graph.scalar(float(mix.mix_gamma)), summed)
    return graph.op("Mul", mixed, mask)


def _masked_layer_norm(graph: _Builder, layer: str, mask: str, eps: float = 1e-12) -> str:
    """`masked_layer_norm`: one mean and variance over all words of the batch and all features."""
    width = graph.op("Cast", graph.dim(layer, 2), to=TensorProto.FLOAT)
    count = graph.op("Mul", graph.op("ReduceSum", graph.op("Expand", mask, graph.op("Shape", mask)), keepdims=0), width)
    mean = graph.op("Div", graph.op("ReduceSum", graph.op("Mul", layer, mask), keepdims=0), count)
    centred = graph.op("Sub", layer, mean)
    squared = graph.op("Mul", centred, mask)
    variance = graph.op("Div", graph.op("ReduceSum", graph.op("Mul", squared, squared), keepdims=0), count)
    return graph.op("Div", centred, graph.op("Sqrt", graph.op("Add", variance, graph.scalar(eps))))


def _task_encoder(graph: _Builder, lstm: torch.nn.LSTM, features: str, word_mask: str) -> str:
    """The head's bidirectional `nn.LSTM` over each sentence's words (packed: each direction reads only the
    words), as ONNX `LSTM` operators -> (batch, words, 2H). An empty sentence runs over one zero vector, as the
    head does (its outputs are masked): a zero step after the words keeps at least one."""
    hidden = lstm.hidden_size
    lengths = graph.op("ReduceSum", graph.op("Cast", word_mask, to=TensorProto.INT32), graph.ints(1), keepdims=0)
    lengths = graph.op("Max", lengths, graph.constant(np.array(1, dtype=np.int32)))
    pad_shape = graph.op("Concat", graph.dim(features, 0), graph.ints(1), graph.dim(features, 2), axis=0)
    x = graph.op("Concat", features, graph.op("ConstantOfShape", pad_shape), axis=1)
    x = graph.op("Transpose", x, perm=[1, 0, 2])  # (T + 1, batch, F)
    order = [0, 3, 1, 2]  # torch's gate blocks i, f, g, o -> ONNX's i, o, f, c

    def gate_blocks(weight: torch.Tensor) -> torch.Tensor:
        return torch.cat([weight.chunk(4)[block] for block in order])

    for index in range(lstm.num_layers):
        directions = ["", "_reverse"]
        w = torch.stack([gate_blocks(getattr(lstm, f"weight_ih_l{index}{suffix}")) for suffix in directions])
        r = torch.stack([gate_blocks(getattr(lstm, f"weight_hh_l{index}{suffix}")) for suffix in directions])
        b = torch.stack(
            [
                torch.cat([gate_blocks(getattr(lstm, f"bias_{kind}_l{index}{suffix}")) for kind in ("ih", "hh")])
                for suffix in directions
            ]
        )
        y = graph.op(
            "LSTM",
            x,
            graph.constant(w),
            graph.constant(r),
            graph.constant(b),
            lengths,
            direction="bidirectional",
            hidden_size=hidden,
        )  # (T + 1, 2, batch, H)
        y = graph.op("Transpose", y, perm=[0, 2, 1, 3])
        x = graph.op("Reshape", y, graph.ints(0, 0, 2 * hidden))
    encoded = graph.op("Transpose", x, perm=[1, 0, 2])
    return graph.op("Slice", encoded, graph.ints(0), graph.ints(-1), graph.ints(1))
