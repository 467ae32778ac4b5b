"""Opening the exported float32 graph against loading the PyTorch model, in one run (issue 41): the folder's graph
(its weights beside it, `model.onnx_data`), the same graph written as one file (the weights inside it, as exports
before issue 41 wrote it) with onnxruntime's optimisations on (its default) and off, and `ElmoModel.from_pretrained`
of the converted folder. Each open is timed in a process of its own (a fresh process, as `elmo-embed` opens it), best
of --rounds alternating rounds, after one untimed read of every file (the page cache holds them all alike); each
process's imports are not timed. The graphs' vectors are compared with the folder's graph on a fixed batch.

    python benchmarks/speed/bench_graph_open.py   # the original shape's random weights, 5 rounds
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from harness_backends import converted_model, exported_graphs
from harness_reports import cpu_model, markdown_table, ratio
from harness_timing import race

from elmo_transformers.serving.graph_layout import FLOAT_GRAPH, graph_files

# Opens what argv[1] names (a graph, with onnxruntime's optimisations argv[2]: "on" or "off"; or "pytorch" and a
# model folder), prints the seconds it took, and the graph's hidden_states on a fixed batch to argv[3] (a .npy).
_OPEN = """
import sys, time
import numpy as np
kind, path, optimise, vectors = sys.argv[1:5]
if kind == "pytorch":
    from modeling_elmo import ElmoModel
    start = time.perf_counter()
    ElmoModel.from_pretrained(path)
else:
    import onnxruntime
    options = onnxruntime.SessionOptions()
    if optimise == "off":
        options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_DISABLE_ALL
    start = time.perf_counter()
    session = onnxruntime.InferenceSession(path, options, providers=["CPUExecutionProvider"])
seconds = time.perf_counter() - start
if kind != "pytorch":
    rng = np.random.default_rng(0)
    ids = rng.integers(1, 262, (4, 9, 50)).astype(np.int64)
    mask = np.ones((4, 9), np.int64)
    mask[1, 5:] = 0
    np.save(vectors, session.run(["hidden_states"], {"input_ids": ids, "attention_mask": mask})[0])
print(seconds)
"""


def _arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--shape", default="original", help="released shape of the random weights")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--rounds", type=int, default=5, help="alternating rounds; the best counts (default 5)")
    parser.add_argument("--work-dir", type=Path, default=Path("/tmp/elmo-bench-embed-backends"))
    return parser.parse_args()


def _one_file_graph(graph: Path, folder: Path) -> Path:
    """`graph` written again with its weights inside it, in `folder`."""
    import onnx

    target = folder / FLOAT_GRAPH
    onnx.save(onnx.load(str(graph)), str(target))
    return target


def _warm(paths: list[Path]) -> None:
    """Read every file once, so that each open finds them in the page cache."""
    for path in paths:
        with open(path, "rb") as file:
            while file.read(1 << 24):
                pass


def main() -> None:
    args = _arguments()
    model = converted_model(args.work_dir, args.seed, args.shape)
    graph = exported_graphs(model, args.work_dir / f"{args.shape}-seed{args.seed}-onnx") / FLOAT_GRAPH
    with tempfile.TemporaryDirectory() as scratch:
        scratch = Path(scratch)
        one_file = _one_file_graph(graph, scratch)
        opens = {
            "graph, weights beside it (model.onnx_data), optimisations on": ("onnx", graph, "on"),
            "graph, weights beside it, optimisations off": ("onnx", graph, "off"),
            "graph as one file, optimisations on (the former layout)": ("onnx", one_file, "on"),
            "graph as one file, optimisations off": ("onnx", one_file, "off"),
            "PyTorch: ElmoModel.from_pretrained": ("pytorch", model, "-"),
        }
        _warm([*graph_files(graph), one_file, *model.glob("*.safetensors")])

        def open_seconds(round_index: int, label: str) -> float:
            kind, path, optimise = opens[label]
            vectors = scratch / f"{list(opens).index(label)}.npy"
            command = [sys.executable, "-c", _OPEN, kind, str(path), optimise, str(vectors)]
            return float(subprocess.run(command, check=True, capture_output=True, text=True).stdout)

        best, loads = race(list(opens), args.rounds, open_seconds)
        differences = _differences(scratch, opens)
    pytorch = best["PyTorch: ElmoModel.from_pretrained"]
    rows = [
        [label, f"{seconds:.2f}", ratio(seconds, pytorch), differences.get(label, "")]
        for label, seconds in best.items()
    ]
    print(f"{args.shape} shape, random weights (seed {args.seed}); CPU: {cpu_model()}, {os.cpu_count()} cores")
    print(f"load averages at the start and after each round: {loads}")
    print(
        markdown_table(
            rows, ["open", "seconds (best round)", "vs PyTorch's load", "max |vectors - the folder's graph|"]
        )
    )


def _differences(scratch: Path, opens: dict) -> dict[str, str]:
    """Each graph's largest difference to the folder's graph (optimisations on), on the fixed batch."""
    import numpy as np

    reference = np.load(scratch / "0.npy")
    return {
        label: json.dumps(float(np.abs(np.load(scratch / f"{index}.npy") - reference).max()))
        for index, (label, (kind, _, _)) in enumerate(opens.items())
        if kind == "onnx"
    }


if __name__ == "__main__":
    main()
