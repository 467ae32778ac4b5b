"""elmo-embed across processes on this machine: words/s of 1 and 2 processes (`accelerate launch`, CPU processes over
gloo, 1 thread each) against one process of 1 thread, and one process of 2 threads, in interleaved rounds of the
same run.

    python benchmarks/speed/bench_embed_processes.py --lines 5000 --rounds 2 [--model DIR]

Each run embeds the same generated lines (5-40 words drawn from examples/sentences.txt) into a fresh file; the rate
is the one elmo-embed's summary prints (words over the seconds from the first batch to the merged file, so model
loading is left out; the wall time, start-up included, is shown beside it). Every file is checked equal, bit for bit,
to the first one computed with as many threads per process (the products' results depend on the thread count).
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from harness_corpora import REPOSITORY, uniform_sentences, write_sentences
from harness_embed import ELMO_EMBED_MODULE, same_datasets, summary_rate
from harness_timing import interleaved_rounds

ELMO_EMBED = str(Path(sys.executable).with_name("elmo-embed"))

# name -> (processes, threads per process)
SETUPS = {
    "1 process, 1 thread": (1, 1),
    "1 process, 2 threads": (1, 2),
    "2 processes, 1 thread each": (2, 1),
}


def write_lines(path: Path, count: int, seed: int = 0) -> None:
    words = (REPOSITORY / "examples" / "sentences.txt").read_text(encoding="utf-8").split()
    write_sentences(path, uniform_sentences(words, count, random.Random(seed), 5, 40))


def run(setup: str, source: Path, output: Path, model: list[str]) -> tuple[float, float]:
    """(words/s from the summary, wall seconds) of one run."""
    processes, threads = SETUPS[setup]
    environment = {**os.environ, "OMP_NUM_THREADS": str(threads), "MKL_NUM_THREADS": str(threads)}
    if processes == 1:
        command = [ELMO_EMBED]
    else:
        command = [
            sys.executable, "-m", "accelerate.commands.launch", "--multi_gpu", "--num_processes", str(processes),
            "--num_machines", "1", "--mixed_precision", "no", "--dynamo_backend", "no",
            "-m", ELMO_EMBED_MODULE,
        ]  # fmt: skip
    started = time.perf_counter()
    completed = subprocess.run(
        [*command, str(source), str(output), *model], env=environment, capture_output=True, text=True
    )
    wall = time.perf_counter() - started
    if completed.returncode != 0:
        sys.exit(f"{setup} failed:\n{completed.stderr[-3000:]}")
    return summary_rate(completed.stdout), wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--lines", type=int, default=5000, help="generated lines to embed (default %(default)s)")
    parser.add_argument("--rounds", type=int, default=2, help="interleaved rounds of every setup (default %(default)s)")
    parser.add_argument("--model", help="model folder (default: the bundled default model)")
    args = parser.parse_args()
    model = ["--model", args.model] if args.model else []
    with tempfile.TemporaryDirectory() as work:
        source = Path(work) / "lines.txt"
        write_lines(source, args.lines)
        first: dict[int, Path] = {}  # threads per process -> the first file computed so

        def measure(round_: int, setup: str) -> tuple[float, float]:
            output = Path(work) / f"out-{round_}-{list(SETUPS).index(setup)}.hdf5"
            rate, wall = run(setup, source, output, model)
            threads = SETUPS[setup][1]
            if threads not in first:
                first[threads] = output
            elif same_datasets(first[threads], output):
                output.unlink()
            else:
                sys.exit(f"{setup}: the file differs from that of the first run with {threads} threads a process")
            return rate, wall

        runs = interleaved_rounds(list(SETUPS), args.rounds, measure)
        rates = {setup: [rate for rate, _ in runs[setup]] for setup in SETUPS}
        walls = {setup: [wall for _, wall in runs[setup]] for setup in SETUPS}
        baseline = statistics.median(rates["1 process, 1 thread"])
        print(f"{args.lines:,} lines, medians of {args.rounds} interleaved rounds (equal files at equal threads):")
        print(f"{'setup':<28} {'words/s':>9} {'vs 1x1':>7} {'wall s':>7}")
        for setup in SETUPS:
            rate = statistics.median(rates[setup])
            print(f"{setup:<28} {rate:>9,.0f} {rate / baseline:>6.2f}x {statistics.median(walls[setup]):>7.1f}")


if __name__ == "__main__":
    main()
