"""Where an exported graph's time goes: onnxruntime's profiler (`SessionOptions.enable_profiling`) over one batch of
generated sentences, the operator time summed by what the operators do. A profile, not a race: it says what a faster
kernel for one kind of operator could save at most (issue 52: a fused per-row quantise-product-dequantise, a fused
LSTM cell).

    python benchmarks/speed/profile_graph.py --folder ONNX_FOLDER [--graph model_quantized.onnx] --batch 32

The kinds: the products (`MatMul`, `Gemm`, `FusedGemm`; int8: `MatMulInteger` and onnxruntime's fusions of it), the
per-row quantisation around each int8 product (every other node `--quantize int8` writes: `Abs`, `ReduceMax`,
`QuantizeLinear`, `Cast`, the scales' `Mul`s, ...: `serving/int8_graph.py`), the character CNN's convolutions, the
LSTM cell's element-wise steps, and the rest (the loops' bookkeeping); a loop's own operator (`Scan`) is left out
of the kinds, for its time holds its inner operators'. The last of `--runs` runs of one session is reported (the
first pays for the kernels' first use).
"""

from __future__ import annotations

import argparse
import json
import os
from collections import Counter
from pathlib import Path

import onnxruntime
from harness_corpora import make_sentences
from harness_reports import cpu_and_load, cpu_flags, markdown_table

from elmo_transformers.serving.graph_layout import QUANTIZABLE_PREFIX, QUANTIZED_GRAPH
from modeling_elmo import ElmoTokenizer

_PRODUCTS = {"MatMul", "Gemm", "FusedGemm", "MatMulInteger", "MatMulIntegerToFloat", "DynamicQuantizeMatMul"}
_CELL = {"Add", "Mul", "Sigmoid", "Tanh", "Clip", "Split"}
# Operators that run a subgraph: their time holds their inner operators', which the profile reports one by one.
_CONTAINERS = {"Scan", "Loop", "If"}


def _kind(node: str, operator: str) -> str:
    """What a node of the graph does, by its operator and, for the int8 rewrite's own nodes, its name."""
    if operator in _PRODUCTS:
        return "products"
    if node.startswith(QUANTIZABLE_PREFIX):
        return "per-row quantisation around the int8 products"
    if operator == "Conv":
        return "character CNN convolutions"
    if operator in _CELL:
        return "LSTM cell element-wise steps (and the highway's)"
    return "the rest (loop bookkeeping, sorting, embedding)"


def _operator_times(profile: Path) -> tuple[Counter, Counter]:
    """Microseconds of operator time in the last run of a profile: by kind, and by operator type (the loops' own
    operators, whose time holds their inner ones', apart as their type only)."""
    events = json.loads(profile.read_text())
    last_run = max(event["ts"] for event in events if event["name"] == "model_run")
    kinds, operators = Counter(), Counter()
    for event in events:
        if event.get("cat") != "Node" or not event["name"].endswith("_kernel_time") or event["ts"] < last_run:
            continue
        operator = event["args"]["op_name"]
        operators[operator] += event["dur"]
        if operator not in _CONTAINERS:
            kinds[_kind(event["name"].removesuffix("_kernel_time"), operator)] += event["dur"]
    return kinds, operators


def _profiled_runs(path: Path, inputs: dict, threads: int, runs: int, prefix: Path) -> Path:
    """The profile of `runs` runs of the graph at `path` on `inputs`, in one session (the first pays for the
    kernels' first use)."""
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = threads
    options.enable_profiling = True
    options.profile_file_prefix = str(prefix)
    session = onnxruntime.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    for _ in range(runs):
        session.run(["hidden_states"], inputs)
    return Path(session.end_profiling())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--folder", type=Path, required=True, help="an elmo-convert onnx folder")
    parser.add_argument("--graph", default=QUANTIZED_GRAPH, help="the graph file in it (default %(default)s)")
    parser.add_argument("--batch", type=int, default=32, help="sentences in the batch (default %(default)s)")
    parser.add_argument("--threads", type=int, default=1, help="onnxruntime threads (default %(default)s)")
    parser.add_argument("--runs", type=int, default=2, help="runs; the last is reported (default %(default)s)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--work-dir", type=Path, default=Path("/tmp/elmo-profile-graph"))
    args = parser.parse_args()
    args.work_dir.mkdir(parents=True, exist_ok=True)
    load_before = os.getloadavg()
    sentences = make_sentences(args.seed, args.batch, args.batch, 10, 30)
    tokenizer = ElmoTokenizer.from_pretrained(args.folder)
    inputs = dict(tokenizer(sentences, is_split_into_words=True, padding=True, return_tensors="np"))
    profile = _profiled_runs(args.folder / args.graph, inputs, args.threads, args.runs, args.work_dir / "profile")
    kinds, operators = _operator_times(profile)
    total = sum(kinds.values())
    print(f"{args.folder / args.graph}: batch {args.batch} ({sum(map(len, sentences))} words), run {args.runs}")
    print(cpu_and_load(args.threads, load_before, f"onnxruntime {onnxruntime.__version__}"))
    print(f"the CPU's product flags: {cpu_flags()}")
    rows = [[kind, f"{time / 1000:,.1f}", f"{time / total:.0%}"] for kind, time in kinds.most_common()]
    print(markdown_table([["all operators", f"{total / 1000:,.1f}", "100%"], *rows], ["kind", "ms", "share"]))
    print()
    rows = [[name, f"{time / 1000:,.1f}", f"{time / total:.0%}"] for name, time in operators.most_common(12)]
    print(markdown_table(rows, ["operator (Scan: the loops, their inner operators' time included)", "ms", "share"]))


if __name__ == "__main__":
    main()
