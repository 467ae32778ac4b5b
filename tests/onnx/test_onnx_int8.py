"""`--quantize int8`'s products (`serving/int8_graph.quantize_rows`) on one product, as onnxruntime runs them with
its default optimisations: each row of activations is quantised by itself, so a row's product is the same to the bit
beside any other rows, and each row is its float product to within its own quantisation steps. The first form of the
rewrite let onnxruntime fuse the product, its scales and the bias added after it into a MatMulIntegerToFloat made for
one activation scale per tensor: rows came out wrong (a cosine of -0.02 to their float product here; the bundled
biLM's per-word cosine to float32 was 0.86). The next one multiplied 8-bit uint8 activations by int8 weights, which
onnxruntime's kernel on x86 without VNNI (AVX2) sums in pairs into a saturating int16: wrong on such CPUs; then uint8
weights (u8 x u8, exact everywhere, 0.56-0.59x the u8 x s8 speed with VNNI); now 7-bit activations by int8 weights."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("onnxruntime")
import onnx
import onnxruntime
from onnx import TensorProto, helper, numpy_helper

from elmo_transformers.serving.graph_builder import OPSET
from elmo_transformers.serving.int8_graph import quantize_rows


def _product(weight: np.ndarray, name: str = "product") -> onnx.ModelProto:
    """A graph computing x @ weight + 1 (a bias added after the product, as the export's linear layers), x of any
    number of rows."""
    rows, columns = weight.shape
    graph = helper.make_graph(
        [
            helper.make_node("MatMul", ["x", "weight"], ["product"], name=name),
            helper.make_node("Add", ["product", "bias"], ["y"]),
        ],
        "product",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["rows", rows])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["rows", columns])],
        [numpy_helper.from_array(weight, "weight"), numpy_helper.from_array(np.ones(columns, np.float32), "bias")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
    model.ir_version = 8
    return model


@pytest.fixture(scope="module")
def quantized() -> tuple[onnxruntime.InferenceSession, np.ndarray]:
    weight = np.random.default_rng(0).standard_normal((512, 384)).astype(np.float32) * 0.05
    model = _product(weight)
    quantize_rows(model, ["product"])
    onnx.checker.check_model(model, full_check=True)
    assert {initializer.name for initializer in model.graph.initializer} >= {"weight_int8", "weight_scale"}
    assert "weight" not in {initializer.name for initializer in model.graph.initializer}
    return _session(model), weight


def test_a_rows_product_does_not_depend_on_the_rows_beside_it(quantized) -> None:
    session, weight = quantized
    rows = np.random.default_rng(1).standard_normal((8, weight.shape[0])).astype(np.float32)
    rows[3] *= 1000  # a row of far larger values: one scale for the tensor would coarsen every other row
    rows[5] = 0  # a row of zeros
    together = session.run(None, {"x": rows})[0]
    for row in range(len(rows)):
        assert np.array_equal(session.run(None, {"x": rows[row : row + 1]})[0][0], together[row]), row
    assert (together[5] == 1).all()  # the bias alone


def test_each_row_is_its_float_product_within_its_own_steps(quantized) -> None:
    session, weight = quantized
    rows = np.random.default_rng(2).standard_normal((6, weight.shape[0])).astype(np.float32)
    rows *= np.array([1e-3, 1, 10, 1e3, 0.5, 7], dtype=np.float32)[:, None]
    product = session.run(None, {"x": rows})[0]
    expected = rows @ weight + 1
    for row in range(len(rows)):
        cosine = product[row] @ expected[row] / np.linalg.norm(product[row]) / np.linalg.norm(expected[row])
        assert cosine > 0.9997, (row, cosine)  # 7-bit activations: the bound below is the exact check
        # each element j: |x - x'| <= s/2 per activation (s = the row's step), |w - w'| <= s_j/2 per weight (s_j
        # = column j's step), so |x @ w - x' @ w'| <= s/2 * sum|w_j| + s_j/2 * sum|x'|, with |x'| <= |x| + s/2
        step, column_steps = np.abs(rows[row]).max() / 63, np.abs(weight).max(0) / 127
        rounded_size = np.abs(rows[row]).sum() + len(rows[row]) * step / 2
        bound = (step * np.abs(weight).sum(0) + column_steps * rounded_size) / 2
        assert (np.abs(product[row] - expected[row]) <= bound * (1 + 1e-4) + 1e-6).all(), row


def _session(model: onnx.ModelProto) -> onnxruntime.InferenceSession:
    return onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])


def test_the_integer_product_is_exact_at_the_extremes_of_both_ranges() -> None:
    """Activations and weights of +-1 are their quantised values (+-63 steps: uint8 127 and 1; +-127: int8 127 and
    -127) times their scale, so x @ W is the exact integer product of the quantised values. onnxruntime's u8 x s8
    kernel without VNNI (AVX2) adds pairs of adjacent products into a saturating int16: 8-bit activations (255 * 127
    * 2 = 64,770) came out wrong there (a sum of 64 as 0.51); 7-bit ones reach 2 * 127 * 127 = 32,258 at most. The
    columns and rows below hold the pairs of largest sums of both signs."""
    rng = np.random.default_rng(3)
    weight = rng.choice(np.array([-1, 1], np.float32), (64, 8))
    weight[:, 0], weight[:, 1] = 1, -1
    rows = rng.choice(np.array([-1, 1], np.float32), (4, 64))
    rows[0], rows[1], rows[2, ::2] = 1, -1, 1
    model = _product(weight)
    quantize_rows(model, ["product"])
    inside = {"product_uint8": TensorProto.UINT8}
    model.graph.output.extend(helper.make_tensor_value_info(name, dtype, None) for name, dtype in inside.items())
    product, quantised = _session(model).run(None, {"x": rows})
    assert {int(quantised.min()), int(quantised.max())} == {1, 127}  # both ends of the activations' range
    stored = {initializer.name: numpy_helper.to_array(initializer) for initializer in model.graph.initializer}
    assert {int(stored["weight_int8"].min()), int(stored["weight_int8"].max())} == {-127, 127}
    exact = rows.astype(np.int64) @ weight.astype(np.int64) + 1
    np.testing.assert_allclose(product, exact, rtol=1e-5, atol=1e-4)


def test_the_integer_product_is_7_bit_uint8_by_int8() -> None:
    """The product's kind, named: uint8 activations (7 bits, zero point 64) by int8 weights (zero point 0). A CPU
    with VNNI computes 8-bit u8 x s8 exactly too, so the tests of values above cannot see activations widened to 8
    bits there; without VNNI (AVX2) onnxruntime's u8 x s8 kernel saturates such pairs of products into an int16."""
    model = _product(np.random.default_rng(4).standard_normal((16, 4)).astype(np.float32))
    quantize_rows(model, ["product"])
    inferred = onnx.shape_inference.infer_shapes(model, strict_mode=True)
    types = {value.name: value.type.tensor_type.elem_type for value in inferred.graph.value_info}
    types.update({initializer.name: initializer.data_type for initializer in inferred.graph.initializer})
    (product,) = [node for node in inferred.graph.node if node.op_type == "MatMulInteger"]
    assert [TensorProto.DataType.Name(types[name]) for name in product.input] == ["UINT8", "INT8", "UINT8", "INT8"]
    stored = {initializer.name: numpy_helper.to_array(initializer) for initializer in inferred.graph.initializer}
    assert stored[product.input[2]] == 64 and stored[product.input[3]] == 0


def test_a_product_that_is_not_a_matmul_of_a_weight_is_refused() -> None:
    model = _product(np.ones((4, 3), np.float32))
    del model.graph.initializer[0]  # the weight: no initializer gives it
    with pytest.raises(ValueError, match=r"product: its weight weight is not an initializer"):
        quantize_rows(model, ["product"])


def test_no_rows_give_no_rows(quantized) -> None:
    """A product with no rows (a loop step no sentence reaches, where a graph computes only the running rows)."""
    session, weight = quantized
    assert session.run(None, {"x": np.zeros((0, weight.shape[0]), np.float32)})[0].shape == (0, weight.shape[1])


def test_a_row_of_zeros_keeps_a_positive_scale_and_quantises_to_the_zero_point() -> None:
    """A row of zeros, or one whose largest value over 63 underflows float32, would get the scale 0 without the
    floor on a row's scale: QuantizeLinear then divides by 0, which onnxruntime 1.32 turns into uint8 0 (-64 past
    the zero point) or 255, and the zero scale after the product hides it but for the sign (-0.0). With the floor the
    scale stays positive and every zero is the zero point, exactly 0."""
    weight = np.random.default_rng(3).standard_normal((16, 8)).astype(np.float32)
    model = _product(weight)
    model.graph.node[1].input[1] = "zero_bias"  # no bias, so that the product's own zeros come out
    model.graph.initializer.append(numpy_helper.from_array(np.zeros(8, np.float32), "zero_bias"))
    quantize_rows(model, ["product"])
    inside = {"product_row_scale": TensorProto.FLOAT, "product_uint8": TensorProto.UINT8}
    model.graph.output.extend(helper.make_tensor_value_info(name, dtype, None) for name, dtype in inside.items())
    session = onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    rows = np.random.default_rng(4).standard_normal((4, 16)).astype(np.float32)
    rows[1] = 0
    rows[2] = 0
    rows[2, 3] = 1e-44  # a subnormal: its row's largest value over 63 is 0 in float32
    product, scales, quantised = session.run(None, {"x": rows})
    assert np.isfinite(scales).all() and (scales > 0).all(), scales
    assert (quantised[1:3] == 64).all(), quantised[1:3]
    assert (product[1:3] == 0).all() and not np.signbit(product[1:3]).any(), product[1:3]
