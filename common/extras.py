"""The optional parts of the install (`pyproject.toml`'s extras) and the one line a command gives without them.

The core install carries the model, `elmo-convert` and `elmo-embed`. The packages below come with an extra; a
command that needs one imports it through [`import_from_extra`] or checks it with [`require_extra`], so that a
missing package is one line naming the extra to install, not an import traceback.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

__all__ = ["EXTRAS", "MissingExtraError", "import_from_extra", "require_extra"]

# extra -> the top-level modules it installs that the package imports (pyproject.toml's optional-dependencies)
EXTRAS = {
    "train": ("datasets", "evaluate", "seqeval", "matplotlib"),
    "datasets": ("datasets",),
    "onnx": ("onnx", "onnxruntime"),
}


class MissingExtraError(SystemExit):
    """A script's optional packages are not installed: exits with "error: " and the line that names the extra."""

    def __init__(self, problem: str) -> None:
        super().__init__(f"error: {problem}")


def require_extra(extra: str, what: str, error: Callable[[str], BaseException] = MissingExtraError) -> None:
    """Raise `error` with one line when a module of `extra` is not installed; `what` names what needs it (a command
    raises its own error type, which it reports as its other refusals)."""
    missing = []
    for module in EXTRAS[extra]:
        try:
            importlib.import_module(module)  # (what the command imports next anyway)
        except ModuleNotFoundError as problem:
            if problem.name is None or problem.name.split(".")[0] != module:
                raise  # the package is there but broken: its own error says more
            missing.append(module)
    if missing:
        install = f"pip install 'elmo-transformers[{extra}]'"
        raise error(f"{what} needs {', '.join(missing)}, which comes with an extra: {install}")


def import_from_extra(module: str, name: str, *, extra: str, what: str) -> Callable[..., Any]:
    """`module.name` (a command's entry point), or one line naming `extra` when a package of it is missing."""
    require_extra(extra, what)
    return getattr(importlib.import_module(module), name)
