"""The report of pos_sample_efficiency.py: the markdown tables (mean ± std over seeds) and the plot of
accuracy against training fraction."""

from __future__ import annotations

import argparse
import os
import statistics
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import torch
from pos_corpus import Corpus
from pos_runs import GRADIENT_CLIP, RunResult
from pos_taggers import BASELINE, BASELINE_ELMO, Scheme

from modeling_elmo import ElmoModel

__all__ = ["OUTPUT_NAME", "describe_model", "results_table", "write_plot", "write_report"]

OUTPUT_NAME = "pos_sample_efficiency"
PLOT_STYLES = {BASELINE: {"color": "black", "linestyle": "--"}, BASELINE_ELMO: {"color": "black"}}  # others: cycle


def _mean_std(values: Sequence[float | None]) -> tuple[float, float] | None:
    present = [value for value in values if value is not None]
    if not present:
        return None
    return statistics.fmean(present), statistics.stdev(present) if len(present) > 1 else 0.0


def _cell(values: Sequence[float | None], percent: bool = True) -> str:
    summary = _mean_std(values)
    if summary is None:
        return "-"
    mean, std = summary
    scale = 100 if percent else 1
    text = f"{scale * mean:.1f}" if percent else f"{mean:.1f}"
    return text + (f" ± {scale * std:.1f}" if len(values) > 1 else "")


def results_table(
    results: Sequence[RunResult], rows: Sequence[Scheme], fractions: Sequence[float], value: Callable, percent=True
) -> list[str]:
    sentences = {r.fraction: r.sentences for r in results}
    header = "| model | " + " | ".join(
        f"{100 * fraction:g}% ({sentences.get(fraction, 0):,} sentences)" for fraction in fractions
    )
    lines = [header + " |", "| --- |" + " ---: |" * len(fractions)]
    for scheme in rows:
        cells = []
        for fraction in fractions:
            values = [value(r) for r in results if r.scheme == scheme.key and r.fraction == fraction]
            cells.append(_cell(values, percent) if values else "-")
        lines.append(f"| {scheme.title} | " + " | ".join(cells) + " |")
    return lines


def write_plot(path: Path, results: Sequence[RunResult], rows: Sequence[Scheme], fractions: Sequence[float]) -> None:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=(11, 5.2))
    FigureCanvasAgg(figure)
    panels = ("all test tokens", "test words unseen in the training fraction")
    for position, title in enumerate(panels):
        axes = figure.add_subplot(1, 2, position + 1)
        for scheme in rows:
            xs, means, stds = [], [], []
            for fraction in fractions:
                runs = [r for r in results if r.scheme == scheme.key and r.fraction == fraction]
                values = [r.accuracy if position == 0 else r.unseen_accuracy for r in runs]
                summary = _mean_std(values)
                if summary is not None:
                    xs.append(fraction)
                    means.append(100 * summary[0])
                    stds.append(100 * summary[1])
            style = PLOT_STYLES.get(scheme.key, {})
            axes.errorbar(xs, means, yerr=stds, marker="o", capsize=3, label=scheme.title, **style)
        axes.set_xscale("log")
        axes.set_xticks(list(fractions), [f"{100 * fraction:g}%" for fraction in fractions])
        axes.set_xlabel("fraction of the training split")
        axes.set_ylabel("token accuracy (%)")
        axes.set_title(title)
        axes.grid(True, alpha=0.3)
    handles, labels = figure.axes[0].get_legend_handles_labels()
    figure.legend(handles, labels, loc="lower center", ncol=3, fontsize=8, frameon=False)
    figure.suptitle("POS tagging (OANC): accuracy against training data, mean ± std over seeds")
    figure.tight_layout(rect=(0, 0.1, 1, 1))
    figure.savefig(path, dpi=110)


def describe_model(model_dir: str, bilm: ElmoModel) -> str:
    config = bilm.config
    parameters = sum(parameter.numel() for parameter in bilm.parameters())
    return (
        f"`{model_dir}`: {parameters:,} biLM parameters, {config.num_hidden_layers} biLSTM layers of "
        f"{config.cell_size} cells, projection {config.projection_dim} (layers {config.hidden_size} wide), "
        f"{config.num_filters} CNN filters, {config.num_highway_layers} highway layer(s)"
    )


def write_report(
    path: Path,
    *,
    command: str,
    model_line: str,
    corpus: Corpus,
    corpus_source: str,
    results: Sequence[RunResult],
    rows: Sequence[Scheme],
    arguments: argparse.Namespace,
    timings: dict[str, float],
) -> str:
    """Write the report's markdown to `path`; returns its accuracy table."""
    fractions = arguments.fractions
    test_words = sum(len(corpus.sentences[index].words) for index in corpus.test)
    accuracy = results_table(results, rows, fractions, lambda r: r.accuracy)
    text = [
        "# Is ELMo useful? POS tagging with 1%, 10% and 100% of the training data",
        "",
        f"Command: `{command}`",
        "",
        *_setup_lines(model_line, corpus, corpus_source, results, arguments, timings),
        "",
        "## Token accuracy on the test split (%)",
        "",
        *accuracy,
        "",
        f"## Accuracy on test words unseen in the training fraction (%; their share of the test tokens: "
        f"{', '.join(_unseen_shares(results, fractions, test_words))})",
        "",
        *results_table(results, rows, fractions, lambda r: r.unseen_accuracy),
        "",
        "## Seconds per run (training and test evaluation, mean over seeds)",
        "",
        *results_table(results, rows, fractions, lambda r: r.seconds, percent=False),
        "",
        *_layer_weights_section(results, rows, fractions),
        f"![accuracy against training fraction]({OUTPUT_NAME}.png)",
        "",
        "How to read it: the baseline sees the task data only (no pretrained embeddings, no characters), so "
        "its unseen words are all `<unk>`; the ELMo rows get every word's characters and context from the biLM "
        "(`word embeddings + ELMo` on top of the baseline's embeddings, as Peters et al. used it). "
        "A gap smaller than the seeds' spread is not a difference. The `shuffled biLM weights` control "
        "(--shuffled_control), when present, shows how much of the gain comes from the architecture (even an "
        "untrained character CNN tells words apart) rather than from language-model training.",
        "",
    ]
    path.write_text("\n".join(text), encoding="utf-8")
    return "\n".join(accuracy)


def _setup_lines(
    model_line: str,
    corpus: Corpus,
    corpus_source: str,
    results: Sequence[RunResult],
    arguments: argparse.Namespace,
    timings: dict[str, float],
) -> list[str]:
    """The report's list of what was run: model, data, recipe, seeds, run time."""
    train_words = sum(len(corpus.sentences[index].words) for index in corpus.train)
    test_words = sum(len(corpus.sentences[index].words) for index in corpus.test)
    seeds = " ".join(str(seed) for seed in arguments.seeds)
    return [
        f"- model: {model_line}",
        f"- data: {corpus_source}; {len(corpus.labels)} tags; split seed {arguments.split_seed}: "
        f"train {len(corpus.train):,} sentences ({train_words:,} words), test {len(corpus.test):,} sentences "
        f"({test_words:,} words); training fractions are seeded samples of the training split, nested, one per seed",
        f"- recipe (every row): {_recipe(results, arguments)}",
        f"- seeds: {seeds} (cells: mean ± std over seeds, in %)",
        f"- run time: {timings['total'] / 60:.1f} min in all, on {torch.get_num_threads()} torch thread(s), "
        f"{os.cpu_count()} cores; the biLM's layers {timings['features']:.0f} s "
        f"({'read from the feature cache' if timings['reused'] else 'computed and cached'}); "
        f"training and evaluation {timings['runs'] / 60:.1f} min for {len(results)} runs",
    ]


def _recipe(results: Sequence[RunResult], arguments: argparse.Namespace) -> str:
    """The training recipe every row shares, with each fraction's number of updates."""
    steps = {r.fraction: r.steps for r in results}
    return (
        f"Adam, learning rate {arguments.learning_rate:g}, batches of {arguments.batch_size} sentences, "
        f"max({arguments.epochs:g} epochs, {arguments.min_steps} steps) updates "
        f"({', '.join(f'{100 * fraction:g}%: {steps.get(fraction, 0)}' for fraction in arguments.fractions)}), "
        f"dropout {arguments.dropout:g} on the task encoder's input and output, BiLSTM task encoder "
        f"{arguments.task_hidden_size} per direction, gradient clipping {GRADIENT_CLIP:g}; no early stopping"
    )


def _unseen_shares(results: Sequence[RunResult], fractions: Sequence[float], test_words: int) -> list[str]:
    """For each fraction that ran: the share of the test tokens whose word its training sample lacks."""
    shares = []
    for fraction in fractions:
        runs = [r for r in results if r.fraction == fraction]
        if runs:
            share = statistics.fmean(r.unseen_tokens for r in runs) / test_words
            shares.append(f"{100 * fraction:g}%: {100 * share:.1f}%")
    return shares


def _layer_weights_section(
    results: Sequence[RunResult], rows: Sequence[Scheme], fractions: Sequence[float]
) -> list[str]:
    """The table of the learned layer weights (mean over seeds) of the rows that learn them; none without such."""
    lines = []
    for scheme in rows:
        for fraction in fractions:
            runs = [r for r in results if r.scheme == scheme.key and r.fraction == fraction and r.layer_weights]
            if runs:
                layers = list(runs[0].layer_weights)
                mean = np.mean([[r.layer_weights[layer] for layer in layers] for r in runs], axis=0)
                shown = ", ".join(f"layer {layer} {weight:.2f}" for layer, weight in zip(layers, mean, strict=True))
                lines.append(f"| {scheme.title} | {100 * fraction:g}% | {shown} |")
    if not lines:
        return []
    return [
        "## Learned layer weights (softmax of the scalar mix, mean over seeds)",
        "",
        "| model | fraction | weights |",
        "| --- | --- | --- |",
        *lines,
        "",
    ]
