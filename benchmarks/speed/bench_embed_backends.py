"""`elmo-embed` end to end on each backend against AllenNLP 0.9.0's `allennlp elmo` command, on the same lines, in
one run: words per second from starting the command to its finished hdf5 file (every layer), the best of
alternating rounds, and how far the graphs' vectors are from PyTorch's.

Two races (issue 41's targets):
- the original shape at each of --sizes (default 300 and 1,500 lines): random weights of a released shape (default the
  original, 2x4096_512_2048cnn_2xhighway) as options.json + weights.hdf5 (what `allennlp elmo` reads), converted with
  `elmo-convert allennlp` (PyTorch, run in float32 and with `--dtype bfloat16`) and exported with `elmo-convert onnx
  --quantize int8` (the graphs; the int8 graph runs from a folder holding it alone), against AllenNLP;
- a short run, --short-lines (default 5) lines: the bundled model's int8 graph against its PyTorch folder, whose wall
  time is mostly the command's start (imports, opening the model), best of --short-rounds.
The lines: generated sentences of --min-words to --max-words words (`harness_corpora.make_sentences`). Each command runs
in a process of its own with its defaults (threads: all cores); a round runs every backend once, the next round in
the reverse order, so that the machine's load hits all alike. Beside each wall time the command's CPU time (user +
system, all its threads'), which the machine's other work hardly moves; and first how each side runs torch (threads,
OpenMP's wait policy, the native libraries' settings: `harness_reports.torch_settings`), which moves the wall time.

    bash benchmarks/allennlp/make_venv.sh            # AllenNLP 0.9.0's venv, once
    python benchmarks/speed/bench_embed_backends.py  # 300 and 1,500 lines of 5-40 words, 2 rounds; 5 lines, 5 rounds

`--workers N` adds PyTorch float32 and bfloat16 and the int8 graph with `elmo-embed --workers N` (N single-thread
processes, whatever the input's size).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import h5py
import numpy as np
from harness_backends import ALLENNLP_FOLDER, DEFAULT_ALLENNLP_VENV, converted_model, ensure_weights, exported_graphs
from harness_corpora import make_sentences, write_sentences
from harness_embed import CommandSeconds, elmo_embed_command, timed_command
from harness_reports import cpu_flags, cpu_model, markdown_table, ratio, torch_settings
from harness_timing import race

from elmo_transformers.serving.graph_layout import FLOAT_GRAPH, graph_files
from modeling_elmo import DEFAULT_MODEL

ALLENNLP, PYTORCH, BFLOAT16, FLOAT, INT8 = (
    "AllenNLP 0.9.0 `allennlp elmo`",
    "`elmo-embed`, PyTorch float32",
    "`elmo-embed`, PyTorch bfloat16",
    "`elmo-embed`, onnxruntime float32 graph",
    "`elmo-embed`, onnxruntime int8 graph",
)


def _arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--shape", default="original", help="released shape of the random weights")
    parser.add_argument("--sizes", default="300,1500", help="lines embedded, each size a race (default %(default)s)")
    parser.add_argument("--min-words", type=int, default=5)
    parser.add_argument("--max-words", type=int, default=40)
    parser.add_argument("--rounds", type=int, default=2, help="alternating rounds; the best counts (default 2)")
    parser.add_argument("--short-lines", type=int, default=5, help="lines of the short run (0: none; default 5)")
    parser.add_argument("--short-rounds", type=int, default=5, help="rounds of the short run (default 5)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--allennlp-venv", type=Path, default=Path(DEFAULT_ALLENNLP_VENV))
    parser.add_argument("--work-dir", type=Path, default=Path("/tmp/elmo-bench-embed-backends"))
    parser.add_argument(
        "--workers",
        type=int,
        help="also run PyTorch float32 and bfloat16 and the int8 graph with --workers N (single-thread processes)",
    )
    parser.add_argument(
        "--compare",
        type=Path,
        metavar="DIR",
        help="another export of the same model (an earlier version's, say): its two graphs run as two more backends",
    )
    return parser.parse_args()


def _int8_alone(onnx_folder: Path) -> Path:
    """A folder holding the export's files but the float32 graph's (hard links): `elmo-embed` runs its int8 graph.
    (The folder's SHA256SUMS still records the float32 graph's files: elmo-embed compares only those it reads.)"""
    folder = onnx_folder.with_name(onnx_folder.name + "-int8")
    folder.mkdir(exist_ok=True)
    float_graph = {path.name for path in graph_files(onnx_folder / FLOAT_GRAPH)}
    for path in onnx_folder.iterdir():
        if path.is_file() and path.name not in float_graph and not (folder / path.name).exists():
            os.link(path, folder / path.name)
    return folder


def _commands(args: argparse.Namespace, lines: Path) -> dict[str, tuple[list[str], Path]]:
    """Each backend's command on the original shape and the hdf5 file it writes."""
    options, weights = ensure_weights(args.work_dir, args.seed, args.shape)
    model = converted_model(args.work_dir, args.seed, args.shape)
    graphs = exported_graphs(model, args.work_dir / f"{args.shape}-seed{args.seed}-onnx")
    worker = [str(args.allennlp_venv / "bin" / "python"), str(ALLENNLP_FOLDER / "elmo_command_worker.py")]
    embed = elmo_embed_command(str(lines))
    labels = (ALLENNLP, PYTORCH, BFLOAT16, FLOAT, INT8)
    outputs = {label: args.work_dir / f"{index}.hdf5" for index, label in enumerate(labels)}
    commands = {
        ALLENNLP: ([*worker, str(options), str(weights), str(lines), str(outputs[ALLENNLP])], outputs[ALLENNLP]),
        PYTORCH: ([*embed, str(outputs[PYTORCH]), "--model", str(model)], outputs[PYTORCH]),
        BFLOAT16: ([*embed, str(outputs[BFLOAT16]), "--model", str(model), "--dtype", "bfloat16"], outputs[BFLOAT16]),
        FLOAT: ([*embed, str(outputs[FLOAT]), "--model", str(graphs)], outputs[FLOAT]),
        INT8: ([*embed, str(outputs[INT8]), "--model", str(_int8_alone(graphs))], outputs[INT8]),
    }
    if args.workers:
        for label in (PYTORCH, BFLOAT16, INT8):
            options_of_label = commands[label][0][len(embed) + 1 :]  # (after the command and its output)
            output = args.work_dir / f"workers-{len(commands)}.hdf5"
            command = [*embed, str(output), *options_of_label, "--workers", str(args.workers)]
            commands[f"{label}, --workers {args.workers}"] = (command, output)
    if args.compare:
        for label, folder in ((FLOAT, args.compare), (INT8, _int8_alone(args.compare))):
            output = args.work_dir / f"compared-{len(commands)}.hdf5"
            commands[f"{label} ({args.compare.name})"] = ([*embed, str(output), "--model", str(folder)], output)
    return commands


def _short_commands(args: argparse.Namespace, lines: Path) -> dict[str, tuple[list[str], Path]]:
    """The short run's commands: the bundled model's PyTorch folder and its int8 graph (a folder holding it alone)."""
    graphs = _int8_alone(exported_graphs(Path(DEFAULT_MODEL), args.work_dir / "bundled-onnx"))
    embed = elmo_embed_command(str(lines))
    outputs = {label: args.work_dir / f"short-{index}.hdf5" for index, label in enumerate((PYTORCH, INT8))}
    return {
        PYTORCH: ([*embed, str(outputs[PYTORCH]), "--model", str(DEFAULT_MODEL)], outputs[PYTORCH]),
        INT8: ([*embed, str(outputs[INT8]), "--model", str(graphs)], outputs[INT8]),
    }


def _vectors(path: Path) -> list[np.ndarray]:
    """Each line's vectors (layers, words, 2P) of an hdf5 file in `allennlp elmo`'s layout, in line order."""
    with h5py.File(path, "r") as file:
        return [file[key][()] for key in sorted((key for key in file if key.isdigit()), key=int)]


def _agreement(reference: Path, other: Path) -> tuple[float, float, float]:
    """`other`'s vectors against `reference`'s: the largest difference, and the mean and least per-word cosine of
    the biLSTM layers."""
    largest, cosines = 0.0, []
    for mine, theirs in zip(_vectors(reference), _vectors(other), strict=True):
        largest = max(largest, float(np.abs(mine - theirs).max(initial=0.0)))
        a, b = mine[1:].reshape(-1, mine.shape[-1]), theirs[1:].reshape(-1, mine.shape[-1])
        cosines.append((a * b).sum(1) / np.maximum(np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1), 1e-30))
    every = np.concatenate(cosines)
    return largest, float(every.mean()), float(every.min())


def _race(
    commands: dict[str, tuple[list[str], Path]], rounds: int, words: int
) -> tuple[dict[str, CommandSeconds], list[str]]:
    """Each command's round of least wall-clock seconds over `rounds` alternating rounds, and the load averages at
    the start and after each round."""

    def measure(round_index: int, label: str) -> CommandSeconds:
        seconds = timed_command(*commands[label])
        print(
            f"round {round_index + 1}: {label}: {seconds.wall:.2f} s ({words / seconds.wall:,.0f} words/s),"
            f" CPU {seconds.cpu:.1f} s",
            flush=True,
        )
        return seconds

    return race(list(commands), rounds, measure, key=lambda seconds: seconds.wall)


def _original_shape_race(args: argparse.Namespace, lines_count: int) -> None:
    """The backends on `lines_count` lines of the original shape: words/s and the ratios, then each one's agreement
    with PyTorch float32's vectors."""
    sentences = make_sentences(args.seed, lines_count, lines_count, args.min_words, args.max_words)
    lines = write_sentences(args.work_dir / f"lines-{lines_count}.txt", sentences)
    words = sum(map(len, sentences))
    commands = _commands(args, lines)
    best, loads = _race(commands, args.rounds, words)
    speeds = {label: words / seconds.wall for label, seconds in best.items()}
    rows = [
        [
            label,
            f"{best[label].wall:.1f}",
            f"{best[label].cpu:.1f}",
            f"{speed:,.0f}",
            ratio(speed, speeds[ALLENNLP]),
            ratio(speed, speeds[PYTORCH]),
        ]
        for label, speed in speeds.items()
    ]
    print(f"{len(sentences)} lines, {words:,} words; {args.shape} shape, random weights (seed {args.seed})")
    print(f"load averages at the start and after each round: {loads}")
    header = ["backend", "seconds (best round)", "its CPU seconds", "words/s", "vs AllenNLP", "vs PyTorch"]
    print(markdown_table(rows, header))
    for label in [label for label in commands if label not in (ALLENNLP, PYTORCH)]:
        largest, mean, least = _agreement(commands[PYTORCH][1], commands[label][1])
        print(f"{label} vs PyTorch: largest difference {largest:.2e}; per-word cosine mean {mean:.6f}, min {least:.6f}")


def _short_race(args: argparse.Namespace) -> None:
    """The short run: the bundled model's int8 graph against its PyTorch folder, wall time and its ratio."""
    sentences = make_sentences(args.seed, args.short_lines, args.short_lines, args.min_words, args.max_words)
    lines = write_sentences(args.work_dir / f"lines-{args.short_lines}.txt", sentences)
    words = sum(map(len, sentences))
    best, loads = _race(_short_commands(args, lines), args.short_rounds, words)
    print(f"{len(sentences)} lines, {words:,} words; the bundled model; load averages: {loads}")
    rows = [
        [label, f"{seconds.wall:.2f}", f"{seconds.cpu:.2f}", ratio(seconds.wall, best[PYTORCH].wall)]
        for label, seconds in best.items()
    ]
    print(markdown_table(rows, ["backend", "wall seconds (best round)", "its CPU seconds", "vs PyTorch's wall time"]))


def main() -> None:
    args = _arguments()
    args.work_dir.mkdir(parents=True, exist_ok=True)
    print(f"CPU: {cpu_model()}, {os.cpu_count()} cores; flags: {cpu_flags()}")
    print(f"elmo-embed runs torch so: {torch_settings(sys.executable, elmo=True)}")
    print(f"AllenNLP runs torch so: {torch_settings(str(args.allennlp_venv / 'bin' / 'python'), elmo=False)}")
    if args.short_lines:
        _short_race(args)
    for size in map(int, args.sizes.split(",") if args.sizes else []):
        _original_shape_race(args, size)


if __name__ == "__main__":
    main()
