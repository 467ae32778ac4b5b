"""Import AllenNLP 0.9.0's ELMo modules without the rest of AllenNLP and its heavy dependencies.

Usage (in the AllenNLP venv, see ``make_venv.sh``; ``benchmarks/speed/bench_gpu.py`` imports it in-process)::

    import stubs
    _ElmoBiLm, batch_to_ids, remove_sentence_boundaries = stubs.import_elmo()

``allennlp==0.9.0`` is installed with ``--no-deps``, so only torch, numpy, h5py and ``overrides==3.1.0`` (which
``allennlp.modules.elmo`` itself uses) are present. Two things stand between that and ``from
allennlp.modules.elmo import _ElmoBiLm``, and both are unused by ``_ElmoBiLm`` and ``batch_to_ids``:

1. Package ``__init__`` files that import everything: ``allennlp/__init__.py`` (``import spacy``),
   ``allennlp.modules`` (every module: CRF, attention, BERT embedders, ...), ``allennlp.data`` (every dataset
   reader, which pulls in ``allennlp.semparse``: nltk, parsimonious, ...), ``allennlp.data.fields``,
   ``allennlp.data.token_indexers`` (pytorch_pretrained_bert, pytorch_transformers) and
   ``allennlp.data.tokenizers`` (spacy, ftfy). They are registered as bare packages (their real folder, their
   ``__init__`` not run); the few names ``elmo.py`` imports from them are set from the real leaf modules.
2. Third-party modules imported at the top of leaf modules that ``elmo.py`` does need: ``spacy`` (in
   ``common/util.py`` and ``data/fields/text_field.py``, for type hints and model downloads), ``boto3``,
   ``botocore`` and ``requests`` (in ``common/file_utils.py``, for S3/HTTP downloads in ``cached_path``; local
   files do not touch them) and ``tqdm`` (``common/tqdm.py``, progress bars). They are replaced by empty
   modules holding placeholder classes.

Every line of AllenNLP that the benchmark runs (``_ElmoBiLm``, ``_ElmoCharacterEncoder``, ``ElmoLstm``,
``LstmCellWithProjection``, ``Highway``, ``batch_to_ids`` with its indexer, fields, ``Batch`` and ``Vocabulary``)
is AllenNLP's own, unmodified.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
import types

# module name -> names of the placeholder classes it holds
THIRD_PARTY_STUBS: dict[str, tuple[str, ...]] = {
    "spacy": (),
    "spacy.tokens": ("Doc", "Token"),
    "spacy.cli": (),
    "spacy.cli.download": ("download",),
    "spacy.language": ("Language",),
    "boto3": (),
    "botocore": (),
    "botocore.exceptions": ("ClientError",),
    "requests": ("Session",),
    "requests.adapters": ("HTTPAdapter",),
    "requests.packages": (),
    "requests.packages.urllib3": (),
    "requests.packages.urllib3.util": (),
    "requests.packages.urllib3.util.retry": ("Retry",),
    "tqdm": ("tqdm",),
}

# AllenNLP packages whose __init__ is skipped; the names elmo.py imports from them: {name: "module:attribute"}.
BARE_PACKAGES: dict[str, dict[str, str]] = {
    "allennlp": {},
    "allennlp.modules": {},
    "allennlp.data": {
        # instance first: it is the entry point of the instance <-> fields <-> vocabulary import cycle.
        "Instance": "allennlp.data.instance:Instance",
        "Token": "allennlp.data.tokenizers.token:Token",
        "Vocabulary": "allennlp.data.vocabulary:Vocabulary",
    },
    "allennlp.data.fields": {"TextField": "allennlp.data.fields.text_field:TextField"},
    "allennlp.data.token_indexers": {},
    "allennlp.data.tokenizers": {},
    "allennlp.commands": {},  # every command (and their dependencies); elmo_command_worker.py reads allennlp elmo's
}


class _Placeholder(Exception):  # an Exception, so that `except ClientError:` clauses stay valid
    """Stands in for a class of an absent third-party package; never instantiated by the ELMo code path."""


def _register(name: str, module: types.ModuleType) -> None:
    sys.modules[name] = module
    parent, _, child = name.rpartition(".")
    if parent:
        setattr(sys.modules[parent], child, module)


def _install_third_party_stubs() -> list[str]:
    """Register the placeholder modules of every absent third-party package; returns their names."""
    absent = {name.partition(".")[0] for name in THIRD_PARTY_STUBS}
    absent = {top for top in absent if top not in sys.modules and importlib.util.find_spec(top) is None}
    installed = []
    for name, classes in THIRD_PARTY_STUBS.items():
        if name.partition(".")[0] not in absent:
            continue  # the real package is installed: use it
        module = types.ModuleType(name, f"placeholder for {name} (benchmarks/allennlp/stubs.py)")
        module.__path__ = []  # a package, so that its submodules can be registered below it
        for cls in classes:
            setattr(module, cls, type(cls, (_Placeholder,), {"__module__": name}))
        _register(name, module)
        installed.append(name)
    return installed


def _install_bare_packages() -> None:
    for name in BARE_PACKAGES:
        if name in sys.modules:
            continue
        spec = importlib.util.find_spec(name)
        if spec is None or spec.submodule_search_locations is None:
            raise ImportError(f"{name} is not installed: run benchmarks/allennlp/make_venv.sh")
        module = types.ModuleType(name)
        module.__spec__ = spec
        module.__path__ = list(spec.submodule_search_locations)
        module.__file__ = spec.origin
        module.__package__ = name
        _register(name, module)
    for name, exports in BARE_PACKAGES.items():
        for attribute, target in exports.items():
            module_name, _, target_attribute = target.partition(":")
            setattr(sys.modules[name], attribute, getattr(importlib.import_module(module_name), target_attribute))


def _install_overrides_fallback() -> list[str]:
    """AllenNLP decorates methods with ``overrides`` 3.1.0's ``@overrides``, which fails on Python >= 3.12 (its
    bytecode inspection predates it); where it is absent or fails, a no-op decorator stands in (it only checks)."""
    try:
        from overrides import overrides

        class _Base:
            def method(self) -> None: ...

        class _Child(_Base):
            @overrides
            def method(self) -> None: ...

    except Exception:
        module = types.ModuleType("overrides", "no-op stand-in for overrides 3.1.0 (benchmarks/allennlp/stubs.py)")
        module.overrides = lambda method: method
        sys.modules["overrides"] = module
        return ["overrides"]
    return []


# The placeholder modules that import_elmo registered (the absent third-party packages).
STUBBED_MODULES: list[str] = []


def import_elmo():
    """Returns AllenNLP's ``(_ElmoBiLm, batch_to_ids, remove_sentence_boundaries)``."""
    STUBBED_MODULES.extend(_install_overrides_fallback())
    STUBBED_MODULES.extend(_install_third_party_stubs())
    _install_bare_packages()
    elmo = importlib.import_module("allennlp.modules.elmo")
    nn_util = importlib.import_module("allennlp.nn.util")
    return elmo._ElmoBiLm, elmo.batch_to_ids, nn_util.remove_sentence_boundaries
