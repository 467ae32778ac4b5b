"""`elmo-embed` as the end-to-end benchmarks run it and read it: its command line in a process of its own, the
words/s of its summary, a command's wall-clock seconds, and its output's datasets read back or compared.
"""

from __future__ import annotations

import re
import subprocess
import sys
import time
from pathlib import Path

import h5py
import numpy as np

__all__ = [
    "ELMO_EMBED_MODULE",
    "elmo_embed_command",
    "read_every_dataset",
    "same_datasets",
    "summary_rate",
    "wall_seconds",
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


def wall_seconds(command: list[str], output: Path) -> float:
    """Wall-clock seconds of `command`, from its start to its exit (it writes `output` anew)."""
    output.unlink(missing_ok=True)
    start = time.perf_counter()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


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
