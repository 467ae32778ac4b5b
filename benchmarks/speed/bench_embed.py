"""`elmo-embed` end to end: its oneDNN kernel cache against none (``ONEDNN_PRIMITIVE_CACHE_CAPACITY=0``, what it
set before), in words/s and peak memory, on the workloads where the cache matters.

Each measurement is one `elmo-embed` process on synthetic text from the bundled default model's vocabulary
(Zipf-distributed words, sentence lengths log-normal around 20 words), settings interleaved in every round;
the table gives medians. words/s is the command's own figure (embedding only, without start-up); peak memory
is the process's maximum resident set size. Linux (``os.wait4``)::

    python benchmarks/speed/bench_embed.py --repeats 3 --threads 1
"""

from __future__ import annotations

import argparse
import math
import os
import random
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from harness_corpora import REPOSITORY, write_sentences, zipf_sentences
from harness_embed import elmo_embed_command, summary_rate
from harness_reports import markdown_table, ratio
from harness_timing import interleaved_rounds

SETTINGS = {"no cache (0)": "0", "elmo-embed's own": None}


@dataclass(frozen=True)
class Workload:
    name: str
    lines: list[list[str]]
    options: tuple[str, ...] = ()


def run_embed(lines_file: Path, options: Sequence[str], cache: str | None, threads: int | None) -> tuple[float, float]:
    """One `elmo-embed` process: (words/s, peak resident set size in MiB)."""
    environment = {**os.environ, "PYTHONPATH": str(REPOSITORY)}
    environment.pop("ONEDNN_PRIMITIVE_CACHE_CAPACITY", None)
    if cache is not None:
        environment["ONEDNN_PRIMITIVE_CACHE_CAPACITY"] = cache
    if threads:
        environment["OMP_NUM_THREADS"] = str(threads)
    with tempfile.TemporaryDirectory() as folder:
        command = elmo_embed_command(str(lines_file), f"{folder}/out.hdf5", *options)
        process = subprocess.Popen(command, env=environment, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        output = process.stdout.read().decode()
        _, status, usage = os.wait4(process.pid, 0)
        process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode:
        raise SystemExit(f"elmo-embed failed ({process.returncode}): {' '.join(command)}")
    return summary_rate(output), usage.ru_maxrss / 1024  # ru_maxrss is in KiB on Linux


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lines", type=int, default=5000, help="lines of ordinary text (default 5000)")
    parser.add_argument("--batch-1-lines", type=int, default=200, help="lines run with --batch-size 1 (default 200)")
    parser.add_argument("--long-words", type=int, default=3000, help="words of the one long line (default 3000)")
    parser.add_argument("--memory-lines", type=int, default=20000, help="lines of the memory run (default 20000)")
    parser.add_argument("--repeats", type=int, default=3, help="rounds; the table gives medians (default 3)")
    parser.add_argument("--threads", type=int, help="OMP_NUM_THREADS of each process (default: torch's)")
    arguments = parser.parse_args(argv)
    rng = random.Random(0)
    workloads = [
        Workload(f"ordinary text ({arguments.lines:,} lines)", zipf_sentences(arguments.lines, rng)),
        Workload("--batch-size 1", zipf_sentences(arguments.batch_1_lines, rng), ("--batch-size", "1")),
        Workload(f"one {arguments.long_words:,}-word line", zipf_sentences(1, rng, length=arguments.long_words)),
        Workload(f"{arguments.memory_lines:,} lines", zipf_sentences(arguments.memory_lines, rng)),
    ]
    with tempfile.TemporaryDirectory() as folder:
        by_name = {
            workload.name: (workload, write_sentences(Path(folder) / f"{index}.txt", workload.lines))
            for index, workload in enumerate(workloads)
        }

        def measure(round_index: int, label: tuple[str, str]) -> tuple[float, float]:
            (workload, lines_file), setting = by_name[label[0]], label[1]
            measured = run_embed(lines_file, workload.options, SETTINGS[setting], arguments.threads)
            print(
                f"round {round_index + 1}, {workload.name}, {setting}: {measured[0]:,.0f} words/s,"
                f" {measured[1]:,.0f} MiB",
                file=sys.stderr,
            )
            return measured

        labels = [(workload.name, setting) for workload in workloads for setting in SETTINGS]
        results = interleaved_rounds(labels, arguments.repeats, measure)
    rows = []
    for workload in workloads:
        medians = [
            (statistics.median(rate for rate, _ in runs), statistics.median(peak for _, peak in runs))
            for runs in (results[workload.name, setting] for setting in SETTINGS)
        ]
        speed = ratio(medians[-1][0], medians[0][0]) if medians[0][0] else f"{math.nan:.2f}x"
        rows.append([workload.name, *(f"{rate:,.0f}, {peak:,.0f}" for rate, peak in medians), speed])
    header = ["workload", *(f"{setting}: words/s, peak MiB" for setting in SETTINGS), "speed ratio"]
    print(markdown_table(rows, header))


if __name__ == "__main__":
    main()
