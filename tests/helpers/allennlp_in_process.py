"""AllenNLP 0.9.0 imported in this process from its wheel (a pure-Python wheel imports as a zip), for the compat
tests: its ELMo modules (`allennlp.modules.elmo`, `allennlp.commands.elmo`, `allennlp.modules.scalar_mix`) and the
data classes its tests build inputs with, all its own code, unmodified.

`benchmarks/allennlp/stubs.py` does the importing: package `__init__` files that would import all of AllenNLP are
skipped and the absent third-party packages its leaf modules name at the top (spacy, boto3, ...) are placeholders.
Here three more packages are skipped the same way (the names their leaf modules give): `allennlp.data.iterators`,
`allennlp.modules.token_embedders` (whose `__init__` imports the BERT embedders) and `allennlp.data.fields`'
`MetadataField` (which `BasicIterator` needs). The placeholder modules leave `sys.modules` again once AllenNLP is
imported (they would answer for absent packages to the rest of the test session).
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from pathlib import Path

__all__ = ["import_allennlp"]

REPOSITORY = Path(__file__).resolve().parents[2]
EXTRA_BARE_PACKAGES = {
    "allennlp.data.iterators": {"BasicIterator": "allennlp.data.iterators.basic_iterator:BasicIterator"},
    "allennlp.modules.token_embedders": {"Embedding": "allennlp.modules.token_embedders.embedding:Embedding"},
}
EXTRA_EXPORTS = {"allennlp.data.fields": {"MetadataField": "allennlp.data.fields.metadata_field:MetadataField"}}
MODULES = (
    "allennlp.modules.elmo",
    "allennlp.commands.elmo",
    "allennlp.modules.scalar_mix",
    "allennlp.nn.util",
    "allennlp.common.checks",
    "allennlp.data.dataset",
    "allennlp.data.token_indexers.elmo_indexer",
    "allennlp.data.token_indexers.single_id_token_indexer",
    "allennlp.data.iterators.basic_iterator",
)


def _stubs():
    spec = importlib.util.spec_from_file_location("allennlp_stubs", REPOSITORY / "benchmarks" / "allennlp" / "stubs.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def import_allennlp(wheel: Path) -> None:
    """Make AllenNLP 0.9.0's ELMo modules and test data classes importable from `wheel` (once per process)."""
    if "allennlp.modules.elmo" in sys.modules:
        return
    sys.path.insert(0, str(wheel))
    stubs = _stubs()
    for name, exports in EXTRA_EXPORTS.items():
        stubs.BARE_PACKAGES[name].update(exports)
    stubs.BARE_PACKAGES.update(EXTRA_BARE_PACKAGES)
    stubs.import_elmo()
    for name in MODULES:
        importlib.import_module(name)
    for name in stubs.STUBBED_MODULES:
        if name != "overrides":  # AllenNLP's decorators need it at import time only, but it holds no other package
            sys.modules.pop(name, None)
