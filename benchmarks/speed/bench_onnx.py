"""Words per second of the exported ONNX graphs (float32 and int8, onnxruntime) against `ElmoModel` float32 in PyTorch,
side by side in one run, plus the folders' sizes and the int8 graph's per-word cosine to float32.

The model: random weights of a released shape (default the original, 2x4096_512_2048cnn_2xhighway) written as
options.json + weights.hdf5 and converted with `elmo-convert allennlp` (as `bench_inference.py` does), or the bundled
model (`--bundled`); it is exported with `elmo-convert onnx --quantize int8`. Each batch goes in longest sentence
first, as `OnnxEmbedder` gives it, and runs on each backend in turn (PyTorch, float32 graph, int8 graph), so that the
machine's load hits all three alike; the ratios are to PyTorch.

    python benchmarks/speed/bench_onnx.py --batches 32:3 --threads 1
    python benchmarks/speed/bench_onnx.py --bundled --batches 1:8,32:3,128:1
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

import numpy as np
import torch
from harness_backends import add_onnx_arguments, encode_batch, graph_backends, onnx_folders, open_graphs
from harness_reports import cpu_and_load, markdown_table
from harness_timing import SPEED_HEADER, speed_rows

from elmo_transformers.serving.export_measurements import graph_cosine
from elmo_transformers.serving.graph_layout import FLOAT_GRAPH, QUANTIZED_GRAPH, graph_bytes, graph_files
from modeling_elmo import ElmoTokenizer


def _folder_mb(folder: Path, graph: str) -> float:
    """The folder's size holding `graph` (and its weights' file) alone: the other graphs' files left out."""
    graphs = {path for name in (FLOAT_GRAPH, QUANTIZED_GRAPH) for path in graph_files(folder / name)}
    others = sum(path.stat().st_size for path in folder.iterdir() if path not in graphs)
    return (graph_bytes(folder / graph) + others) / 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_onnx_arguments(parser)
    args = parser.parse_args()
    args.work_dir.mkdir(parents=True, exist_ok=True)
    torch.set_num_threads(args.threads)
    load_before = os.getloadavg()

    model_folder, onnx_folder = onnx_folders(args)
    name = "bundled" if args.bundled else f"{args.shape}-seed{args.seed}"
    tokenizer = ElmoTokenizer.from_pretrained(model_folder)
    files = {"onnxruntime float32": FLOAT_GRAPH, "onnxruntime int8": QUANTIZED_GRAPH}
    graphs = open_graphs(onnx_folder, files, args.threads)
    backends = graph_backends(model_folder, graphs)

    def encode(sentences: list[list[str]]) -> dict[str, np.ndarray]:
        """The tokenizer's batch, longest sentence first (as `OnnxEmbedder.prepare` gives the graph its rows)."""
        by_length = sorted(sentences, key=len, reverse=True)
        return dict(encode_batch(tokenizer, by_length, return_tensors="np"))

    cosines = []

    def record_cosine(batches: list[list[list[str]]]) -> None:
        cosines.append(graph_cosine(graphs["onnxruntime float32"], graphs["onnxruntime int8"], tokenizer, batches[0]))

    rows = speed_rows(args, backends, encode, each_size=record_cosine)

    print(f"model: {name} ({model_folder}); ONNX folder: {onnx_folder}")
    print(cpu_and_load(args.threads, load_before, f"torch {torch.__version__}"))
    print(markdown_table(rows, SPEED_HEADER))
    mean = float(np.mean([cosine[0] for cosine in cosines]))
    minimum = min(cosine[1] for cosine in cosines)
    print(f"int8 per-word cosine to float32 (biLSTM layers, timed batches' first): mean {mean:.4f}, min {minimum:.4f}")
    print(
        f"folder sizes: float32 {_folder_mb(onnx_folder, FLOAT_GRAPH):.1f} MB,"
        f" int8 {_folder_mb(onnx_folder, QUANTIZED_GRAPH):.1f} MB (each graph with the tokenizer and config files)"
    )


if __name__ == "__main__":
    main()
