"""Build this package's wheel from a copy of the files it is built from: a build/ folder left in the checkout by an
earlier build (of an older layout) would otherwise end up in the wheel."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

__all__ = ["build_wheel"]

REPOSITORY = Path(__file__).resolve().parents[2]
# The packaged folders and the files pyproject.toml names.
SOURCES = [
    "pyproject.toml",
    "README.md",
    "model_card.md",
    "modeling_elmo",
    "common",
    "compat",
    "conversion",
    "inference",
    "training",
]


def build_wheel(work: Path) -> Path:
    """The wheel `pip wheel` builds (no dependencies, no build isolation: offline), in `work/wheel`."""
    source, out = work / "source", work / "wheel"
    source.mkdir(parents=True)
    for name in SOURCES:
        if (REPOSITORY / name).is_dir():
            ignore = shutil.ignore_patterns("__pycache__", "*.egg-info")
            shutil.copytree(REPOSITORY / name, source / name, symlinks=True, ignore=ignore)
        else:
            shutil.copy2(REPOSITORY / name, source / name, follow_symlinks=False)
    command = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(out), "."]
    completed = subprocess.run(command, cwd=source, capture_output=True, text=True, timeout=600, check=False)
    if completed.returncode != 0:
        raise RuntimeError(f"pip wheel failed: {completed.stderr[-2000:]}")
    (built,) = out.glob("elmo_transformers-*.whl")
    return built
