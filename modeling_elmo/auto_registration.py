"""How `import modeling_elmo` registers the ELMo classes with transformers' Auto classes, whether transformers is
imported before this package or after it: [`register_with_the_auto_classes_once_ready`] registers them at once, or
puts a finder on `sys.meta_path` that wraps transformers' loader and registers them once transformers' `__init__`
has run. Registering imports every model module, so it waits until none of the package's modules is halfway
through its own import (the package's module class, `_ElmoPackage`, sees each one finish).

It imports neither torch nor transformers: the package's text front end stays usable with numpy alone.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import sys
import types
from importlib import import_module
from typing import Any

__all__ = ["register_with_the_auto_classes_once_ready"]

# The package whose classes are registered (this module's own).
_PACKAGE = __package__


def _register_with_the_auto_classes() -> None:
    """Each class of `ELMO_AUTO_MAP` with its Auto class: in this process (`register`), and in the folders saved
    from it (`register_for_auto_class`: its code is copied beside the weights, as Hub remote code)."""
    import transformers

    from .configuration_elmo import ELMO_AUTO_MAP, ElmoConfig

    for auto_name, class_path in ELMO_AUTO_MAP.items():
        auto_class = getattr(transformers, auto_name)
        module_name, class_name = (class_path[0] if isinstance(class_path, list) else class_path).split(".")
        elmo_class = getattr(import_module(f".{module_name}", _PACKAGE), class_name)
        if auto_class is transformers.AutoConfig:
            auto_class.register(ElmoConfig.model_type, elmo_class, exist_ok=True)
        elif auto_class is transformers.AutoTokenizer:
            auto_class.register(ElmoConfig, tokenizer_class=elmo_class, exist_ok=True)
        else:
            auto_class.register(ElmoConfig, elmo_class, exist_ok=True)
        elmo_class.register_for_auto_class(auto_name)
    import_module(".pipeline_elmo", _PACKAGE)  # registers the pipelines (elmo-substitutes, elmo-token-classification)


class _Registration:
    """When the Auto classes get registered: once transformers is imported (`due`), as soon as none of this
    package's modules is halfway through its own import (registering imports them all: one that is still running
    its first lines, and whose `from transformers import ...` brought transformers in, would be found empty)."""

    due = False
    done = False

    @classmethod
    def run_when_ready(cls) -> None:
        if cls.done or not cls.due or _a_module_is_being_imported() or not _torch_is_installed():
            return
        cls.done = True
        _register_with_the_auto_classes()


def _a_module_is_being_imported() -> bool:
    """Whether a module of this package is in sys.modules but not yet bound in it: Python binds a submodule to its
    package only once the submodule's code has run (`_ElmoPackage.__setattr__` sees that moment)."""
    package = vars(sys.modules[_PACKAGE])
    prefix = f"{_PACKAGE}."
    return any(name.startswith(prefix) and name[len(prefix) :] not in package for name in list(sys.modules))


def _torch_is_installed() -> bool:
    try:
        return importlib.util.find_spec("torch") is not None
    except ValueError:  # sys.modules["torch"] is None: refused, as an absent package is
        return False


class _ElmoPackage(types.ModuleType):
    """This package's module: a submodule bound to it has finished its import, the moment a registration that
    waited for it can run."""

    def __setattr__(self, name: str, value: Any) -> None:
        super().__setattr__(name, value)
        if isinstance(value, types.ModuleType):
            _Registration.run_when_ready()


class _RegisteringLoader(importlib.abc.Loader):
    """transformers' own loader, and the registration once transformers' `__init__` has run."""

    def __init__(self, loader: importlib.abc.Loader) -> None:
        self._loader = loader

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType | None:
        return self._loader.create_module(spec)

    def exec_module(self, module: types.ModuleType) -> None:
        self._loader.exec_module(module)
        _Registration.due = True
        _Registration.run_when_ready()

    def __getattr__(self, name: str) -> Any:  # the rest of the loader (resources, source) as it is
        return getattr(self._loader, name)


class _RegisterOnceTransformersIsImported(importlib.abc.MetaPathFinder):
    """Finds transformers as the other finders do, with a loader that registers the ELMo classes after it; then
    steps aside (it serves one import)."""

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> importlib.machinery.ModuleSpec | None:
        if name != "transformers":
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(name)
        if spec is not None and spec.loader is not None:
            spec.loader = _RegisteringLoader(spec.loader)
        return spec


def register_with_the_auto_classes_once_ready() -> None:
    """Register the ELMo classes with the Auto classes now if transformers is imported, else as soon as it is (a
    `sys.meta_path` finder that serves its import); either way once none of the package's modules is halfway
    through its import. Called once, by the package's `__init__.py`."""
    sys.modules[_PACKAGE].__class__ = _ElmoPackage
    if "transformers" in sys.modules:
        _Registration.due = True
        _Registration.run_when_ready()
    else:
        sys.meta_path.insert(0, _RegisterOnceTransformersIsImported())
