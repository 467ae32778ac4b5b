"""The optional parts of the install (`pyproject.toml`'s extras) and the one line a command gives without them.

The core install carries the model, `elmo-convert` and `elmo-embed`. The packages below come with an extra; a
command that needs one imports it through [`import_from_extra`] or checks it with [`require_extra`], so that a
missing package is one line naming the extra to install, not an import traceback. A core dependency missing (an
install with `pip install --no-deps`) is one line too, naming the requirement the package declares: the commands
import their heavy modules within [`missing_dependencies_refused`].
"""

from __future__ import annotations

import importlib
import importlib.metadata
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

__all__ = [
    "EXTRAS",
    "MissingExtraError",
    "import_from_extra",
    "missing_dependencies_refused",
    "missing_dependency",
    "require_extra",
]

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


def _core_requirements() -> dict[str, str]:
    """The installed distribution's core requirements by the module each installs (torch -> "torch>=2.6"; a
    distribution's dashes are its module's underscores: huggingface-hub -> huggingface_hub)."""
    try:
        requirements = importlib.metadata.requires("elmo-transformers") or []
    except importlib.metadata.PackageNotFoundError:  # (run from a source tree that is not installed)
        return {}
    core = [requirement for requirement in requirements if "extra ==" not in requirement]
    return {re.split(r"[\[<>=!~; ]", line, maxsplit=1)[0].lower().replace("-", "_"): line for line in core}


def _absent(module: str) -> bool:
    """Whether the top-level `module` cannot be imported because it is not installed (not because it is broken)."""
    try:
        importlib.import_module(module)
    except ModuleNotFoundError as problem:
        return problem.name is not None and problem.name.split(".")[0] == module
    return False


def missing_dependency(problem: ModuleNotFoundError) -> str | None:
    """The one line naming what to install when `problem` is a package the install lacks: a core dependency (which
    `pip install --no-deps` leaves out) or an extra's; None for any other module (its own error says more)."""
    module = (problem.name or "").split(".")[0]
    if not module or not _absent(module):
        return None
    requirement = _core_requirements().get(module)
    if requirement is not None:
        return (
            f"{module} is not installed, a dependency of elmo-transformers (an install with --no-deps leaves it"
            f" out): pip install '{requirement}'"
        )
    extra = next((extra for extra, modules in EXTRAS.items() if module in modules), None)
    if extra is not None:
        return f"{module} is not installed, which comes with an extra: pip install 'elmo-transformers[{extra}]'"
    return None


@contextmanager
def missing_dependencies_refused(error: Callable[[str], BaseException]) -> Iterator[None]:
    """Within the block, a package the install lacks (`missing_dependency`) raises `error` with its one line."""
    try:
        yield
    except ModuleNotFoundError as problem:
        line = missing_dependency(problem)
        if line is None:
            raise
        raise error(line) from None
