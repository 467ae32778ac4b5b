"""AllenNLP 0.9's ELMo API on this package's model, in the core install (no AllenNLP, no TensorFlow):

    from elmo_transformers.compat.allennlp import ElmoEmbedder      # was: from allennlp.commands.elmo import ...
    from elmo_transformers.compat.allennlp import Elmo, batch_to_ids  # was: from allennlp.modules.elmo import ...
    from elmo_transformers.compat.allennlp import ScalarMix         # was: from allennlp.modules.scalar_mix import ...

The same signatures, defaults, outputs and state-dict names as AllenNLP 0.9.0, and by default its LSTM state carried
from call to call (`stateful=False`: every call from zeros). docs/migration.md lists what differs.
"""

from __future__ import annotations

from .bilm_files import DEFAULT_OPTIONS_FILE, DEFAULT_WEIGHT_FILE
from .bilm_modules import _ElmoBiLm, _ElmoCharacterEncoder
from .cached_files import cached_path
from .checks import ConfigurationError
from .elmo_embedder import ElmoEmbedder, elmo_command, main
from .elmo_module import Elmo, ElmoTokenEmbedder, remove_sentence_boundaries
from .scalar_mix import ScalarMix
from .token_ids import batch_to_ids

__all__ = [
    "DEFAULT_OPTIONS_FILE",
    "DEFAULT_WEIGHT_FILE",
    "ConfigurationError",
    "Elmo",
    "ElmoEmbedder",
    "ElmoTokenEmbedder",
    "ScalarMix",
    "_ElmoBiLm",
    "_ElmoCharacterEncoder",
    "batch_to_ids",
    "cached_path",
    "elmo_command",
    "main",
    "remove_sentence_boundaries",
]
