"""What the refusal tests feed the commands: a file with flipped bytes, a pickle that would run code, and
`elmo-embed` run on one line with a model folder that is wrong in some way."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def flip_bytes_in_the_middle(path: Path) -> None:
    """Flip 64 bytes in the middle of a file: inside the weights, which still load and compute finite values."""
    with open(path, "r+b") as file:
        file.seek(path.stat().st_size // 2)
        flipped = bytes(byte ^ 0x01 for byte in file.read(64))
        file.seek(path.stat().st_size // 2)
        file.write(flipped)


class RunsAShellCommand:
    """A pickled object whose unpickling would run `touch PATH`: what a malicious pickle holds."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def __reduce__(self) -> tuple:
        return os.system, (f"touch {self.path}",)


def embed_one_line(model: Path, tmp_path: Path) -> subprocess.CompletedProcess:
    """`elmo-embed` (as a module, in a new process) on a one-line file with `--model MODEL`."""
    (tmp_path / "in.txt").write_text("a sentence\n")
    command = [
        sys.executable,
        "-m",
        "elmo_transformers.inference.embed",
        tmp_path / "in.txt",
        tmp_path / "out.hdf5",
        "--model",
        model,
    ]
    return subprocess.run(list(map(str, command)), capture_output=True, text=True)
