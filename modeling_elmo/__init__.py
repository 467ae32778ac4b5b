"""ELMo for transformers: `import modeling_elmo` registers the ELMo classes with the Auto classes.

Saved folders also carry the model code and an `auto_map`, so they load with `trust_remote_code=True`
where this package is not installed.
"""

from importlib import import_module
from pathlib import Path

import transformers

from .configuration_elmo import BILM_TF_CHAR_IDS, ELMO_AUTO_MAP, ORIGINAL_CHAR_CNN_FILTERS, ElmoConfig
from .mixing_elmo import ElmoLayerMix
from .modeling_elmo import (
    ElmoBidirectionalLMOutput,
    ElmoForBidirectionalLM,
    ElmoForSequenceClassification,
    ElmoForTokenClassification,
    ElmoModel,
    ElmoModelOutput,
    ElmoPreTrainedModel,
)
from .pipeline_elmo import ElmoSubstitutesPipeline, ElmoTokenClassificationPipeline
from .splitting_elmo import split_words
from .substitutes_elmo import ElmoSubstitutesOutput
from .tokenization_elmo import ElmoTokenizer
from .vocabulary_elmo import word_to_char_ids

__all__ = [
    "BILM_TF_CHAR_IDS",
    "DEFAULT_MODEL",
    "ORIGINAL_CHAR_CNN_FILTERS",
    "ElmoBidirectionalLMOutput",
    "ElmoConfig",
    "ElmoForBidirectionalLM",
    "ElmoForSequenceClassification",
    "ElmoForTokenClassification",
    "ElmoLayerMix",
    "ElmoModel",
    "ElmoModelOutput",
    "ElmoPreTrainedModel",
    "ElmoSubstitutesOutput",
    "ElmoSubstitutesPipeline",
    "ElmoTokenClassificationPipeline",
    "ElmoTokenizer",
    "split_words",
    "word_to_char_ids",
]

# A small English ELMo trained by this package (training/recipes/default_model.sh), shipped inside it: the
# model of `elmo-embed` without --model. It keeps its softmax, so it also continues training on domain text.
DEFAULT_MODEL = str(Path(__file__).with_name("default_model"))


def _register_with_the_auto_classes() -> None:
    """Each class of `ELMO_AUTO_MAP` with its Auto class: in this process (`register`), and in the folders saved
    from it (`register_for_auto_class`: its code is copied beside the weights, as Hub remote code)."""
    for auto_name, class_path in ELMO_AUTO_MAP.items():
        auto_class = getattr(transformers, auto_name)
        module_name, class_name = (class_path[0] if isinstance(class_path, list) else class_path).split(".")
        elmo_class = getattr(import_module(f".{module_name}", __name__), class_name)
        if auto_class is transformers.AutoConfig:
            auto_class.register(ElmoConfig.model_type, elmo_class, exist_ok=True)
        elif auto_class is transformers.AutoTokenizer:
            auto_class.register(ElmoConfig, tokenizer_class=elmo_class, exist_ok=True)
        else:
            auto_class.register(ElmoConfig, elmo_class, exist_ok=True)
        elmo_class.register_for_auto_class(auto_name)


_register_with_the_auto_classes()
