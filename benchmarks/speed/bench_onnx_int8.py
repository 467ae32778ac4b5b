"""The int8 graph of `elmo-convert onnx --quantize int8` (each row of activations quantised by itself) against its
former u8 x u8 form and the two int8 forms onnxruntime's own quantisers give for the same products, in one run: words
per second (with PyTorch float32 and the float32 graph, every batch on each backend in turn), a sentence alone against
the same sentence in a batch, and the per-word cosine to the float32 graph on held-out text.

- `int8 (per row)`: the export's `model_quantized.onnx` (`serving/int8_graph.py`: 7-bit activations by int8 weights);
- `int8 u8 x u8 (former)`: the same graph with 8-bit activations around 128 by the same weights as uint8 around 128,
  the export's int8 graph before issue 52;
- `int8 dynamic`: onnxruntime's `quantize_dynamic` (int8 weights per column, one activation scale per call over
  the whole batch: `DynamicQuantizeLinear`), what `--quantize int8` wrote before;
- `int8 MatMulNBits`: onnxruntime's weight-only `MatMulNBitsQuantizer` (8 bits, blocks of 32, symmetric,
  `accuracy_level` 4: activations quantised per row block; the com.microsoft domain; it needs the `onnx-ir` package,
  `pip install onnx-ir`, from onnxruntime 1.24 on; left out, with a line saying so, where it is missing).

    python benchmarks/speed/bench_onnx_int8.py --batches 1:4,32:3 \\
        --held-out ~/.cache/elmo-transformers-tests/allennlp-0.9.0-fixtures/elmo/sentences.json

The model: random weights of a released shape (default the original) as in `bench_onnx.py`, or `--bundled`.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import logging
import os
from pathlib import Path

import numpy as np
import onnx
import torch
from harness_backends import add_onnx_arguments, encode_batch, graph_backends, onnx_folders, open_graphs
from harness_reports import cpu_and_load, cpu_flags, markdown_table
from harness_timing import SPEED_HEADER, speed_rows
from onnx import numpy_helper

from elmo_transformers.common.parity_sentences import PARITY_SENTENCES
from elmo_transformers.serving.export_measurements import batch_difference, graph_cosine
from elmo_transformers.serving.graph_layout import FLOAT_GRAPH, QUANTIZED_GRAPH, graph_bytes, save_graph
from elmo_transformers.serving.int8_graph import product_node_names
from modeling_elmo import ElmoTokenizer

DYNAMIC_GRAPH, NBITS_GRAPH, U8_BY_U8_GRAPH = "model_dynamic.onnx", "model_nbits.onnx", "model_u8u8.onnx"


def _former_u8_by_u8(folder: Path) -> None:
    """The folder's int8 graph as `--quantize int8` wrote it before issue 52, written beside it once: each row of
    activations in [-127, 127] steps around the uint8 zero point 128 (not [-63, 63] around 64), and the same weight
    levels as uint8 around 128 (MatMulInteger's four inputs uint8)."""
    if (folder / U8_BY_U8_GRAPH).is_file():
        return
    graph = onnx.load(str(folder / QUANTIZED_GRAPH))
    graphs, tensors, products = [graph.graph], {}, []
    while graphs:
        current = graphs.pop()
        tensors.update((tensor.name, tensor) for tensor in current.initializer)
        products.extend(node for node in current.node if node.op_type == "MatMulInteger")
        graphs.extend(attribute.g for node in current.node for attribute in node.attribute if attribute.HasField("g"))
    for product in products:
        _, weight, zero, weight_zero = product.input
        levels = numpy_helper.to_array(tensors[weight]).astype(np.int16) + 128
        tensors[weight].CopyFrom(numpy_helper.from_array(levels.astype(np.uint8), weight))
        tensors[weight_zero].CopyFrom(numpy_helper.from_array(np.array(128, np.uint8), weight_zero))
        for name, value in ((zero, 128), (f"{product.name}_zero_1d", [128])):
            tensors[name].CopyFrom(numpy_helper.from_array(np.array(value, np.uint8), name))
        levels_name = f"{product.name}_levels"
        tensors[levels_name].CopyFrom(numpy_helper.from_array(np.array(127, np.float32), levels_name))
    save_graph(graph, folder / U8_BY_U8_GRAPH)


def _onnxruntime_quantised(folder: Path) -> bool:
    """The dynamic and the MatMulNBits graphs of the folder's float graph, written beside it once; whether the
    MatMulNBits graph is there (its quantiser needs the `onnx-ir` package)."""
    logging.getLogger().setLevel(logging.ERROR)  # both quantisers log every node on the root logger
    if not (folder / DYNAMIC_GRAPH).is_file():
        from onnxruntime.quantization import QuantType, quantize_dynamic

        quantize_dynamic(
            folder / FLOAT_GRAPH,
            folder / DYNAMIC_GRAPH,
            weight_type=QuantType.QInt8,
            per_channel=True,
            op_types_to_quantize=["MatMul"],
            nodes_to_quantize=product_node_names(onnx.load(folder / FLOAT_GRAPH, load_external_data=False)),
            extra_options={"EnableSubgraph": True},
        )
    if not (folder / NBITS_GRAPH).is_file():
        try:
            from onnxruntime.quantization.matmul_nbits_quantizer import (
                DefaultWeightOnlyQuantConfig,
                MatMulNBitsQuantizer,
            )
        except ModuleNotFoundError as missing:  # onnx-ir, from onnxruntime 1.24 on: not one of the project's extras
            print(f"int8 MatMulNBits left out: onnxruntime's quantiser needs {missing.name} (pip install onnx-ir)")
            return False

        graph = onnx.load(str(folder / FLOAT_GRAPH))
        products = set(product_node_names(graph))
        config = DefaultWeightOnlyQuantConfig(
            block_size=32, is_symmetric=True, accuracy_level=4, op_types_to_quantize=("MatMul",), bits=8
        )
        quantizer = MatMulNBitsQuantizer(graph, nodes_to_exclude=_other_products(graph, products), algo_config=config)
        quantizer.process()
        onnx.save(quantizer.model.model, folder / NBITS_GRAPH)
    return True


def _other_products(graph: onnx.ModelProto, products: set[str]) -> list[str]:
    """The MatMul nodes, in the graph and its loops, that are not the export's products (the heads' own)."""
    names, graphs = [], [graph.graph]
    while graphs:
        current = graphs.pop()
        for node in current.node:
            if node.op_type == "MatMul" and node.name not in products:
                names.append(node.name)
            graphs.extend(attribute.g for attribute in node.attribute if attribute.HasField("g"))
    return names


def _held_out(path: Path | None) -> list[list[str]]:
    """bilm-tf's test sentences (a JSON list of batches of sentences), split on spaces; else the parity sentences."""
    if path is None:
        return PARITY_SENTENCES
    return [sentence.split() for batch in json.loads(path.read_text(encoding="utf-8")) for sentence in batch]


def _quality(graphs: dict, sizes: dict[str, float], tokenizer, held_out, batches: list) -> list[list[str]]:
    """Each graph's row: its largest difference between a sentence alone and in its batch (over `batches`), its
    per-word cosine to the float32 graph on `held_out` (mean, min), and its size in MB."""
    rows = []
    for label, session in graphs.items():
        mean, minimum = graph_cosine(graphs["onnxruntime float32"], session, tokenizer, held_out)
        alone = max(batch_difference(session, tokenizer, sentences) for sentences in batches)
        rows.append([label, f"{alone:.1e}", f"{mean:.5f}", f"{minimum:.5f}", f"{sizes[label]:.1f}"])
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_onnx_arguments(parser)
    parser.add_argument("--held-out", type=Path, help="bilm-tf's sentences.json, for the cosine to float32")
    args = parser.parse_args()
    args.work_dir.mkdir(parents=True, exist_ok=True)
    torch.set_num_threads(args.threads)
    load_before = os.getloadavg()
    ort_version = importlib.metadata.version("onnxruntime")

    model_folder, folder = onnx_folders(args)
    _former_u8_by_u8(folder)
    with_nbits = _onnxruntime_quantised(folder)
    tokenizer = ElmoTokenizer.from_pretrained(model_folder)
    files = {
        "onnxruntime float32": FLOAT_GRAPH,
        "int8 (per row)": QUANTIZED_GRAPH,
        "int8 u8 x u8 (former)": U8_BY_U8_GRAPH,
        "int8 dynamic": DYNAMIC_GRAPH,
    }
    if with_nbits:
        files["int8 MatMulNBits"] = NBITS_GRAPH
    graphs = open_graphs(folder, files, args.threads)

    backends = graph_backends(model_folder, graphs)

    def encode(sentences: list[list[str]]) -> dict[str, np.ndarray]:
        return dict(encode_batch(tokenizer, sentences, return_tensors="np"))

    timed = []
    rows = speed_rows(args, backends, encode, each_size=timed.append)

    held_out = _held_out(args.held_out)
    sizes = {label: graph_bytes(folder / graph) / 1e6 for label, graph in files.items()}
    quality = _quality(graphs, sizes, tokenizer, held_out, [PARITY_SENTENCES, timed[0][0]])

    print(f"model: {model_folder}; ONNX folder: {folder}")
    print(cpu_and_load(args.threads, load_before, f"torch {torch.__version__}, onnxruntime {ort_version}"))
    print(f"the CPU's product flags: {cpu_flags()}")
    print(markdown_table(rows, SPEED_HEADER))
    print()
    words = sum(map(len, held_out))
    print(f"alone vs in a batch: the parity sentences and the first timed batch; cosine: {words} held-out words")
    print(markdown_table(quality, ["graph", "alone vs in a batch", "cosine mean", "cosine min", "graph MB"]))


if __name__ == "__main__":
    main()
