"""What does the zero LSTM state cost? POS tagging (the experiment of pos_sample_efficiency.py) with the biLM's
layers computed with every sentence starting from the zero state, as this package does, against every sentence
starting from one fixed warm state.

    python benchmarks/quality/pos_warm_state.py --model modeling_elmo/default_model --warmup_text heldout.txt
    python benchmarks/quality/pos_warm_state.py --model modeling_elmo/default_model --warmup_text heldout.txt \\
        --fractions 0.01 --seeds 0 --output_dir /tmp/warm

AllenNLP and bilm-tf carried the LSTM state of batch row k into row k of the next batch, so their vectors depended
on what ran before, and AllenNLP's advice against the run-to-run noise was to warm the model up on some text first.
The warm state here is that warm-up made fixed: --warmup_rows rows read --warmup_batches batches of sentences of
--warmup_text (one sentence a line, words separated by spaces), the state carried from batch to batch; the final
state is averaged over the rows, and every sentence of the corpus then starts from that one state (so its vectors
depend on nothing else). Both biLM runs go through the feature cache; every tagger is trained with the recipe and
the options of pos_sample_efficiency.py (any of its options may be given), on the same samples and seeds.
Written to --output_dir: `pos_warm_state.md` (token accuracy, zero vs warm, mean ± std over seeds).
"""

from __future__ import annotations

import argparse
import os
import platform
import shlex
import sys
import time
from pathlib import Path

import numpy as np
import torch
import transformers
from pos_corpus import fetch_corpus, parse_tagged_lines, split_corpus
from pos_features import compute_features
from pos_runs import RunResult, run_one
from pos_sample_efficiency import parse_arguments
from pos_taggers import schemes
from tqdm.auto import tqdm

from modeling_elmo import ElmoModel, ElmoTokenizer

OUTPUT_NAME = "pos_warm_state"


class WarmStartedElmo(ElmoModel):
    """The biLM with every sentence starting from the fixed state `warm_h`, `warm_c` (buffers of shapes
    (2, layers, 1, P) and (2, layers, 1, C), so that the feature cache's key, a hash of the state dict, tells the
    two runs apart) instead of zeros."""

    def set_warm_state(self, h: torch.Tensor, c: torch.Tensor) -> None:
        self.register_buffer("warm_h", h)
        self.register_buffer("warm_c", c)

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None, **kwargs):
        batch = input_ids.shape[0]
        state = (self.warm_h.expand(-1, -1, batch, -1), self.warm_c.expand(-1, -1, batch, -1))
        return super().forward(input_ids, attention_mask, state=state, use_cache=False, **kwargs)


def warm_state(
    bilm: ElmoModel, tokenizer: ElmoTokenizer, sentences: list[list[str]], rows: int, batches: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """The final state after `rows` rows read `batches` batches of `sentences`, carried, averaged over the rows."""
    if len(sentences) < rows * batches:
        sys.exit(f"error: the warm-up needs {rows * batches} sentences, the text has {len(sentences)}")
    state = None
    with torch.no_grad():
        for first in range(0, rows * batches, rows):
            inputs = tokenizer(
                sentences[first : first + rows], is_split_into_words=True, padding=True, return_tensors="pt"
            )
            state = bilm(**inputs, state=state, use_cache=True).state
    h, c = state
    return h.mean(dim=2, keepdim=True), c.mean(dim=2, keepdim=True)


def cpu_name() -> str:
    """The processor's model name (Linux's /proc/cpuinfo), else what `platform` knows."""
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.is_file():
        for line in cpuinfo.read_text().splitlines():
            if line.startswith("model name"):
                return line.partition(":")[2].strip()
    return platform.processor() or platform.machine()


def table(results: dict[str, list[RunResult]], fractions: list[float], train_sentences: int) -> str:
    def cell(runs: list[RunResult]) -> str:
        accuracies = 100 * np.array([run.accuracy for run in runs])
        return f"{accuracies.mean():.2f} ± {accuracies.std():.2f}"

    heading = " | ".join(
        f"{100 * fraction:g}% ({round(fraction * train_sentences):,} sentences)" for fraction in fractions
    )
    lines = [f"| start of every sentence | {heading} |", "| --- |" + " ---: |" * len(fractions)]
    for name, runs in results.items():
        cells = " | ".join(cell([run for run in runs if run.fraction == fraction]) for fraction in fractions)
        lines.append(f"| {name} | {cells} |")
    differences = []
    for fraction in fractions:
        zero = np.array([run.accuracy for run in results["zero state"] if run.fraction == fraction])
        warm = np.array([run.accuracy for run in results["warm state"] if run.fraction == fraction])
        differences.append(f"{100 * (warm - zero).mean():+.2f}")
    lines.append(f"| warm - zero (points) | {' | '.join(differences)} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--warmup_text", type=Path, required=True, help="one sentence a line, words by spaces")
    parser.add_argument("--warmup_rows", type=int, default=64, help="rows of the warm-up batches")
    parser.add_argument("--warmup_batches", type=int, default=4, help="batches read, the state carried")
    parser.add_argument("--scheme", default="scalar_mix", help="the tagger (a pos_sample_efficiency.py row)")
    own, rest = parser.parse_known_args(argv)
    arguments = parse_arguments(rest)
    if arguments.threads:
        torch.set_num_threads(arguments.threads)
    started = time.perf_counter()
    command = shlex.join(["python", "benchmarks/quality/pos_warm_state.py", *(sys.argv[1:] if argv is None else argv)])
    transformers.logging.set_verbosity_error()

    corpus_path = Path(arguments.corpus) if arguments.corpus else fetch_corpus(arguments.download_dir)
    sentences = parse_tagged_lines(corpus_path.read_text(encoding="utf-8").splitlines())
    corpus = split_corpus(
        sentences, arguments.test_sentences, arguments.split_seed, arguments.max_train_sentences,
        arguments.max_test_sentences,
    )  # fmt: skip
    tokenizer = ElmoTokenizer.from_pretrained(arguments.model)
    zero = ElmoModel.from_pretrained(arguments.model, mix_layers=None).eval()
    warm = WarmStartedElmo.from_pretrained(arguments.model, mix_layers=None).eval()
    warmup = [line.split() for line in own.warmup_text.read_text(encoding="utf-8").splitlines() if line.split()]
    warm.set_warm_state(*warm_state(zero, tokenizer, warmup, own.warmup_rows, own.warmup_batches))
    [scheme] = schemes(zero.config, [own.scheme], shuffled_control=False)

    results: dict[str, list[RunResult]] = {}
    seconds = {}
    for name, bilm in (("zero state", zero), ("warm state", warm)):
        features, feature_seconds, _ = compute_features(corpus, bilm, tokenizer, arguments)
        plan = [(fraction, seed) for seed in arguments.seeds for fraction in arguments.fractions]
        runs = []
        for fraction, seed in tqdm(plan, desc=name, unit="run"):
            runs.append(run_one(scheme, fraction, seed, corpus, {False: features}, arguments))
            tqdm.write(f"{name} {100 * fraction:g}% seed {seed}: accuracy {100 * runs[-1].accuracy:.2f}%")
        results[name] = runs
        seconds[name] = feature_seconds + sum(run.seconds for run in runs)

    rows = table(results, arguments.fractions, len(corpus.train))
    hardware = f"{cpu_name()}, {os.cpu_count()} cores, {torch.get_num_threads()} torch thread(s)"
    report = "\n".join(
        [
            f"# POS accuracy (%), {scheme.title}: zero vs warm LSTM state",
            "",
            f"Command: `{command}`",
            "",
            f"- hardware: {hardware}; {time.perf_counter() - started:.0f} s in all "
            f"(zero state {seconds['zero state']:.0f} s, warm state {seconds['warm state']:.0f} s, biLM layers "
            "included)",
            f"- warm-up: {own.warmup_rows} rows x {own.warmup_batches} batches of `{own.warmup_text}`; seeds "
            f"{' '.join(map(str, arguments.seeds))}; train {len(corpus.train):,} / test {len(corpus.test):,} sentences",
            "",
            rows,
            "",
        ]
    )
    output_dir = Path(arguments.output_dir)
    output_dir.mkdir(parents=True, exist_ok=True)
    (output_dir / f"{OUTPUT_NAME}.md").write_text(report)
    print(report)


if __name__ == "__main__":
    main()
