"""How the scripts of this folder (and of `recipes/`) import the package: the one place that says, in one line, that
it is not installed.

A script run as a file from a checkout (`python training/pretrain.py`) may find every dependency but not this
package; an import would then stop with a traceback. So the scripts load this file by its path, beside them, which
works however they were started (as files, as modules, as console scripts), and import the package through it.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

__all__ = ["NOT_INSTALLED", "from_package", "start_command"]

NOT_INSTALLED = "error: the elmo-transformers package is not installed: run `pip install -e .` in the repository"
_PACKAGES = ("elmo_transformers", "modeling_elmo")  # the installed top-level names (pyproject.toml's packages)


def from_package(module: str, name: str) -> Any:
    """`module.name` of this package, or the one line that says to install it where the package is missing."""
    try:
        return getattr(importlib.import_module(module), name)
    except ModuleNotFoundError as error:
        if error.name not in _PACKAGES:
            raise
        raise SystemExit(NOT_INSTALLED) from None


def start_command(module: str, name: str, *, what: str) -> Callable[..., Any]:
    """The entry point `module.name` of a training command (`what`, its console script's name), or one line naming
    what to install: the package, or its `train` extra."""
    import_from_extra = from_package("elmo_transformers.common.extras", "import_from_extra")
    return import_from_extra(module, name, extra="train", what=what)
