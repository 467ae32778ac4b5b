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
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import onnxruntime
import torch
from bench_common import (
    converted_model,
    cpu_model,
    exported_graphs,
    load_averages,
    markdown_table,
    sentence_batches,
)

from elmo_transformers.common.errors import ConversionError
from elmo_transformers.conversion.onnx_export import graph_cosine
from elmo_transformers.inference.onnx_embedder import FLOAT_GRAPH, QUANTIZED_GRAPH, open_graph
from modeling_elmo import DEFAULT_MODEL, ElmoModel, ElmoTokenizer


def _folder_mb(folder: Path, graph: str) -> float:
    others = sum(path.stat().st_size for path in folder.iterdir() if path.suffix != ".onnx")
    return ((folder / graph).stat().st_size + others) / 1e6


def _arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--shape", default="original", help="released shape of the random weights")
    parser.add_argument("--bundled", action="store_true", help="the bundled model instead of random weights")
    parser.add_argument("--batches", default="32:3", help="SIZE:COUNT,... batches timed (default %(default)s)")
    parser.add_argument("--threads", type=int, default=1, help="threads of each backend (default %(default)s)")
    parser.add_argument("--min-words", type=int, default=10)
    parser.add_argument("--max-words", type=int, default=30)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--work-dir", type=Path, default=Path("/tmp/elmo-bench-onnx"))
    return parser.parse_args()


def _backends(model_folder: Path, graphs: dict[str, onnxruntime.InferenceSession]) -> dict[str, Callable]:
    """Each backend as a function of the tokenizer's batch: PyTorch's `ElmoModel`, then each graph (which takes the
    tokenizer's output as it is)."""
    model = ElmoModel.from_pretrained(model_folder).eval()

    def pytorch(inputs: dict[str, np.ndarray]) -> None:
        with torch.inference_mode():
            model(**{name: torch.from_numpy(array) for name, array in inputs.items()}, output_hidden_states=True)

    backends = {"PyTorch float32": pytorch}
    for label, session in graphs.items():
        backends[label] = lambda inputs, session=session: session.run(["hidden_states"], inputs)
    return backends


def _timed_batches(args: argparse.Namespace, backends: dict[str, Callable], encode: Callable) -> Iterator[tuple]:
    """For each batch size of --batches: (batch size, batches, words, seconds per backend), every batch run on each
    backend in turn."""
    for batch_size, batches, warmup in sentence_batches(args.batches, args.seed, args.min_words, args.max_words):
        warm_inputs = encode(warmup)
        for run in backends.values():
            run(warm_inputs)
        seconds = dict.fromkeys(backends, 0.0)
        for batch in batches:
            inputs = encode(batch)
            for label, run in backends.items():
                start = time.perf_counter()
                run(inputs)
                seconds[label] += time.perf_counter() - start
        yield batch_size, batches, sum(len(words) for batch in batches for words in batch), seconds


def main() -> None:
    args = _arguments()
    args.work_dir.mkdir(parents=True, exist_ok=True)
    torch.set_num_threads(args.threads)
    load_before = os.getloadavg()
    model_folder = Path(DEFAULT_MODEL) if args.bundled else converted_model(args.work_dir, args.seed, args.shape)
    name = "bundled" if args.bundled else f"{args.shape}-seed{args.seed}"
    onnx_folder = exported_graphs(model_folder, args.work_dir / f"{name}-onnx")
    tokenizer = ElmoTokenizer.from_pretrained(model_folder)
    graphs = {
        "onnxruntime float32": open_graph(onnx_folder / FLOAT_GRAPH, ConversionError, threads=args.threads),
        "onnxruntime int8": open_graph(onnx_folder / QUANTIZED_GRAPH, ConversionError, threads=args.threads),
    }
    backends = _backends(model_folder, graphs)

    def encode(sentences: list[list[str]]) -> dict[str, np.ndarray]:
        """The tokenizer's batch, longest sentence first (as `OnnxEmbedder.prepare` gives the graph its rows)."""
        by_length = sorted(sentences, key=len, reverse=True)
        return dict(tokenizer(by_length, is_split_into_words=True, padding=True, return_tensors="np"))

    rows, cosines = [], []
    for batch_size, batches, words, seconds in _timed_batches(args, backends, encode):
        cosines.append(graph_cosine(graphs["onnxruntime float32"], graphs["onnxruntime int8"], tokenizer, batches[0]))
        baseline = words / seconds["PyTorch float32"]
        for label in backends:
            speed = words / seconds[label]
            rows.append([label, str(batch_size), str(len(batches)), f"{speed:,.0f}", f"{speed / baseline:.2f}x"])

    print(f"model: {name} ({model_folder}); ONNX folder: {onnx_folder}")
    print(f"CPU: {cpu_model()}, {args.threads} thread(s); load average before {load_averages(load_before)},")
    print(f"after {load_averages(os.getloadavg())}; torch {torch.__version__}")
    print(markdown_table(rows, ["backend", "batch", "batches", "words/s", "vs PyTorch"]))
    mean = float(np.mean([cosine[0] for cosine in cosines]))
    minimum = min(cosine[1] for cosine in cosines)
    print(f"int8 per-word cosine to float32 (biLSTM layers, timed batches' first): mean {mean:.4f}, min {minimum:.4f}")
    print(
        f"folder sizes: float32 {_folder_mb(onnx_folder, FLOAT_GRAPH):.1f} MB,"
        f" int8 {_folder_mb(onnx_folder, QUANTIZED_GRAPH):.1f} MB (each graph with the tokenizer and config files)"
    )


if __name__ == "__main__":
    main()
