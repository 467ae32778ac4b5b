"""`elmo-embed` in several processes for the tests: awkward lines to embed, the launch of 2 (or N) CPU processes
over gloo running tests/helpers/launched_embed.py, by `accelerate launch` or by elmo-embed's own --workers, the
one-process run they are compared with, and the comparison."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import h5py
import numpy as np

__all__ = [
    "AWKWARD_LINES",
    "ELMO_EMBED",
    "ENVIRONMENT",
    "LAUNCHED_EMBED",
    "assert_same_file",
    "embed_in_one_process",
    "embed_in_workers",
    "launch_embed",
]

LAUNCHED_EMBED = Path(__file__).resolve().with_name("launched_embed.py")
ELMO_EMBED = str(Path(sys.executable).with_name("elmo-embed"))
# Empty lines, one over --max-words 8 (embedded in pieces, in batches that one process must write), unicode, a word
# over 48 bytes, mixed lengths.
AWKWARD_LINES = [
    "The cat sat on the mat .",
    "",
    "Héllo wörld ☃ , ça va ?",
    "x" * 60 + " is a word of 60 bytes",
    " ".join(f"w{index}" for index in range(23)),
    "a",
    "",
    "ELMo gives every word three vectors .",
    "one two three four five six seven",
    "b c",
]
# One thread a process: the runs compared bit for bit compute the same way, and the 2 cores are not oversubscribed.
ENVIRONMENT = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


def write_input(folder: Path, lines: list[str]) -> Path:
    """`lines` as the input file `folder/in.txt`, one a line."""
    path = folder / "in.txt"
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


def launch_embed(
    *args: str | Path, processes: int = 2, environment: dict[str, str] | None = None
) -> subprocess.CompletedProcess:
    """`accelerate launch` of elmo-embed ARGS in `processes` CPU processes, with `environment` added (see
    launched_embed.py for what it may say)."""
    command = [
        sys.executable, "-m", "accelerate.commands.launch", "--multi_gpu", "--num_processes", str(processes),
        "--num_machines", "1", "--mixed_precision", "no", "--dynamo_backend", "no", str(LAUNCHED_EMBED),
        *map(str, args),
    ]  # fmt: skip
    environment = {**ENVIRONMENT, **(environment or {})}
    return subprocess.run(command, env=environment, capture_output=True, text=True, timeout=600)


def embed_in_one_process(*args: str | Path) -> subprocess.CompletedProcess:
    """`elmo-embed ARGS`, one process with the launched processes' environment; it must succeed."""
    completed = subprocess.run([ELMO_EMBED, *map(str, args)], env=ENVIRONMENT, capture_output=True, text=True)
    assert completed.returncode == 0, completed.stderr[-3000:]
    return completed


def embed_in_workers(*args: str | Path, environment: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """`elmo-embed ARGS` (with --workers) as launched_embed.py runs it, with `environment` added (what it may say):
    its workers run launched_embed.py too."""
    command = [sys.executable, str(LAUNCHED_EMBED), *map(str, args)]
    environment = {**ENVIRONMENT, **(environment or {})}
    return subprocess.run(command, env=environment, capture_output=True, text=True, timeout=600)


def _contents(path: Path) -> tuple[dict[str, np.ndarray], dict[str, dict], dict]:
    """Every dataset's values and attributes, and the root attributes but the command line (it names the output)."""
    with h5py.File(path, "r") as file:
        values = {name: file[name][()] for name in file}
        attributes = {name: dict(file[name].attrs) for name in file}
        root = {name: value for name, value in file.attrs.items() if name != "elmo_embed_command"}
    return values, attributes, root


def assert_same_file(one: Path, other: Path) -> None:
    """The same datasets (dtype and values, bit for bit) and attributes; the command lines may differ."""
    (values, attributes, root), (other_values, other_attributes, other_root) = _contents(one), _contents(other)
    assert values.keys() == other_values.keys()
    for name in values:
        assert values[name].dtype == other_values[name].dtype and np.array_equal(values[name], other_values[name]), name
    assert attributes == other_attributes and root == other_root
