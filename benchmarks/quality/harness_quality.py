"""What the quality benchmarks share: the set-up of a run (torch's threads, transformers quiet) and the command line
their reports print. They import it from their own folder (a script run puts that folder first on ``sys.path``).
"""

from __future__ import annotations

import shlex
import sys
from collections.abc import Sequence

import torch
import transformers

__all__ = ["quiet_run", "report_command"]


def quiet_run(threads: int) -> None:
    """torch's ``threads`` (0: torch's default), and transformers' warnings and progress bars off: the models'
    loading prints both, once per model a run loads."""
    if threads:
        torch.set_num_threads(threads)
    transformers.logging.set_verbosity_error()
    transformers.utils.logging.disable_progress_bar()


def report_command(script: str, argv: Sequence[str] | None) -> str:
    """The command as the reports print it: ``python benchmarks/quality/SCRIPT`` and its arguments (``argv`` where
    ``main`` was given them, else the command line's)."""
    return shlex.join(["python", f"benchmarks/quality/{script}", *(sys.argv[1:] if argv is None else argv)])
