"""Modules that moved in the restructuring keep their old import paths: the old name gives the very module at the
new path (one copy of its state), with a FutureWarning that names the new path."""

from __future__ import annotations

import importlib
import sys
import warnings

import pytest

import conversion
import inference
import training
from common.moved_modules import _MovedModuleFinder

MOVED = {
    old: new for finder in sys.meta_path if isinstance(finder, _MovedModuleFinder) for old, new in finder.moved.items()
}


def test_the_packages_list_what_moved_out_of_them() -> None:
    assert {name.split(".")[0] for name in MOVED} == {training.__name__, conversion.__name__, inference.__name__}
    assert {"training.lm_vocabulary", "training.feature_cache", "conversion.options"} <= MOVED.keys()


@pytest.mark.parametrize(("old", "new"), sorted(MOVED.items()))
def test_an_old_path_imports_the_module_at_its_new_path(old: str, new: str) -> None:
    sys.modules.pop(old, None)
    with pytest.warns(FutureWarning, match=f"{old} moved to {new}"):
        module = importlib.import_module(old)
    assert module is importlib.import_module(new)
    assert module.__spec__.name == new  # its own spec, not the old name's
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        importlib.import_module(new)  # the new path itself warns of nothing


def test_names_import_from_an_old_path() -> None:
    sys.modules.pop("conversion.options", None), sys.modules.pop("training.lm_vocabulary", None)
    with pytest.warns(FutureWarning):
        from conversion.options import config_from_options
        from training.lm_vocabulary import LmVocabulary
    from common.options import config_from_options as moved_function
    from training.pretraining.vocabulary import LmVocabulary as moved_class

    assert (config_from_options, LmVocabulary) == (moved_function, moved_class)
