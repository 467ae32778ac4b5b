"""Inference benchmark: this package's ``ElmoModel`` against AllenNLP 0.9.0's ``_ElmoBiLm``, same weights, same batches.

Run from the repository root with the package's environment (on an idle 2-core machine the defaults took 4
minutes, 6 with ``--rounds 2``; ``--dtypes float32`` or ``--batches`` shorten it)::

    python benchmarks/bench_inference.py                      # writes benchmarks/results.md
    python benchmarks/bench_inference.py --compile --output /tmp/results.md --batches 1:5,32:2,128:1

What it does, in one run:

1. Creates (once) a separate venv with ``allennlp==0.9.0`` (``benchmarks/allennlp_env.sh``; ``--allennlp-venv``).
2. Writes (once) random weights of the full-size original model, 2x4096_512_2048cnn_2xhighway (93.6M
   parameters), as ``options.json`` + ``weights.hdf5`` in the original layout (``tests/helpers/original_files.py``,
   scaled by fan-in so that activations look like a trained model's: token vectors of std ~1.2, a few percent
   of the LSTM outputs at the clip of 3) to ``--work-dir``. AllenNLP loads that file itself; this package
   converts it with its own converter (``elmo_transformers.conversion.allennlp.load_allennlp_model``).
3. Makes deterministic batches of random sentences of 10-30 words for each batch size (``--batches
   SIZE:COUNT,...``): words repeat as in real text (Zipf over the default model's 16,000-word vocabulary),
   one in 20 is awkward (non-ASCII, punctuation, a word over 48 bytes); see ``make_sentences``.
4. Measures the machine's matmul peak for float32 and bfloat16 (GFLOP/s of large square products).
5. Runs, batch size by batch size (so that a change in the machine's load hits both sides alike), AllenNLP's
   ``_ElmoBiLm`` in a worker process of its venv (``allennlp_worker.py``: AllenNLP's own ``batch_to_ids``, LSTM
   state reset before every batch) and then this package in this process, each configuration on a freshly
   converted model: float32; ``mix_layers=[0, 1]`` where the config has that attribute (the first LSTM layer
   only); bfloat16 (``model.to(torch.bfloat16)``); with ``--compile`` also compiled
   (``model.compile_lstm_cells()``, or ``torch.compile(model)`` where the model has no such method).
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
import datetime
import gc
import importlib.util
import itertools
import json
import os
import platform
import random
import shlex
import subprocess
import sys
import time
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
from bench_common import WorkerProcess, time_group  # noqa: E402

from elmo_transformers.common.options import config_from_options  # noqa: E402
from elmo_transformers.conversion.allennlp import load_allennlp_model  # noqa: E402
from elmo_transformers.conversion.variants import VARIANTS  # noqa: E402
from modeling_elmo import ElmoConfig, ElmoModel, ElmoTokenizer  # noqa: E402

ALLENNLP = "AllenNLP 0.9.0 `_ElmoBiLm`"
OURS = "ours"
MIXED = "ours, mix_layers=[0, 1]"
COMPILED = "ours, compiled"
DEFAULT_ALLENNLP_VENV = os.environ.get("ELMO_BENCH_ALLENNLP_VENV", "/tmp/elmo-bench-allennlp-venv")

# The released original model, 2x4096_512_2048cnn_2xhighway, as AllenNLP distributed its options.json.
ORIGINAL_OPTIONS = VARIANTS["original"].options

# Words a tokenizer must survive: non-ASCII, punctuation, clitics, numbers and a word over 48 UTF-8 bytes (cut).
AWKWARD_WORDS = [
    "naïve", "café", "Zürich", "São", "Paulo", "Straße", "façade", "résumé", "Москва", "Ελληνικά", "東京",
    "日本語", "한국어", "עברית", "😀", "—", "…", ",", ".", ";", "'s", "n't", "(", ")", "$", "3.14", "1,000",
    "U.S.", "e-mail", "O'Neill", "supercalifragilisticexpialidocious-antidisestablishmentarianism",
]  # fmt: skip
# The bundled default model's vocabulary: 16,000 words of English text, most frequent first.
RANKED_WORDS = [
    line.strip()
    for line in (REPO / "modeling_elmo" / "default_model" / "vocab.txt").read_text(encoding="utf-8").splitlines()
    if line.strip() not in ("<S>", "</S>", "<UNK>", "")
]


# ----------------------------------------------------------------------------------------------------------------
# Inputs: weights and sentences


def ensure_weights(work_dir: Path, seed: int, shape: str = "original") -> tuple[Path, Path]:
    """options.json + weights.hdf5 of a released shape (``elmo_transformers.conversion.variants.VARIANTS``, default the
    original model's) with random weights, written once per shape and seed."""
    options = VARIANTS[shape].options
    folder = work_dir / f"{shape}-seed{seed}"
    options_path, weights_path, done = folder / "options.json", folder / "weights.hdf5", folder / "complete"
    if done.is_file() and json.loads(options_path.read_text()) == options:
        return options_path, weights_path
    spec = importlib.util.spec_from_file_location("original_files", REPO / "tests" / "helpers" / "original_files.py")
    original_files = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(original_files)
    print(f"writing random weights of the {shape} shape to {folder} ...", flush=True)
    original_files.write_original_model(folder, options, seed=seed)
    done.write_text("")
    return options_path, weights_path


def make_sentences(seed: int, batch_size: int, count: int, min_words: int, max_words: int) -> list[list[str]]:
    """Random sentences whose words repeat as in real text: Zipf's law (the word of rank r with probability
    ~ 1/r) over ``RANKED_WORDS``, and one word in 20 from ``AWKWARD_WORDS``.

    How often words repeat matters because each distinct word of a batch goes through the character CNN once.
    With 10-30 words per sentence, 58% of a batch of 32's words are distinct here; in the default model's
    held-out text (Wikipedia, Shakespeare, the King James Bible) 53% are: these batches repeat a little less.
    """
    rng = random.Random(f"elmo-bench-{seed}-{batch_size}")
    cumulative = list(itertools.accumulate(1.0 / rank for rank in range(1, len(RANKED_WORDS) + 1)))

    def word() -> str:
        if rng.random() < 0.05:
            return rng.choice(AWKWARD_WORDS)
        return rng.choices(RANKED_WORDS, cum_weights=cumulative)[0]

    return [[word() for _ in range(rng.randint(min_words, max_words))] for _ in range(count)]


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


def sentence_batches(
    spec: str,
    seed: int,
    min_words: int,
    max_words: int,
    edit: Callable[[list[list[str]]], list[list[str]]] = lambda sentences: sentences,
) -> Iterator[tuple[int, list[list[list[str]]], list[list[str]]]]:
    """For each ``SIZE:COUNT`` of ``spec`` (``32:20,128:5``): the batch size, COUNT batches of generated sentences
    (all of them passed through ``edit`` first) and a warm-up batch of other sentences."""
    for item in spec.split(","):
        size, _, count = item.partition(":")
        batch_size, n_batches = int(size), int(count or 1)
        sentences = edit(make_sentences(seed, batch_size, batch_size * n_batches, min_words, max_words))
        batches = [sentences[i : i + batch_size] for i in range(0, len(sentences), batch_size)]
        yield batch_size, batches, make_sentences(seed + 1, batch_size, min(batch_size, 8), min_words, max_words)


def make_groups(spec: str, seed: int, min_words: int, max_words: int) -> list[Group]:
    return [
        Group(batch_size, batches, warmup)
        for batch_size, batches, warmup in sentence_batches(spec, seed, min_words, max_words)
    ]


# ----------------------------------------------------------------------------------------------------------------
# FLOPs and the machine's matmul peak


def flops_per_position(config: ElmoConfig, lstm_layers: int | None = None) -> dict[str, int]:
    """FLOPs of the biLM for one position (a word, or the <S>/</S> added around each sentence): 2 x multiply-adds.

    With E = char_embedding_dim, K = max_characters_per_token, F = sum of the filter counts, P = projection_dim,
    C = cell_size, L = the LSTM layers computed (default num_hidden_layers; 1 for mix_layers=[0, 1]):
      CNN         sum over filters (w, n) of (K - w + 1) * w * E * n     (valid convolution over all K slots)
      highway     n_highway * 2 * F * F                                  (carry and transform)
      projection  (F + word_embedding_dim) * P
      LSTMs       2 directions * L * (P * 4C  +  P * 4C  +  C * P)        (input, recurrent, output projection)
    Element-wise work (embedding look-up, max-pool, gates, clipping) is not counted. The original model:
    8.81M + 16.78M + 1.05M + 75.50M = 102.1M multiply-adds, 204.3 MFLOP per position.
    """
    E, K, P, C, L = (
        config.char_embedding_dim,
        config.max_characters_per_token,
        config.projection_dim,
        config.cell_size,
        config.num_hidden_layers if lstm_layers is None else lstm_layers,
    )
    F_ = config.num_filters
    macs = {
        "cnn": sum((K - width + 1) * width * E * count for width, count in config.char_cnn_filters),
        "highway": config.num_highway_layers * 2 * F_ * F_,
        "projection": (F_ + (config.word_embedding_dim or 0)) * P,
        "lstm": 2 * L * (P * 4 * C + P * 4 * C + C * P),
    }
    return {name: 2 * value for name, value in macs.items()}


def measure_matmul_peak(
    dtype: torch.dtype, *, min_seconds: float = 1.5, device: torch.device | str = "cpu"
) -> dict[str, Any]:
    """GFLOP/s (2 n^3 per product) of square products, in the two layouts a model uses; the better one is the peak.

    ``torch.mm(a, b)`` and ``F.linear(a, w)`` (``a @ w.T``, the layout of ``nn.Linear``) can take different
    kernels (for bfloat16 on CPUs without native bfloat16 they differ by 10x). n doubles from 256 until one
    product takes 0.3 s (at most 4096 on a CPU, 16384 on a GPU), then the best of >= 3 repetitions over >=
    ``min_seconds`` counts.
    """
    device = torch.device(device)
    sync = torch.cuda.synchronize if device.type == "cuda" else lambda: None
    largest = 16384 if device.type == "cuda" else 4096

    def timed(operation, a, b) -> float:
        sync()
        start = time.perf_counter()
        operation(a, b)
        sync()
        return time.perf_counter() - start

    operations = {"torch.mm(a, b)": torch.mm, "F.linear(a, w)": F.linear}
    results = {}
    for name, operation in operations.items():
        n = 256
        while True:
            generator = torch.Generator().manual_seed(0)
            a = torch.randn(n, n, generator=generator).to(device, dtype)
            b = torch.randn(n, n, generator=generator).to(device, dtype)
            operation(a, b)
            elapsed = timed(operation, a, b)
            if elapsed >= 0.3 or n >= largest:
                break
            n *= 2
        times = [elapsed]
        while len(times) < 3 or sum(times) < min_seconds:
            times.append(timed(operation, a, b))
        results[name] = {"n": n, "gflops": 2 * n**3 / min(times) / 1e9}
    best = max(results, key=lambda name: results[name]["gflops"])
    return {"gflops": results[best]["gflops"], "best": best, "layouts": results}


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
    error: str | None = None

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
        if self.outputs_path is None or self.error:
            return []
        with np.load(self.outputs_path) as arrays:
            return [arrays[f"batch{i}"] for i in range(self.n_batches)]


class AllenNLPWorker(WorkerProcess):
    """``allennlp_worker.py`` in the AllenNLP venv, holding its model; ``run(index)`` times one group there."""

    def __init__(self, args, groups: list[Group], options_path: Path, weights_path: Path, flops: dict) -> None:
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
        super().__init__(args.allennlp_venv, "allennlp_worker.py", request, request_path, "AllenNLP 0.9.0 _ElmoBiLm")

    def run(self, index: int) -> Run:
        record = self.request(index)
        run = Run(ALLENNLP, "float32", self.groups[index], self.flops)
        run.seconds, run.outputs_path = record["seconds"], Path(record["outputs"])
        run.rss_before_mib, run.peak_rss_mib = record["rss_before_mib"], record["peak_rss_mib"]
        print(f"{ALLENNLP} float32: batch {run.group.batch_size}: {run.words_per_s:.1f} words/s", flush=True)
        return run


def run_ours(
    model: ElmoModel, implementation: str, dtype: str, group: Group, encoded: dict, args: argparse.Namespace
) -> Run:
    """Time ``model`` on one group; a failure becomes the run's ``error`` (the model is being worked on)."""
    flops = flops_per_position(model.config, lstm_layers_run(model))
    run = Run(implementation, dtype, group, flops, encodes_distinct_words=True)

    def forward(batch) -> tuple[torch.Tensor, ...]:
        output = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"], output_hidden_states=True)
        return output.hidden_states if output.hidden_states is not None else (output.last_hidden_state,)

    try:
        with torch.no_grad():
            record, outputs = time_group(forward, encoded["batches"], encoded["warmup"], budget_s=args.budget)
    except Exception as error:
        traceback.print_exc()
        run.error = f"{type(error).__name__}: {error}".splitlines()[0][:200]
        return run
    run.seconds = record["seconds"]
    run.rss_before_mib, run.peak_rss_mib = record["rss_before_mib"], record["peak_rss_mib"]
    slug = "".join(c if c.isalnum() else "_" for c in f"{implementation}_{dtype}_b{group.batch_size}")
    run.outputs_path = Path(args.work_dir) / f"{slug}.npz"
    arrays = {f"batch{i}": torch.stack([x.float() for x in layers]).numpy() for i, layers in enumerate(outputs)}
    np.savez(run.outputs_path, **arrays)
    print(f"{implementation} {dtype}: batch {group.batch_size}: {run.words_per_s:.1f} words/s", flush=True)
    return run


def merge_rounds(runs: list[Run]) -> list[Run]:
    """One run per implementation x dtype x batch size: per batch the best time over the rounds, the memory
    figures of the round with the highest peak, the last round's outputs; a failure in any round is kept."""
    merged: dict[tuple, Run] = {}
    for run in runs:
        key = (run.implementation, run.dtype, run.group.batch_size)
        first = merged.setdefault(key, run)
        if first is run or first.error:
            continue
        if run.error:
            merged[key] = run
            continue
        count = min(first.n_batches, run.n_batches)
        run.seconds = [min(a, b) for a, b in zip(first.seconds[:count], run.seconds[:count], strict=True)]
        if first.peak_rss_mib > run.peak_rss_mib:
            run.peak_rss_mib, run.rss_before_mib = first.peak_rss_mib, first.rss_before_mib
        merged[key] = run
    return list(merged.values())


def mix_layers_supported() -> bool:
    return hasattr(ElmoConfig(), "mix_layers")


class MixedLayersModel(ElmoModel):
    """``ElmoModel`` running only the biLSTM layers its config's mix reads (``config.mix_depth``), as the task heads
    run it: the ``mix_layers=[0, 1]`` rows. (``ElmoModel`` itself computes every layer, whatever the config.)"""

    def forward(self, *args, **kwargs):
        return super().forward(*args, num_layers=self.config.mix_depth, **kwargs)


def lstm_layers_run(model: ElmoModel) -> int:
    """LSTM layers the model runs: all of them but in a ``MixedLayersModel``."""
    return model.config.mix_depth if isinstance(model, MixedLayersModel) else model.config.num_hidden_layers


# ----------------------------------------------------------------------------------------------------------------
# Comparing and reporting


def _pairs(run: Run, reference: Run | None) -> list[tuple[np.ndarray, np.ndarray]]:
    """(ours, reference) per batch both ran, the reference cut to the layers ``run`` computed."""
    if reference is None or run.error:
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


def format_row(run: Run, reference: Run | None, fp32: Run | None, peaks: dict) -> list[str]:
    """One table row; ``reference`` is AllenNLP's run and ``fp32`` ours in float32 at the same batch size."""
    label = [run.implementation, run.dtype, str(run.group.batch_size)]
    if run.error:
        return [*label, "", "", f"failed: {run.error}", "", "", "", "", "", ""]
    if run is reference:
        ratio, diff = "(reference)", None
    else:
        ratio = f"{run.words_per_s / reference.words_per_s:.2f}x" if reference else "n/a"
        diff = max_abs_diff(run, reference)
    cosine = mean_cosine(run, fp32) if run is not fp32 and run.implementation != ALLENNLP else None
    peak = peaks.get(run.dtype)
    share = f"{100 * run.gflops_per_s() / peak['gflops']:.1f}%" if peak else "n/a"
    return [
        *label,
        str(run.n_batches),
        str(run.words),
        f"{run.words_per_s:.1f}",
        ratio,
        f"{run.ms_per_batch:.0f}",
        "n/a" if diff is None else f"{diff:.1e}",
        "n/a" if cosine is None else f"{cosine:.5f}",
        share,
        f"{run.peak_rss_mib:.0f} (+{run.peak_rss_mib - run.rss_before_mib:.0f})",
    ]


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


def markdown_table(rows: list[list[str]], header: list[str] = HEADER) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(" --- " for _ in header) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def find(runs: list[Run], implementation: str, dtype: str, batch_size: int) -> Run | None:
    for run in runs:
        if run.implementation == implementation and run.dtype == dtype:
            if run.group.batch_size == batch_size and not run.error and run.seconds:
                return run
    return None


def targets_summary(runs: list[Run], target_batch: int) -> list[str]:
    """The issue's targets, each with the measured figure."""

    def verdict(ok: bool | None) -> str:
        return "n/a" if ok is None else ("met" if ok else "NOT met")

    lines = []
    allen = find(runs, ALLENNLP, "float32", target_batch)
    ours32 = find(runs, OURS, "float32", target_batch)
    ours16 = find(runs, OURS, "bfloat16", target_batch)
    if allen and ours32:
        ratio = ours32.words_per_s / allen.words_per_s
        lines.append(
            f"- float32, batch {target_batch}: {ours32.words_per_s:.1f} vs {allen.words_per_s:.1f} words/s = "
            f"{ratio:.2f}x AllenNLP (target >= 2x): {verdict(ratio >= 2)}"
        )
    diffs = [
        max_abs_diff(run, find(runs, ALLENNLP, "float32", run.group.batch_size))
        for run in runs
        if run.implementation == OURS and run.dtype == "float32"
    ]
    diffs = [d for d in diffs if d is not None]
    if diffs:
        worst = max(diffs)
        lines.append(
            f"- float32 outputs vs AllenNLP, every layer and batch size: max abs diff {worst:.1e} "
            f"(target <= 1e-4): {verdict(worst <= 1e-4)}"
        )
    if allen and ours16:
        ratio = ours16.words_per_s / allen.words_per_s
        cosines = [
            mean_cosine(run, find(runs, OURS, "float32", run.group.batch_size))
            for run in runs
            if run.implementation == OURS and run.dtype == "bfloat16" and not run.error
        ]
        cosines = [c for c in cosines if c is not None]
        lines.append(
            f"- bfloat16, batch {target_batch}: {ours16.words_per_s:.1f} words/s = {ratio:.2f}x AllenNLP float32 "
            f"(target >= 4x): {verdict(ratio >= 4)}"
        )
        if cosines:
            lines.append(
                f"- bfloat16 vs our float32, mean per-word cosine similarity of the top layer (worst batch size): "
                f"{min(cosines):.5f} (target >= 0.99): {verdict(min(cosines) >= 0.99)}"
            )
    allen1, ours1 = find(runs, ALLENNLP, "float32", 1), find(runs, OURS, "float32", 1)
    if allen1 and ours1:
        lines.append(
            f"- batch-1 latency, float32: {ours1.ms_per_batch:.0f} ms vs AllenNLP {allen1.ms_per_batch:.0f} ms per "
            f"sentence (target: no worse): {verdict(ours1.ms_per_batch <= allen1.ms_per_batch)}"
        )
    return lines


def git_description() -> str:
    def git(*command: str) -> str:
        result = subprocess.run(["git", "-C", str(REPO), *command], capture_output=True, text=True, check=False)
        return result.stdout.strip()

    commit = git("rev-parse", "--short", "HEAD") or "unknown"
    dirty = git("status", "--porcelain", "--", "modeling_elmo", "conversion")
    return f"{commit}" + (" (modeling_elmo/ or conversion/ modified in the working tree)" if dirty else "")


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


# ----------------------------------------------------------------------------------------------------------------


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--output", default=str(HERE / "results.md"), help="Markdown file for the results")
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
    parser.add_argument("--compile", action="store_true", help="also time torch.compile(model)")
    parser.add_argument("--skip-allennlp", action="store_true", help="only this package (no ratios, no diffs)")
    parser.add_argument("--target-batch", type=int, default=32, help="batch size of the throughput targets")
    return parser.parse_args()


def main() -> None:
    args = parse_args()
    started = time.perf_counter()
    started_at = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    command = shlex.join([sys.executable, *sys.argv])
    print(f"command: {command}", flush=True)
    load_start = os.getloadavg()
    if load_start[0] > 0.5:
        print(f"warning: the machine is busy (load average {load_start[0]:.2f}): timings will be slower and noisier")
    torch.set_num_threads(args.threads)
    work_dir = Path(args.work_dir)
    work_dir.mkdir(parents=True, exist_ok=True)

    options_path, weights_path = ensure_weights(work_dir, args.seed)
    groups = make_groups(args.batches, args.seed, args.min_words, args.max_words)
    dtypes = [d.strip() for d in args.dtypes.split(",") if d.strip()]

    print("measuring the matmul peaks ...", flush=True)
    peaks = {dtype: measure_matmul_peak(getattr(torch, dtype)) for dtype in sorted({"float32", *dtypes})}
    for dtype, peak in peaks.items():
        print(f"  {dtype}: {peak['gflops']:.1f} GFLOP/s ({peak['best']}, n={peak['layouts'][peak['best']]['n']})")

    options = json.loads(options_path.read_text())
    full_flops = flops_per_position(config_from_options(options))
    tokenizer = ElmoTokenizer(max_characters_per_token=options["char_cnn"]["max_characters_per_token"])

    def encode(sentences):
        return tokenizer(sentences, is_split_into_words=True, padding=True, return_tensors="pt")

    load_times = []
    compile_note = (
        "`model.compile_lstm_cells()` (torch.compile of the LSTM step, dynamic shapes)"
        if hasattr(ElmoModel, "compile_lstm_cells")
        else "`torch.compile(model, dynamic=True)`"
    )

    def load_model(dtype: str, *, mix: bool = False, compiled: bool = False) -> ElmoModel:
        """A freshly converted model for each run, so that each run's memory holds one model only."""
        start = time.perf_counter()
        model = load_allennlp_model(options, weights_path, progress=False)
        load_times.append(time.perf_counter() - start)
        if mix:
            mixed = MixedLayersModel(ElmoConfig.from_dict({**model.config.to_dict(), "mix_layers": [0, 1]})).eval()
            mixed.load_state_dict(model.state_dict())
            model = mixed
        model = model.to(getattr(torch, dtype))
        if compiled and hasattr(model, "compile_lstm_cells"):
            model.compile_lstm_cells()
        elif compiled:
            model = torch.compile(model, dynamic=True)
        return model

    # (implementation, dtype, model factory) in the order they run for each batch size
    variants = [(OURS, "float32", lambda: load_model("float32"))] if "float32" in dtypes else []
    mix_note = "n/a (not implemented yet)"
    if mix_layers_supported() and "float32" in dtypes:
        mix_note = ""
        variants.append((MIXED, "float32", lambda: load_model("float32", mix=True)))
    variants += [(OURS, dtype, lambda dtype=dtype: load_model(dtype)) for dtype in dtypes if dtype != "float32"]
    if args.compile:
        variants += [(COMPILED, dtype, lambda dtype=dtype: load_model(dtype, compiled=True)) for dtype in dtypes]

    runs: list[Run] = []
    worker = None
    if not args.skip_allennlp:
        worker = AllenNLPWorker(args, groups, options_path, weights_path, full_flops)
    allennlp_record = worker.info if worker else {}
    # Batch size by batch size, AllenNLP then each of ours: a change in the machine's load between the
    # implementations' runs stays short. With --rounds N all of it runs N times; each batch keeps its best time.
    for round_index in range(args.rounds):
        if args.rounds > 1:
            print(f"round {round_index + 1} of {args.rounds}", flush=True)
        for index, group in enumerate(groups):
            if worker:
                runs.append(worker.run(index))
            encoded = {"batches": [encode(batch) for batch in group.batches], "warmup": encode(group.warmup)}
            for implementation, dtype, factory in variants:
                try:
                    model = factory()
                except Exception as error:
                    traceback.print_exc()
                    run = Run(implementation, dtype, group, full_flops)
                    run.error = f"{type(error).__name__}: {error}".splitlines()[0][:200]
                    runs.append(run)
                    continue
                runs.append(run_ours(model, implementation, dtype, group, encoded, args))
                del model
                gc.collect()
    if worker:
        worker.close()
    runs = merge_rounds(runs)
    our_load_s = min(load_times) if load_times else float("nan")
    order = [(ALLENNLP, "float32")] + [(implementation, dtype) for implementation, dtype, _ in variants]
    runs.sort(key=lambda r: (order.index((r.implementation, r.dtype)), r.group.batch_size))

    rows = []
    for run in runs:
        reference = find(runs, ALLENNLP, "float32", run.group.batch_size)
        fp32 = find(runs, OURS, "float32", run.group.batch_size)
        rows.append(format_row(run, reference, fp32, peaks))
    if mix_note:
        rows.append([MIXED, "float32", "all", "", "", mix_note, "", "", "", "", "", ""])
    table = markdown_table(rows)
    targets = targets_summary(runs, args.target_batch)
    elapsed = time.perf_counter() - started
    load_end = os.getloadavg()

    def loads(values) -> str:
        return ", ".join(f"{v:.2f}" for v in values)

    details = [
        f"- command: `{command}` (repository {git_description()}), {started_at}, {elapsed / 60:.1f} minutes",
        f"- machine: {cpu_model()}, {os.cpu_count()} cores, {args.threads} torch threads in both processes; "
        f"load average (1, 5, 15 min) {loads(load_start)} at the start, {loads(load_end)} at the end "
        f"(this benchmark itself adds about {args.threads}: above that, other processes shared the cores)",
        f"- torch {torch.__version__} (ours), {allennlp_record.get('torch', 'n/a')} (AllenNLP's venv); "
        f"AllenNLP loaded the weights in {allennlp_record.get('load_s', float('nan')):.1f} s, "
        f"this package converted them in {our_load_s:.1f} s",
        "- matmul peak, best of `torch.mm(a, b)` and `F.linear(a, w)` on n x n x n products: "
        + "; ".join(
            f"{dtype} {peak['gflops']:.1f} GFLOP/s ("
            + ", ".join(f"{name} n={r['n']}: {r['gflops']:.1f}" for name, r in peak["layouts"].items())
            + ")"
            for dtype, peak in peaks.items()
        ),
        f"- FLOPs per position (word or sentence marker), 2 x multiply-adds: {sum(full_flops.values()) / 1e6:.1f} M "
        "= " + " + ".join(f"{name} {value / 1e6:.2f} M" for name, value in full_flops.items()),
        "- model: random full-size weights of 2x4096_512_2048cnn_2xhighway (93.6M parameters), seed "
        f"{args.seed}; sentences of {args.min_words}-{args.max_words} words, Zipf-distributed over 16,000 English "
        "words + 5% awkward ones (distinct words per batch: "
        + ", ".join(f"{distinct_share(group):.0%} at batch {group.batch_size}" for group in groups)
        + f"); {args.rounds} round(s), each batch's best time",
    ]
    if mix_layers_supported():
        details.append(
            f"- {MIXED}: `ElmoConfig(mix_layers=[0, 1])`, the same weights; the model runs the first LSTM layer only "
            "(its FLOPs count one LSTM layer) and its layers 0 and 1 are compared with AllenNLP's"
        )
    if args.compile:
        details.append(f"- {COMPILED}: {compile_note}, a freshly loaded model; compiled during the warm-up")
    if allennlp_record:
        details.append(
            "- AllenNLP 0.9.0 (`pip install --no-deps`), imported with placeholder modules for the absent "
            + ", ".join(sorted({name.partition(".")[0] for name in allennlp_record.get("stubbed_modules", [])}))
            + " (see benchmarks/allennlp_stubs.py); its LSTM state is reset before every batch"
        )
    columns = [
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
    report = "\n".join(
        [
            "# Inference benchmark: ElmoModel vs AllenNLP 0.9.0",
            "",
            table,
            "",
            "Targets:",
            "",
            *(targets or ["- n/a"]),
            "",
            "Run:",
            "",
            *details,
            "",
            "Columns:",
            "",
            *(f"- {line}" for line in columns),
            "",
        ]
    )
    print("\n" + report)
    Path(args.output).write_text(report)
    print(f"written to {args.output}")


if __name__ == "__main__":
    main()
