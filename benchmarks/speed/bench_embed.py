"""`elmo-embed` end to end: its oneDNN kernel cache against none (``ONEDNN_PRIMITIVE_CACHE_CAPACITY=0``, what it
set before), in words/s and peak memory, on the workloads where the cache matters.

Each measurement is one `elmo-embed` process on synthetic text from the bundled default model's vocabulary
(Zipf-distributed words, sentence lengths log-normal around 20 words), settings interleaved in every round;
the table gives medians. words/s is the command's own figure (embedding only, without start-up); peak memory
is the process's maximum resident set size. Standard library only, Linux (``os.wait4``)::

    python benchmarks/speed/bench_embed.py --repeats 3 --threads 1
"""

from __future__ import annotations

import argparse
import math
import os
import random
import re
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

REPOSITORY = Path(__file__).resolve().parents[2]
VOCABULARY = REPOSITORY / "modeling_elmo" / "default_model" / "vocab.txt"
SETTINGS = {"no cache (0)": "0", "elmo-embed's own": None}


@dataclass(frozen=True)
class Workload:
    name: str
    lines: list[str]
    options: tuple[str, ...] = ()


def zipf_lines(count: int, rng: random.Random, *, length: int | None = None) -> list[str]:
    """`count` sentences of Zipf-distributed words (exponent 1.05); `length` words each, or log-normal lengths."""
    words = [word for word in VOCABULARY.read_text(encoding="utf-8").split("\n")[3:] if word]  # after <S> </S> <UNK>
    weights = [1 / rank**1.05 for rank in range(1, len(words) + 1)]
    lengths = [length or min(max(int(rng.lognormvariate(3.0, 0.55)), 1), 200) for _ in range(count)]
    return [" ".join(rng.choices(words, weights, k=words_in_line)) for words_in_line in lengths]


def run_embed(lines_file: Path, options: Sequence[str], cache: str | None, threads: int | None) -> tuple[float, float]:
    """One `elmo-embed` process: (words/s, peak resident set size in MiB)."""
    environment = {**os.environ, "PYTHONPATH": str(REPOSITORY)}
    environment.pop("ONEDNN_PRIMITIVE_CACHE_CAPACITY", None)
    if cache is not None:
        environment["ONEDNN_PRIMITIVE_CACHE_CAPACITY"] = cache
    if threads:
        environment["OMP_NUM_THREADS"] = str(threads)
    with tempfile.TemporaryDirectory() as folder:
        command = [
            sys.executable,
            "-m",
            "elmo_transformers.inference.embed",
            str(lines_file),
            f"{folder}/out.hdf5",
            *options,
        ]
        process = subprocess.Popen(command, env=environment, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        output = process.stdout.read().decode()
        _, status, usage = os.wait4(process.pid, 0)
        process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode:
        raise SystemExit(f"elmo-embed failed ({process.returncode}): {' '.join(command)}")
    rate = re.search(r"([\d,]+) words/s", output).group(1)
    return float(rate.replace(",", "")), usage.ru_maxrss / 1024  # ru_maxrss is in KiB on Linux


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
        Workload(f"ordinary text ({arguments.lines:,} lines)", zipf_lines(arguments.lines, rng)),
        Workload("--batch-size 1", zipf_lines(arguments.batch_1_lines, rng), ("--batch-size", "1")),
        Workload(f"one {arguments.long_words:,}-word line", zipf_lines(1, rng, length=arguments.long_words)),
        Workload(f"{arguments.memory_lines:,} lines", zipf_lines(arguments.memory_lines, rng)),
    ]
    results: dict[tuple[str, str], list[tuple[float, float]]] = {}
    with tempfile.TemporaryDirectory() as folder:
        files = []
        for index, workload in enumerate(workloads):
            files.append(Path(folder) / f"{index}.txt")
            files[-1].write_text("".join(line + "\n" for line in workload.lines), encoding="utf-8")
        for round_index in range(arguments.repeats):
            for workload, lines_file in zip(workloads, files, strict=True):
                for setting, cache in SETTINGS.items():
                    measured = run_embed(lines_file, workload.options, cache, arguments.threads)
                    results.setdefault((workload.name, setting), []).append(measured)
                    print(
                        f"round {round_index + 1}, {workload.name}, {setting}: {measured[0]:,.0f} words/s,"
                        f" {measured[1]:,.0f} MiB",
                        file=sys.stderr,
                    )
    print(f"| workload | {' | '.join(f'{setting}: words/s, peak MiB' for setting in SETTINGS)} | speed ratio |")
    print(f"| --- | {' | '.join('---' for _ in SETTINGS)} | --- |")
    for workload in workloads:
        medians = [
            (statistics.median(rate for rate, _ in runs), statistics.median(peak for _, peak in runs))
            for runs in (results[workload.name, setting] for setting in SETTINGS)
        ]
        cells = " | ".join(f"{rate:,.0f}, {peak:,.0f}" for rate, peak in medians)
        ratio = medians[-1][0] / medians[0][0] if medians[0][0] else math.nan
        print(f"| {workload.name} | {cells} | {ratio:.2f}x |")


if __name__ == "__main__":
    main()
