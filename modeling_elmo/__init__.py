"""ELMo for transformers: `import modeling_elmo` registers the ELMo classes with the Auto classes.

The package is lazy: a name is imported when it is first used (`modeling_elmo.ElmoModel`, `from modeling_elmo import
split_words`), so that the text front end (`modeling_elmo.text_elmo`: numpy alone) is had without torch or
transformers. The Auto classes are registered as soon as transformers is imported, in this process, before or after
this package (see `auto_registration.py`), and where torch is installed: `import modeling_elmo` then
`AutoModel.from_pretrained(folder)` works as it always has.

Saved folders also carry the model code and an `auto_map`, so they load with `trust_remote_code=True`
where this package is not installed.
"""

from __future__ import annotations

from importlib import import_module
from pathlib import Path
from typing import Any

from .auto_registration import register_with_the_auto_classes_once_ready

# Each public name and the module that defines it.
_MODULE_OF_NAME = {
    "ORIGINAL_CHAR_CNN_FILTERS": "configuration_elmo",
    "ElmoConfig": "configuration_elmo",
    "register_lstm_implementation": "kernels_elmo",
    "ElmoLayerMix": "mixing_elmo",
    "ElmoBidirectionalLMOutput": "modeling_elmo",
    "ElmoForBidirectionalLM": "modeling_elmo",
    "ElmoForSequenceClassification": "modeling_elmo",
    "ElmoForTokenClassification": "modeling_elmo",
    "ElmoModel": "modeling_elmo",
    "ElmoModelOutput": "modeling_elmo",
    "ElmoPreTrainedModel": "modeling_elmo",
    "ElmoSubstitutesPipeline": "pipeline_elmo",
    "ElmoTokenClassificationPipeline": "pipeline_elmo",
    "ElmoSubstitutesOutput": "substitutes_elmo",
    "ElmoTokenizer": "tokenization_elmo",
    "BILM_TF_CHAR_IDS": "text_elmo",
    "ElmoTextEncoder": "text_elmo",
    "split_words": "text_elmo",
    "word_to_char_ids": "text_elmo",
    "TokenVectorCache": "token_cache_elmo",
}

__all__ = ["DEFAULT_MODEL", *sorted(_MODULE_OF_NAME)]

# A small English ELMo trained by this package (training/recipes/default_model.sh), shipped inside it: the
# model of `elmo-embed` without --model. It keeps its softmax, so it also continues training on domain text.
DEFAULT_MODEL = str(Path(__file__).with_name("default_model"))


def __getattr__(name: str) -> Any:
    module_name = _MODULE_OF_NAME.get(name)
    if module_name is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(f".{module_name}", __name__), name)
    globals()[name] = value  # found here from now on, without this function
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


register_with_the_auto_classes_once_ready()
