"""`elmo-convert onnx --quantize int8`: the graph's large products with 8-bit weights and 7-bit activations, each row
of activations (one word, or one sentence's state at one step) quantised with a scale of its own.

A product `x @ W` becomes, in standard ONNX operators (the default domain's opset of the graph):

    s = max(|x|, axis=-1) / 63                             one scale per row of x (rows, K), from that row alone
    xq = QuantizeLinear(x, s, 64, axis=0)                  uint8: round(x / s) + 64, the row in [1, 127]
    y = float(MatMulInteger(xq, Wq, 64, 0)) * sw * s       Wq int8: round(W / sw) in [-127, 127], sw one scale per
                                                           output column

Every step reads only its own row of `x`, and the integer product is exact on every CPU, so a sentence's vectors
are the same to the bit alone and in any batch. The activations have 7 bits, not 8: onnxruntime's u8 x s8 kernel on
x86 without VNNI (AVX2's `vpmaddubsw`) adds two u8 * s8 products into a saturating int16, and activations below 128
keep every such pair within it (2 x 127 x 127 = 32,258 < 32,767), where 8-bit ones (255 * 127 * 2) clipped sums; with
VNNI (`vpdpbusd`, int32 sums) the same product runs 1.6-1.8x as fast as the u8 x u8 one exact on both, which this
graph used before (docs/onnx.md, "int8 at the CPU's limit: 7-bit activations"). onnxruntime's dynamic quantisation
(`DynamicQuantizeLinear`) takes one scale over the whole tensor, so its vectors moved with their batch mates (2.3e-2
on the bundled biLM); its weight-only `MatMulNBits` (com.microsoft) is batch-independent too but ran at 0.57-0.75x
this graph's int8-weight form's speed at the original shape (docs/onnx.md, "int8 three ways").
"""

from __future__ import annotations

from collections.abc import Collection
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from .graph_layout import QUANTIZABLE_PREFIX, save_graph

__all__ = ["product_node_names", "quantize_graph", "quantize_rows"]

_WEIGHT_LEVELS = 127  # symmetric: weights in [-127, 127] steps, stored as int8 (zero point 0)
# Activations in [-63, 63] steps around the uint8 zero point 64, so in [1, 127]: below 128, so that AVX2's pairwise
# u8 x s8 sums stay within an int16 (the module docstring).
_ACTIVATION_LEVELS = 63
_ACTIVATION_ZERO_POINT = 64


def product_node_names(graph) -> list[str]:
    """The names of the product nodes `--quantize int8` quantises (`graph_layout.QUANTIZABLE_PREFIX`: the LSTM's input,
    state and output projections, the highway layers and the token projection), in the graph and its loops."""
    names, graphs = [], [graph.graph]
    while graphs:
        current = graphs.pop()
        for node in current.node:
            if node.name.startswith(QUANTIZABLE_PREFIX):
                names.append(node.name)
            graphs.extend(attribute.g for attribute in node.attribute if attribute.HasField("g"))
    return names


def quantize_graph(source: Path, target: Path) -> None:
    """The int8 graph of the float graph at `source`, written to `target`: its large products (`product_node_names`)
    with 8-bit weights and 7-bit activations, each row of activations quantised by itself (`quantize_rows`), so
    that a sentence gets the same vectors alone and in any batch; every other operator stays float32."""
    graph = onnx.load(str(source))  # (its weights too, from beside it: onnx before 1.15 finds them from a str only)
    quantize_rows(graph, product_node_names(graph))
    save_graph(graph, target)


def quantize_rows(model: onnx.ModelProto, products: Collection[str]) -> None:
    """Rewrite, in place, each MatMul of `model` named in `products` (in the graph or its loops) whose second input is
    a weight (an initializer of its graph or of a graph around it) as the row-quantised product above."""
    _rewrite(model.graph, [], set(products))


def _rewrite(graph: onnx.GraphProto, outer: list[onnx.GraphProto], products: set[str]) -> None:
    scope = [*outer, graph]
    nodes: list[onnx.NodeProto] = []
    for node in graph.node:
        for attribute in node.attribute:
            if attribute.HasField("g"):
                _rewrite(attribute.g, scope, products)
        nodes.extend(_row_quantised(node, scope) if node.name in products else [node])
    graph.ClearField("node")
    graph.node.extend(nodes)


def _row_quantised(product: onnx.NodeProto, scope: list[onnx.GraphProto]) -> list[onnx.NodeProto]:
    """The nodes replacing `product` (x @ W); W's float initializer becomes its int8 values and column scales."""
    if product.op_type != "MatMul":
        raise ValueError(f"{product.name}: a {product.op_type}, not a MatMul, is named as a product to quantise")
    x, weight_name = product.input
    rows = _quantise_weight(product.name, weight_name, scope)
    scope[-1].initializer.extend(_constants(product.name, rows))
    return _product_nodes(product, x, weight_name)


def _quantise_weight(name: str, weight_name: str, scope: list[onnx.GraphProto]) -> int:
    """Replace the float initializer `weight_name` (in the innermost graph of `scope` that holds it) by its int8
    levels and column scales; returns its number of rows (the product's inner size)."""
    owner = next((graph for graph in reversed(scope) if _initializer(graph, weight_name) is not None), None)
    if owner is None:
        raise ValueError(f"{name}: its weight {weight_name} is not an initializer")
    weight = _initializer(owner, weight_name)
    values = numpy_helper.to_array(weight)
    owner.initializer.remove(weight)
    column_scales = np.maximum(np.abs(values).max(axis=0), np.finfo(np.float32).tiny) / _WEIGHT_LEVELS
    owner.initializer.extend(
        [
            numpy_helper.from_array(np.round(values / column_scales).astype(np.int8), f"{weight_name}_int8"),
            numpy_helper.from_array(column_scales.astype(np.float32), f"{weight_name}_scale"),
        ]
    )
    return values.shape[0]


def _constants(name: str, rows: int) -> list[onnx.TensorProto]:
    """The constants the nodes of product `name` read, `rows` its inner size (the width of its zero row)."""
    return [
        numpy_helper.from_array(np.array(_ACTIVATION_LEVELS, np.float32), f"{name}_levels"),
        numpy_helper.from_array(np.array(np.finfo(np.float32).tiny, np.float32), f"{name}_tiny"),
        numpy_helper.from_array(np.array(_ACTIVATION_ZERO_POINT, np.uint8), f"{name}_zero"),
        numpy_helper.from_array(np.array([_ACTIVATION_ZERO_POINT], np.uint8), f"{name}_zero_1d"),
        numpy_helper.from_array(np.array(0, np.int8), f"{name}_weight_zero"),
        numpy_helper.from_array(np.array([1], np.int64), f"{name}_column_axis"),
        numpy_helper.from_array(np.zeros((1, rows), np.float32), f"{name}_zero_row"),
        numpy_helper.from_array(np.array([0], np.int64), f"{name}_first"),
        numpy_helper.from_array(np.array([-1], np.int64), f"{name}_last"),
    ]


def _product_nodes(product: onnx.NodeProto, x: str, weight_name: str) -> list[onnx.NodeProto]:
    """The row-quantised product's nodes, in the order the module docstring writes them, ending in `product`'s
    output."""
    name = product.name
    padded = f"{name}_padded"

    def step(op_type: str, inputs: list[str], suffix: str, **attributes) -> onnx.NodeProto:
        return helper.make_node(op_type, inputs, [f"{name}_{suffix}"], name=f"{name}_{suffix}", **attributes)

    return [
        # One row of zeros more, dropped at the end: onnxruntime before 1.32 fails on the per-row ops below for a
        # product of no rows (a loop step that no sentence reaches: an attention_mask of zeros). The zero row is its
        # own: the other rows' values are the same with it.
        step("Concat", [x, f"{name}_zero_row"], "padded", axis=0),
        step("Abs", [padded], "magnitude"),
        step("ReduceMax", [f"{name}_magnitude"], "row_max", axes=[-1], keepdims=0),
        step("Max", [f"{name}_row_max", f"{name}_tiny"], "row_max_positive"),  # a row of zeros stays zeros
        step("Div", [f"{name}_row_max_positive", f"{name}_levels"], "row_scale"),
        step("Shape", [padded], "rows", end=1),
        step("Expand", [f"{name}_zero_1d", f"{name}_rows"], "row_zeros"),
        # One op for divide, round (half to even), shift and cast: 3 passes over x fewer than written out.
        step("QuantizeLinear", [padded, f"{name}_row_scale", f"{name}_row_zeros"], "uint8", axis=0),
        helper.make_node(
            "MatMulInteger",
            [f"{name}_uint8", f"{weight_name}_int8", f"{name}_zero", f"{name}_weight_zero"],
            [f"{name}_int32"],
            name=name,
        ),
        step("Cast", [f"{name}_int32"], "sum", to=TensorProto.FLOAT),
        # The column scales first, then the row scales: onnxruntime fuses MatMulInteger -> Cast -> Mul(a_scale *
        # b_scale) into one MatMulIntegerToFloat, made for its dynamic quantisation's one scale over the whole tensor.
        # With a scale per row in that form, the bundled biLM's per-word cosine to float32 was 0.86 (0.99996 unfused).
        step("Mul", [f"{name}_sum", f"{weight_name}_scale"], "columns_restored"),
        step("Unsqueeze", [f"{name}_row_scale", f"{name}_column_axis"], "row_scale_column"),
        step("Mul", [f"{name}_columns_restored", f"{name}_row_scale_column"], "restored"),
        helper.make_node(
            "Slice",
            [f"{name}_restored", f"{name}_first", f"{name}_last"],
            [product.output[0]],
            name=f"{name}_real_rows",
        ),
    ]


def _initializer(graph: onnx.GraphProto, name: str) -> onnx.TensorProto | None:
    return next((tensor for tensor in graph.initializer if tensor.name == name), None)
