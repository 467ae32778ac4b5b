"""Inference benchmark: this package's ``ElmoModel`` against AllenNLP 0.9.0's ``_ElmoBiLm``, same weights, same batches.

Run from the repository root with the package's environment (on an idle 2-core machine the defaults took 4
minutes, 6 with ``--rounds 2``; ``--dtypes float32`` or ``--batches`` shorten it)::

    python benchmarks/speed/bench_inference.py                # writes benchmarks/speed/results.md
    python benchmarks/speed/bench_inference.py --compile --output /tmp/results.md --batches 1:5,32:2,128:1

What it does, in one run:

1. Creates (once) a separate venv with ``allennlp==0.9.0`` (``benchmarks/allennlp/make_venv.sh``;
   ``--allennlp-venv``).
2. Writes (once) random weights of the full-size original model, 2x4096_512_2048cnn_2xhighway (93.6M
   parameters), as ``options.json`` + ``weights.hdf5`` in the original layout (``tests/helpers/original_files.py``,
   scaled by fan-in so that activations look like a trained model's: token vectors of std ~1.2, a few percent
   of the LSTM outputs at the clip of 3) to ``--work-dir``. AllenNLP loads that file itself; this package
   converts it with its own converter (``elmo_transformers.conversion.allennlp.load_allennlp_model``).
3. Makes deterministic batches of random sentences of 10-30 words for each batch size (``--batches
   SIZE:COUNT,...``): words repeat as in real text (Zipf over the default model's 16,000-word vocabulary),
   one in 20 is awkward (non-ASCII, punctuation, a word over 48 bytes); see ``harness_corpora.make_sentences``.
4. Measures the machine's matmul peak for float32 and bfloat16 (GFLOP/s of large square products).
5. Runs, batch size by batch size (so that a change in the machine's load hits both sides alike), AllenNLP's
   ``_ElmoBiLm`` in a worker process of its venv (``benchmarks/allennlp/inference_worker.py``: AllenNLP's own
   ``batch_to_ids``, LSTM state reset before every batch) and then this package in this process, each
   configuration on a freshly converted model: float32; ``mix_layers=[0, 1]`` (the first LSTM layer only);
   bfloat16 (``model.to(torch.bfloat16)``); with ``--compile`` also compiled (``model.compile_lstm_cells()``).
6. Prints a Markdown table (and writes it with the details to ``--output``): words/s, the ratio to AllenNLP at
   the same batch size, milliseconds per batch (at batch size 1: the latency per sentence), the largest
   difference to AllenNLP's float32 outputs (every layer), the mean per-word cosine similarity of the top layer
   to this package's float32 outputs, the share of the measured matmul peak, and the peak resident memory.

Timing: both processes use ``torch.set_num_threads(--threads)`` (default: all cores) and ``torch.no_grad()``;
each batch size is warmed up once with a smaller batch; only the forward call is timed (not the conversion of
words to character ids). A batch size stops after the batch that takes its timed total past ``--budget``
seconds. Other processes on the machine slow both sides: the load average is printed with the results, and
``--rounds N`` runs everything N times and keeps each batch's best time.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
from harness_backends import (
    ALLENNLP,
    DEFAULT_ALLENNLP_VENV,
    encode_batch,
    ensure_weights,
    lstm_layers_run,
    with_mix_layers,
    worker_protocol,
)
from harness_corpora import sentence_batches
from harness_flops import flops_per_position, measure_matmul_peak
from harness_reports import RunRecord, markdown_table, ratio
from harness_timing import best_per_batch

from elmo_transformers.common.options_json import config_from_options
from elmo_transformers.conversion.allennlp import load_allennlp_model
from modeling_elmo import ElmoModel, ElmoTokenizer

OURS = "ours"
MIXED = "ours, mix_layers=[0, 1]"
COMPILED = "ours, compiled"
COMPILE_NOTE = "`model.compile_lstm_cells()` (torch.compile of the LSTM step, dynamic shapes)"


# ----------------------------------------------------------------------------------------------------------------
# Inputs: the batches of each batch size


@dataclass
class Group:
    """The batches of one batch size, the same for every implementation."""

    batch_size: int
    batches: list[list[list[str]]]
    warmup: list[list[str]]

    def words(self, n_batches: int) -> int:
        return sum(len(sentence) for batch in self.batches[:n_batches] for sentence in batch)

    def sentences(self, n_batches: int) -> int:
        return sum(len(batch) for batch in self.batches[:n_batches])

    def distinct_positions(self, n_batches: int) -> int:
        """Distinct words per batch, + 2 for the sentence markers <S> and </S>, summed over the batches."""
        return sum(len({word for sentence in batch for word in sentence}) + 2 for batch in self.batches[:n_batches])


def distinct_share(group: Group) -> float:
    """The share of a group's words that are distinct within their batch."""
    n_batches = len(group.batches)
    return (group.distinct_positions(n_batches) - 2 * n_batches) / group.words(n_batches)


def make_groups(spec: str, seed: int, min_words: int, max_words: int) -> list[Group]:
    return [
        Group(batch_size, batches, warmup)
        for batch_size, batches, warmup in sentence_batches(spec, seed, min_words, max_words)
    ]


# ----------------------------------------------------------------------------------------------------------------
# Running the implementations


@dataclass
class Run:
    """One implementation x dtype x batch size."""

    implementation: str
    dtype: str
    group: Group
    flops: dict[str, int]  # per position, see flops_per_position()
    # The character CNN runs once per distinct word of a batch (ours) instead of once per word (AllenNLP).
    encodes_distinct_words: bool = False
    seconds: list[float] = field(default_factory=list)
    rss_before_mib: float = 0.0
    peak_rss_mib: float = 0.0
    # .npz with one float32 array (layers computed, batch, words, 2P) per timed batch: "batch0", "batch1", ...
    outputs_path: Path | None = None

    @property
    def n_batches(self) -> int:
        return len(self.seconds)

    @property
    def words(self) -> int:
        return self.group.words(self.n_batches)

    @property
    def words_per_s(self) -> float:
        return self.words / sum(self.seconds)

    @property
    def ms_per_batch(self) -> float:
        return 1000 * sum(self.seconds) / self.n_batches

    def gflops_per_s(self) -> float:
        """The FLOPs this implementation computed (see ``encodes_distinct_words``) per second."""
        positions = self.words + 2 * self.group.sentences(self.n_batches)
        encoded = self.group.distinct_positions(self.n_batches) if self.encodes_distinct_words else positions
        token_flops = self.flops["cnn"] + self.flops["highway"] + self.flops["projection"]
        return (token_flops * encoded + self.flops["lstm"] * positions) / sum(self.seconds) / 1e9

    def outputs(self) -> list[np.ndarray]:
        with np.load(self.outputs_path) as arrays:
            return [arrays[f"batch{i}"] for i in range(self.n_batches)]


class AllenNLPWorker(worker_protocol.WorkerProcess):
    """``benchmarks/allennlp/inference_worker.py`` in the AllenNLP venv, holding its model; ``run(index)`` times one
    group there."""

    def __init__(
        self, args: argparse.Namespace, groups: list[Group], options_path: Path, weights_path: Path, flops: dict
    ) -> None:
        request = {
            "options_file": str(options_path),
            "weight_file": str(weights_path),
            "threads": args.threads,
            "budget_s": args.budget,
            "output_dir": str(Path(args.work_dir)),
            "groups": [{"batch_size": g.batch_size, "warmup": g.warmup, "batches": g.batches} for g in groups],
        }
        request_path = Path(args.work_dir) / "allennlp_request.json"
        self.groups, self.flops = groups, flops
        super().__init__(args.allennlp_venv, "inference_worker.py", request, request_path, "AllenNLP 0.9.0 _ElmoBiLm")

    def run(self, index: int) -> Run:
        record = self.request(index)
        run = Run(ALLENNLP, "float32", self.groups[index], self.flops)
        run.seconds, run.outputs_path = record["seconds"], Path(record["outputs"])
        run.rss_before_mib, run.peak_rss_mib = record["rss_before_mib"], record["peak_rss_mib"]
        print(f"{ALLENNLP} float32: batch {run.group.batch_size}: {run.words_per_s:.1f} words/s", flush=True)
        return run


class ModelLoader:
    """Freshly converted models of the benchmark's weights, one for each run, so that each run's memory holds one
    model only; ``load_times`` keeps the seconds of each conversion."""

    def __init__(self, options: dict[str, Any], weights_path: Path) -> None:
        self.options, self.weights_path = options, weights_path
        self.load_times: list[float] = []

    def __call__(self, dtype: str, *, mix: bool = False, compiled: bool = False) -> ElmoModel:
        start = time.perf_counter()
        model = load_allennlp_model(self.options, self.weights_path, progress=False)
        self.load_times.append(time.perf_counter() - start)
        if mix:
            model = with_mix_layers(model, [0, 1])
        model = model.to(getattr(torch, dtype))
        if compiled:
            model.compile_lstm_cells()
        return model


# (implementation, dtype, model factory), in the order they run for each batch size
Variant = tuple[str, str, Callable[[], ElmoModel]]


def our_variants(dtypes: list[str], compile_too: bool, load_model: ModelLoader) -> list[Variant]:
    """float32 and its mix_layers=[0, 1] model where float32 is asked for, the other dtypes, then (with
    ``--compile``) each dtype compiled."""
    variants: list[Variant] = []
    if "float32" in dtypes:
        variants.append((OURS, "float32", lambda: load_model("float32")))
        variants.append((MIXED, "float32", lambda: load_model("float32", mix=True)))
    variants += [(OURS, dtype, lambda dtype=dtype: load_model(dtype)) for dtype in dtypes if dtype != "float32"]
    if compile_too:
        variants += [(COMPILED, dtype, lambda dtype=dtype: load_model(dtype, compiled=True)) for dtype in dtypes]
    return variants


def run_ours(
    model: ElmoModel, implementation: str, dtype: str, group: Group, encoded: dict, args: argparse.Namespace
) -> Run:
    """Time ``model`` on one group; its outputs go to an .npz file in ``--work-dir``."""
    flops = flops_per_position(model.config, lstm_layers_run(model))
    run = Run(implementation, dtype, group, flops, encodes_distinct_words=True)

    def forward(batch) -> tuple[torch.Tensor, ...]:
        output = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"], output_hidden_states=True)
        return output.hidden_states

    with torch.no_grad():
        record, outputs = worker_protocol.time_group(
            forward, encoded["batches"], encoded["warmup"], budget_s=args.budget
        )
    run.seconds = record["seconds"]
    run.rss_before_mib, run.peak_rss_mib = record["rss_before_mib"], record["peak_rss_mib"]
    slug = "".join(c if c.isalnum() else "_" for c in f"{implementation}_{dtype}_b{group.batch_size}")
    run.outputs_path = Path(args.work_dir) / f"{slug}.npz"
    arrays = {f"batch{i}": torch.stack([x.float() for x in layers]).numpy() for i, layers in enumerate(outputs)}
    np.savez(run.outputs_path, **arrays)
    print(f"{implementation} {dtype}: batch {group.batch_size}: {run.words_per_s:.1f} words/s", flush=True)
    return run


def run_rounds(
    args: argparse.Namespace,
    groups: list[Group],
    tokenizer: ElmoTokenizer,
    variants: list[Variant],
    worker: AllenNLPWorker | None,
) -> list[Run]:
    """Batch size by batch size, AllenNLP then each of ours: a change in the machine's load between the
    implementations' runs stays short. With --rounds N all of it runs N times."""
    runs: list[Run] = []
    for round_index in range(args.rounds):
        if args.rounds > 1:
            print(f"round {round_index + 1} of {args.rounds}", flush=True)
        for index, group in enumerate(groups):
            if worker:
                runs.append(worker.run(index))
            encoded = {
                "batches": [encode_batch(tokenizer, batch) for batch in group.batches],
                "warmup": encode_batch(tokenizer, group.warmup),
            }
            for implementation, dtype, factory in variants:
                model = factory()
                runs.append(run_ours(model, implementation, dtype, group, encoded, args))
                del model
                gc.collect()
    return runs


def merge_rounds(runs: list[Run]) -> list[Run]:
    """One run per implementation x dtype x batch size: per batch the best time over the rounds, the memory
    figures of the round with the highest peak, the last round's outputs."""
    merged: dict[tuple, Run] = {}
    for run in runs:
        key = (run.implementation, run.dtype, run.group.batch_size)
        first = merged.setdefault(key, run)
        if first is run:
            continue
        run.seconds = best_per_batch(first.seconds, run.seconds)
        if first.peak_rss_mib > run.peak_rss_mib:
            run.peak_rss_mib, run.rss_before_mib = first.peak_rss_mib, first.rss_before_mib
        merged[key] = run
    return list(merged.values())


# ----------------------------------------------------------------------------------------------------------------
# Comparing and reporting


def _pairs(run: Run, reference: Run | None) -> list[tuple[np.ndarray, np.ndarray]]:
    """(ours, reference) per batch both ran, the reference cut to the layers ``run`` computed."""
    if reference is None:
        return []
    pairs = [(ours, theirs[: ours.shape[0]]) for ours, theirs in zip(run.outputs(), reference.outputs(), strict=False)]
    if any(ours.shape != theirs.shape for ours, theirs in pairs):
        raise ValueError(f"{run.implementation} {run.dtype}: outputs do not match the reference's shapes")
    return pairs


def max_abs_diff(run: Run, reference: Run | None) -> float | None:
    """The largest difference at any layer, word and batch (None where there is nothing to compare)."""
    pairs = _pairs(run, reference)
    return max(float(np.abs(ours - theirs).max()) for ours, theirs in pairs) if pairs else None


def mean_cosine(run: Run, reference: Run | None) -> float | None:
    """Mean over the words of the cosine similarity of the top computed layer's vectors (padding excluded)."""
    similarities = []
    for (ours, theirs), batch in zip(_pairs(run, reference), run.group.batches, strict=False):
        mask = np.zeros(ours.shape[1:3], dtype=bool)
        for row, sentence in enumerate(batch):
            mask[row, : len(sentence)] = True
        a, b = ours[-1][mask].astype(np.float64), theirs[-1][mask].astype(np.float64)
        norms = np.linalg.norm(a, axis=-1) * np.linalg.norm(b, axis=-1)
        similarities.append((a * b).sum(-1) / np.maximum(norms, 1e-30))
    return float(np.concatenate(similarities).mean()) if similarities else None


HEADER = [
    "implementation",
    "dtype",
    "batch",
    "batches",
    "words",
    "words/s",
    "vs AllenNLP",
    "ms/batch",
    "max abs diff vs AllenNLP fp32",
    "mean cos vs our fp32",
    "share of matmul peak",
    "peak RSS MiB (+ over idle)",
]

COLUMNS = [
    "words/s: words of the timed batches / seconds in the forward call (no tokenization); "
    "vs AllenNLP: the ratio to AllenNLP float32 at the same batch size",
    "ms/batch: mean seconds per forward call; at batch size 1 the latency per sentence",
    "max abs diff: over every layer, word and batch, against AllenNLP's float32 outputs "
    "(its <S>/</S> positions removed)",
    "mean cos: cosine similarity of each word's top-layer vector to this package's float32 one, averaged",
    "share of matmul peak: the FLOPs computed per second over the matmul peak of the same dtype; FLOPs = the "
    "LSTMs' per position x (words + 2 markers per sentence) + the token layer's (CNN, highway, projection) per "
    "word encoded: every position for AllenNLP, each distinct word of a batch (+ the 2 markers) for ours",
    "peak RSS: the resident set high-water mark (VmHWM, reset after loading the model) of the process that ran "
    "it, during the warm-up and the timed batches: Python with torch (and transformers for ours), one model, "
    "the working memory of the forward calls and the outputs of the timed batches; + over idle: its growth "
    "over the RSS before the warm-up (with --compile, compilation included)",
]


def find(runs: list[Run], implementation: str, dtype: str, batch_size: int) -> Run | None:
    for run in runs:
        if (run.implementation, run.dtype, run.group.batch_size) == (implementation, dtype, batch_size):
            return run
    return None


def format_row(run: Run, reference: Run | None, fp32: Run | None, peaks: dict) -> list[str]:
    """One table row; ``reference`` is AllenNLP's run and ``fp32`` ours in float32 at the same batch size."""
    if run is reference:
        ratio_text, diff = "(reference)", None
    else:
        ratio_text = ratio(run.words_per_s, reference.words_per_s) if reference else "n/a"
        diff = max_abs_diff(run, reference)
    cosine = mean_cosine(run, fp32) if run is not fp32 and run.implementation != ALLENNLP else None
    return [
        run.implementation,
        run.dtype,
        str(run.group.batch_size),
        str(run.n_batches),
        str(run.words),
        f"{run.words_per_s:.1f}",
        ratio_text,
        f"{run.ms_per_batch:.0f}",
        "n/a" if diff is None else f"{diff:.1e}",
        "n/a" if cosine is None else f"{cosine:.5f}",
        f"{100 * run.gflops_per_s() / peaks[run.dtype]['gflops']:.1f}%",
        f"{run.peak_rss_mib:.0f} (+{run.peak_rss_mib - run.rss_before_mib:.0f})",
    ]


def results_table(runs: list[Run], peaks: dict) -> str:
    rows = []
    for run in runs:
        reference = find(runs, ALLENNLP, "float32", run.group.batch_size)
        fp32 = find(runs, OURS, "float32", run.group.batch_size)
        rows.append(format_row(run, reference, fp32, peaks))
    return markdown_table(rows, HEADER)


def measure_peaks(dtypes: list[str]) -> dict[str, dict[str, Any]]:
    """The matmul peak of float32 and of each of ``dtypes``."""
    print("measuring the matmul peaks ...", flush=True)
    peaks = {dtype: measure_matmul_peak(getattr(torch, dtype)) for dtype in sorted({"float32", *dtypes})}
    for dtype, peak in peaks.items():
        print(f"  {dtype}: {peak['gflops']:.1f} GFLOP/s ({peak['best']}, n={peak['layouts'][peak['best']]['n']})")
    return peaks


@dataclass
class RunContext:
    """What the report's "Run:" section says besides the results."""

    run: RunRecord
    minutes: float
    load_end: tuple[float, ...]
    allennlp_record: dict[str, Any]  # the worker's first answer ({} with --skip-allennlp)
    our_load_s: float
    peaks: dict[str, dict[str, Any]]
    flops: dict[str, int]
    groups: list[Group]
    implementations: set[str]


def run_details(args: argparse.Namespace, context: RunContext) -> list[str]:
    allennlp = context.allennlp_record
    details = [
        context.run.command_line(context.minutes),
        context.run.machine_line(
            f"{args.threads} torch threads in both processes",
            context.load_end,
            f"this benchmark itself adds about {args.threads}: above that, other processes shared the cores",
        ),
        f"- torch {torch.__version__} (ours), {allennlp.get('torch', 'n/a')} (AllenNLP's venv); "
        f"AllenNLP loaded the weights in {allennlp.get('load_s', float('nan')):.1f} s, "
        f"this package converted them in {context.our_load_s:.1f} s",
        "- matmul peak, best of `torch.mm(a, b)` and `F.linear(a, w)` on n x n x n products: "
        + "; ".join(
            f"{dtype} {peak['gflops']:.1f} GFLOP/s ("
            + ", ".join(f"{name} n={r['n']}: {r['gflops']:.1f}" for name, r in peak["layouts"].items())
            + ")"
            for dtype, peak in context.peaks.items()
        ),
        "- FLOPs per position (word or sentence marker), 2 x multiply-adds: "
        f"{sum(context.flops.values()) / 1e6:.1f} M = "
        + " + ".join(f"{name} {value / 1e6:.2f} M" for name, value in context.flops.items()),
        "- model: random full-size weights of 2x4096_512_2048cnn_2xhighway (93.6M parameters), seed "
        f"{args.seed}; sentences of {args.min_words}-{args.max_words} words, Zipf-distributed over 16,000 English "
        "words + 5% awkward ones (distinct words per batch: "
        + ", ".join(f"{distinct_share(group):.0%} at batch {group.batch_size}" for group in context.groups)
        + f"); {args.rounds} round(s), each batch's best time",
    ]
    if MIXED in context.implementations:
        details.append(
            f"- {MIXED}: `ElmoConfig(mix_layers=[0, 1])`, the same weights; the model runs the first LSTM layer only "
            "(its FLOPs count one LSTM layer) and its layers 0 and 1 are compared with AllenNLP's"
        )
    if COMPILED in context.implementations:
        details.append(f"- {COMPILED}: {COMPILE_NOTE}, a freshly loaded model; compiled during the warm-up")
    if allennlp:
        details.append(
            "- AllenNLP 0.9.0 (`pip install --no-deps`), imported with placeholder modules for the absent "
            + ", ".join(sorted({name.partition(".")[0] for name in allennlp.get("stubbed_modules", [])}))
            + " (see benchmarks/allennlp/stubs.py); its LSTM state is reset before every batch"
        )
    return details


def report(table: str, details: list[str]) -> str:
    sections = ["# Inference benchmark: ElmoModel vs AllenNLP 0.9.0", "", table, "", "Run:", "", *details, ""]
    return "\n".join([*sections, "Columns:", "", *(f"- {line}" for line in COLUMNS), ""])


# ----------------------------------------------------------------------------------------------------------------


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    here = Path(__file__).resolve().parent
    parser.add_argument("--output", default=str(here / "results.md"), help="Markdown file for the results")
    parser.add_argument("--work-dir", default="/tmp/elmo-bench", help="weights, worker files (default %(default)s)")
    parser.add_argument("--allennlp-venv", default=DEFAULT_ALLENNLP_VENV, help="default %(default)s")
    parser.add_argument("--batches", default="1:5,32:2,128:1", help="SIZE:COUNT,... (default %(default)s)")
    parser.add_argument("--min-words", type=int, default=10)
    parser.add_argument("--max-words", type=int, default=30)
    parser.add_argument("--seed", type=int, default=0, help="weights and sentences")
    parser.add_argument("--threads", type=int, default=os.cpu_count(), help="torch threads in both processes")
    parser.add_argument("--budget", type=float, default=120.0, help="seconds of timed batches per batch size")
    parser.add_argument("--rounds", type=int, default=1, help="run everything N times, keep each batch's best time")
    parser.add_argument("--dtypes", default="float32,bfloat16", help="our dtypes (default %(default)s)")
    parser.add_argument("--compile", action="store_true", help="also time model.compile_lstm_cells()")
    parser.add_argument("--skip-allennlp", action="store_true", help="only this package (no ratios, no diffs)")
    return parser.parse_args()


def main() -> None:
    args = parse_args()
    run = RunRecord.start()
    print(f"command: {run.command}", flush=True)
    if run.load_start[0] > 0.5:
        load = run.load_start[0]
        print(f"warning: the machine is busy (load average {load:.2f}): timings will be slower and noisier")
    torch.set_num_threads(args.threads)
    work_dir = Path(args.work_dir)
    work_dir.mkdir(parents=True, exist_ok=True)

    options_path, weights_path = ensure_weights(work_dir, args.seed)
    groups = make_groups(args.batches, args.seed, args.min_words, args.max_words)
    dtypes = [d.strip() for d in args.dtypes.split(",") if d.strip()]
    peaks = measure_peaks(dtypes)
    options = json.loads(options_path.read_text())
    full_flops = flops_per_position(config_from_options(options))
    tokenizer = ElmoTokenizer(max_characters_per_token=options["char_cnn"]["max_characters_per_token"])
    load_model = ModelLoader(options, weights_path)
    variants = our_variants(dtypes, args.compile, load_model)

    worker = None if args.skip_allennlp else AllenNLPWorker(args, groups, options_path, weights_path, full_flops)
    runs = merge_rounds(run_rounds(args, groups, tokenizer, variants, worker))
    if worker:
        worker.close()
    order = [(ALLENNLP, "float32")] + [(implementation, dtype) for implementation, dtype, _ in variants]
    runs.sort(key=lambda r: (order.index((r.implementation, r.dtype)), r.group.batch_size))

    table = results_table(runs, peaks)
    context = RunContext(
        run=run,
        minutes=run.minutes(),
        load_end=os.getloadavg(),
        allennlp_record=worker.info if worker else {},
        our_load_s=min(load_model.load_times),
        peaks=peaks,
        flops=full_flops,
        groups=groups,
        implementations={implementation for implementation, _, _ in variants},
    )
    text = report(table, run_details(args, context))
    print("\n" + text)
    Path(args.output).write_text(text)
    print(f"written to {args.output}")


if __name__ == "__main__":
    main()
