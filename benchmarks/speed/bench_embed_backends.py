"""`elmo-embed` end to end on each backend against AllenNLP 0.9.0's `allennlp elmo` command, on the same lines, in
one run: words per second from starting the command to its finished hdf5 file (every layer), the best of
alternating rounds, and how far the graphs' vectors are from PyTorch's.

The model: random weights of a released shape (default the original, 2x4096_512_2048cnn_2xhighway) as options.json +
weights.hdf5 (what `allennlp elmo` reads), converted with `elmo-convert allennlp` (PyTorch) and exported with
`elmo-convert onnx --quantize int8` (the graphs; the int8 graph runs from a folder holding it alone). The lines:
generated sentences of --min-words to --max-words words (`bench_common.make_sentences`). Each command runs in a
process of its own with its defaults (threads: all cores); a round runs every backend once, the next round in the
reverse order, so that the machine's load hits all alike.

    bash benchmarks/allennlp/make_venv.sh            # AllenNLP 0.9.0's venv, once
    python benchmarks/speed/bench_embed_backends.py  # 300 lines of 5-40 words, 2 rounds
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

import h5py
import numpy as np
from bench_common import (
    ALLENNLP_FOLDER,
    DEFAULT_ALLENNLP_VENV,
    converted_model,
    cpu_model,
    ensure_weights,
    exported_graphs,
    load_averages,
    make_sentences,
    markdown_table,
)

from elmo_transformers.inference.onnx_embedder import FLOAT_GRAPH

ALLENNLP, PYTORCH, FLOAT, INT8 = (
    "AllenNLP 0.9.0 `allennlp elmo`",
    "`elmo-embed`, PyTorch float32",
    "`elmo-embed`, onnxruntime float32 graph",
    "`elmo-embed`, onnxruntime int8 graph",
)


def _arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--shape", default="original", help="released shape of the random weights")
    parser.add_argument("--lines", type=int, default=300, help="lines embedded (default %(default)s)")
    parser.add_argument("--min-words", type=int, default=5)
    parser.add_argument("--max-words", type=int, default=40)
    parser.add_argument("--rounds", type=int, default=2, help="alternating rounds; the best counts (default 2)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--allennlp-venv", type=Path, default=Path(DEFAULT_ALLENNLP_VENV))
    parser.add_argument("--work-dir", type=Path, default=Path("/tmp/elmo-bench-embed-backends"))
    parser.add_argument(
        "--compare",
        type=Path,
        metavar="DIR",
        help="another export of the same model (an earlier version's, say): its two graphs run as two more backends",
    )
    return parser.parse_args()


def _int8_alone(onnx_folder: Path) -> Path:
    """A folder holding the export's files but the float32 graph (hard links): `elmo-embed` runs its int8 graph."""
    folder = onnx_folder.with_name(onnx_folder.name + "-int8")
    folder.mkdir(exist_ok=True)
    for path in onnx_folder.iterdir():
        if path.is_file() and path.name != FLOAT_GRAPH and not (folder / path.name).exists():
            os.link(path, folder / path.name)
    return folder


def _commands(args: argparse.Namespace, lines: Path) -> dict[str, tuple[list[str], Path]]:
    """Each backend's command and the hdf5 file it writes."""
    options, weights = ensure_weights(args.work_dir, args.seed, args.shape)
    model = converted_model(args.work_dir, args.seed, args.shape)
    graphs = exported_graphs(model, args.work_dir / f"{args.shape}-seed{args.seed}-onnx")
    worker = [str(args.allennlp_venv / "bin" / "python"), str(ALLENNLP_FOLDER / "elmo_command_worker.py")]
    embed = [sys.executable, "-m", "elmo_transformers.inference.embed", str(lines)]
    outputs = {label: args.work_dir / f"{index}.hdf5" for index, label in enumerate((ALLENNLP, PYTORCH, FLOAT, INT8))}
    commands = {
        ALLENNLP: ([*worker, str(options), str(weights), str(lines), str(outputs[ALLENNLP])], outputs[ALLENNLP]),
        PYTORCH: ([*embed, str(outputs[PYTORCH]), "--model", str(model)], outputs[PYTORCH]),
        FLOAT: ([*embed, str(outputs[FLOAT]), "--model", str(graphs)], outputs[FLOAT]),
        INT8: ([*embed, str(outputs[INT8]), "--model", str(_int8_alone(graphs))], outputs[INT8]),
    }
    if args.compare:
        for label, folder in ((FLOAT, args.compare), (INT8, _int8_alone(args.compare))):
            output = args.work_dir / f"compared-{len(commands)}.hdf5"
            commands[f"{label} ({args.compare.name})"] = ([*embed, str(output), "--model", str(folder)], output)
    return commands


def _seconds(command: list[str], output: Path) -> float:
    """Wall-clock seconds of `command`, from its start to its exit (it writes `output` anew)."""
    output.unlink(missing_ok=True)
    start = time.perf_counter()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


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


def main() -> None:
    args = _arguments()
    args.work_dir.mkdir(parents=True, exist_ok=True)
    sentences = make_sentences(args.seed, args.lines, args.lines, args.min_words, args.max_words)
    lines = args.work_dir / "lines.txt"
    lines.write_text("".join(" ".join(words) + "\n" for words in sentences), encoding="utf-8")
    words = sum(map(len, sentences))
    commands = _commands(args, lines)
    best, loads = dict.fromkeys(commands, float("inf")), [load_averages(os.getloadavg())]
    for round_index in range(args.rounds):
        order = list(commands) if round_index % 2 == 0 else list(reversed(commands))
        for label in order:
            seconds = _seconds(*commands[label])
            print(f"round {round_index + 1}: {label}: {seconds:.1f} s ({words / seconds:,.0f} words/s)", flush=True)
            best[label] = min(best[label], seconds)
        loads.append(load_averages(os.getloadavg()))
    speeds = {label: words / seconds for label, seconds in best.items()}
    rows = [
        [label, f"{speed:,.0f}", f"{speed / speeds[ALLENNLP]:.2f}x", f"{speed / speeds[PYTORCH]:.2f}x"]
        for label, speed in speeds.items()
    ]
    print(f"{len(sentences)} lines, {words:,} words; {args.shape} shape, random weights (seed {args.seed})")
    print(f"CPU: {cpu_model()}, {os.cpu_count()} cores; load averages at the start and after each round: {loads}")
    print(markdown_table(rows, ["backend", "words/s (best round)", "vs AllenNLP", "vs PyTorch"]))
    for label in [label for label in commands if label not in (ALLENNLP, PYTORCH)]:
        largest, mean, least = _agreement(commands[PYTORCH][1], commands[label][1])
        print(f"{label} vs PyTorch: largest difference {largest:.2e}; per-word cosine mean {mean:.6f}, min {least:.6f}")


if __name__ == "__main__":
    main()
