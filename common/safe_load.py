"""Reading a PyTorch pickle (`.pt`, `.pkl`, `.bin`) from outside without running what it may hold.

`torch.load(weights_only=True)` refuses a pickle that names anything beyond tensors and plain containers, but its
message spans several lines and suggests `weights_only=False`, the very thing not to do with a file from outside.
Every command that reads such a file goes through `load_tensors`, which says it in one line.
"""

from __future__ import annotations

import pickle
from pathlib import Path
from typing import Any

import torch

from elmo_transformers.common.errors import first_line
from elmo_transformers.common.regular_files import regular_file_problem

__all__ = ["holds_code", "load_tensors"]


def holds_code(path: str | Path) -> str:
    """The line for a pickle that `weights_only=True` refused to build."""
    return f"{path}: the file holds code (Python objects other than tensors), which is not loaded"


def load_tensors(path: str | Path, error_type: type[Exception], *, map_location: str = "cpu") -> Any:
    """What the pickle at `path` holds (tensors in dicts and lists), loaded with `weights_only=True`.

    Raises `error_type` with one line naming `path` when the file is missing or no regular file (a FIFO, a device),
    holds code (any Python object but tensors and containers, which `weights_only=True` refuses to build) or is no
    PyTorch file at all (damaged,
    truncated, another format).
    """
    path = Path(path)
    problem = regular_file_problem(path, "file")
    if problem:
        raise error_type(problem)
    try:
        return torch.load(path, map_location=map_location, weights_only=True)
    except pickle.UnpicklingError:
        raise error_type(holds_code(path)) from None
    except Exception as error:  # torch raises RuntimeError, EOFError, KeyError, ... for what is no PyTorch file
        raise error_type(f"{path}: not a PyTorch file, or a damaged one ({first_line(error)})") from None
