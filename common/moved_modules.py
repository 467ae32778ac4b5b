"""Old import paths of modules that moved, kept working: `import training.lm_vocabulary` gives the module that now
lives at `training.pretraining.vocabulary` (the same object, not a copy), with a `FutureWarning` naming the new
path. A package lists what moved out of it in its `__init__` and calls `keep_old_paths`."""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
import warnings
from collections.abc import Mapping, Sequence
from types import ModuleType

__all__ = ["keep_old_paths"]


class _MovedModuleFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds each old module name and loads it as the module at its new path."""

    def __init__(self, moved: Mapping[str, str]) -> None:
        self.moved = dict(moved)
        self.specs: dict[str, importlib.machinery.ModuleSpec] = {}

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname not in self.moved:
            return None
        return importlib.machinery.ModuleSpec(fullname, self)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        new = self.moved[spec.name]
        warnings.warn(f"{spec.name} moved to {new}; import it from there", FutureWarning, stacklevel=2)
        module = importlib.import_module(new)
        self.specs[spec.name] = module.__spec__
        return module

    def exec_module(self, module: ModuleType) -> None:
        """The module ran when its new path was imported; the import system has since given it the old name's
        spec, and its own is put back (pickles and `importlib.reload` go by `__spec__`)."""
        module.__spec__ = self.specs[module.__spec__.name]


def keep_old_paths(moved: Mapping[str, str]) -> None:
    """Make every old module name in `moved` (old -> new dotted path) import the module at its new path."""
    sys.meta_path.append(_MovedModuleFinder(moved))
