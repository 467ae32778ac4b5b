"""`elmo-embed` as the end-to-end benchmarks run it and read it: its command line in a process of its own, the
words/s of its summary, a command's wall-clock and CPU seconds, and its output's datasets read back or compared.
"""

from __future__ import annotations

import re
import resource
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import h5py
import numpy as np

__all__ = [
    "ELMO_EMBED_MODULE",
    "CommandSeconds",
    "elmo_embed_command",
    "read_every_dataset",
    "same_datasets",
    "summary_rate",
    "timed_command",
]

ELMO_EMBED_MODULE = "elmo_transformers.inference.embed"
# The last line of elmo-embed's summary: "  84 words embedded in 1.2 s: 71 words/s".
SUMMARY_RATE = re.compile(r"words embedded in [\d.]+ s: ([\d,]+) words/s")


def elmo_embed_command(*arguments: str) -> list[str]:
    """`elmo-embed ARGUMENTS` run by this Python (``python -m``), whatever the environment's scripts."""
    return [sys.executable, "-m", ELMO_EMBED_MODULE, *arguments]


def summary_rate(stdout: str) -> float:
    """The words/s of elmo-embed's summary (words over the seconds from the first batch to the finished file:
    model loading left out)."""
    return float(SUMMARY_RATE.search(stdout).group(1).replace(",", ""))


@dataclass(frozen=True)
class CommandSeconds:
    """A command's seconds: `wall` from its start to its exit, `cpu` its processes' user + system time (all its
    threads', a thread spinning for work included), which other work on the machine hardly moves."""

    wall: float
    cpu: float


def timed_command(command: list[str], output: Path) -> CommandSeconds:
    """Run `command` (it writes `output` anew) and measure it; one command at a time (its CPU time is this process's
    children's, waited for, before and after)."""
    output.unlink(missing_ok=True)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    return CommandSeconds(wall=wall, cpu=cpu)


def read_every_dataset(path: Path) -> None:
    """Read each dataset of an hdf5 file whole, as a reader of elmo-embed's output (and its merge) does."""
    with h5py.File(path, "r") as file:
        for name in file:
            file[name][()]


def same_datasets(one: Path, other: Path) -> bool:
    """Whether two hdf5 files hold the same datasets, bit for bit."""
    with h5py.File(one, "r") as first, h5py.File(other, "r") as second:
        names = first.keys()
        return names == second.keys() and all(np.array_equal(first[name][()], second[name][()]) for name in names)
