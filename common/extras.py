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
}


class MissingExtraError(SystemExit):
    """A command's optional packages are not installed: exits with one line that names them and the extra."""

    def __init__(self, what: str, extra: str, missing: str) -> None:
        install = f"pip install 'elmo-transformers[{extra}]'"
        super().__init__(f"error: {what} needs {missing}, which comes with an extra: {install}")


def require_extra(extra: str, what: str) -> None:
    """Exit with one line when a module of `extra` is not installed; `what` names what needs it."""
    missing = []
    for module in EXTRAS[extra]:
        try:
            importlib.import_module(module)  # (what the command imports next anyway)
        except ModuleNotFoundError as error:
            if error.name is None or error.name.split(".")[0] != module:
                raise  # the package is there but broken: its own error says more
            missing.append(module)
    if missing:
        raise MissingExtraError(what, extra, ", ".join(missing))


def import_from_extra(module: str, name: str, *, extra: str, what: str) -> Callable[..., Any]:
    """`module.name` (a command's entry point), or one line naming `extra` when a package of it is missing."""
    require_extra(extra, what)
    return getattr(importlib.import_module(module), name)
