"""elmo-embed's default on a CPU, a worker a core of one thread each, against one process on every core
(`--workers 1`): the wall time of the whole command (start-up included) on inputs of a few sizes, with the bundled
default model on PyTorch and on its ONNX export, in interleaved rounds. Where the workers win is where
`inference/workers.py`'s WORKERS_FROM_WORDS puts the default.

    python benchmarks/speed/bench_embed_workers.py --lines 50 250 1000 3000 --rounds 2 [--models graph]

Each input is generated lines of 5-40 words drawn from examples/sentences.txt; each run writes a fresh file.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from harness_corpora import REPOSITORY, uniform_sentences, write_sentences
from harness_embed import elmo_embed_command, timed_command
from harness_timing import interleaved_rounds

DEFAULT_MODEL = REPOSITORY / "modeling_elmo" / "default_model"
ELMO_CONVERT = str(Path(sys.executable).with_name("elmo-convert"))
CORES = len(os.sched_getaffinity(0))
SETUPS = {"1 process": ["--workers", "1"], "a worker a core": ["--workers", str(CORES)]}


def write_lines(path: Path, count: int, seed: int = 0) -> int:
    """Write `count` generated lines to `path`; their words."""
    words = (REPOSITORY / "examples" / "sentences.txt").read_text(encoding="utf-8").split()
    sentences = uniform_sentences(words, count, random.Random(seed), 5, 40)
    write_sentences(path, sentences)
    return sum(map(len, sentences))


def export_graph(folder: Path) -> Path:
    """The default model exported by `elmo-convert onnx` into `folder`."""
    graph = folder / "default-onnx"
    command = [ELMO_CONVERT, "onnx", "--model", str(DEFAULT_MODEL), "--output", str(graph)]
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return graph


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--lines", type=int, nargs="+", default=[50, 250, 1000, 3000], help="input sizes, in lines")
    parser.add_argument("--rounds", type=int, default=2, help="interleaved rounds (default %(default)s)")
    parser.add_argument(
        "--models", nargs="+", choices=["PyTorch", "graph"], default=["PyTorch", "graph"], help="the models to run"
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as work:
        models = {"PyTorch": DEFAULT_MODEL} if "PyTorch" in args.models else {}
        if "graph" in args.models:
            models["graph"] = export_graph(Path(work))
        print(f"{CORES} cores, medians of {args.rounds} interleaved rounds, wall seconds")
        print(f"{'lines':>6} {'words':>7} {'model':<8} {'1 process':>10} {'workers':>8} {'ratio':>6}")
        for lines in args.lines:
            source = Path(work) / f"lines-{lines}.txt"
            words = write_lines(source, lines)
            labels = [(model, setup) for model in models for setup in SETUPS]

            def measure(round_: int, label: tuple[str, str], source: Path = source) -> float:
                model, setup = label
                output = Path(work) / "out.hdf5"
                command = elmo_embed_command(str(source), str(output), "--model", str(models[model]), *SETUPS[setup])
                return timed_command(command, output).wall

            walls = interleaved_rounds(labels, args.rounds, measure, alternate=True)
            for model in models:
                one, workers = (statistics.median(walls[model, setup]) for setup in SETUPS)
                print(f"{lines:>6} {words:>7,} {model:<8} {one:>10.1f} {workers:>8.1f} {one / workers:>5.2f}x")


if __name__ == "__main__":
    main()
