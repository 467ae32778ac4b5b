"""ELMo for transformers: `import modeling_elmo` registers the ELMo classes with the Auto classes.

Saved folders also carry the model code and an `auto_map`, so they load with `trust_remote_code=True`
where this package is not installed.
"""

from pathlib import Path

from transformers import (
    AutoConfig,
    AutoModel,
    AutoModelForPreTraining,
    AutoModelForSequenceClassification,
    AutoModelForTokenClassification,
    AutoTokenizer,
)

from .configuration_elmo import BILM_TF_CHAR_IDS, ORIGINAL_CHAR_CNN_FILTERS, ElmoConfig
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

AutoConfig.register(ElmoConfig.model_type, ElmoConfig, exist_ok=True)
AutoModel.register(ElmoConfig, ElmoModel, exist_ok=True)
AutoModelForPreTraining.register(ElmoConfig, ElmoForBidirectionalLM, exist_ok=True)
AutoModelForTokenClassification.register(ElmoConfig, ElmoForTokenClassification, exist_ok=True)
AutoModelForSequenceClassification.register(ElmoConfig, ElmoForSequenceClassification, exist_ok=True)
AutoTokenizer.register(ElmoConfig, tokenizer_class=ElmoTokenizer, exist_ok=True)

# Saving from this package copies the code files next to the weights (Hub remote code).
ElmoConfig.register_for_auto_class()
ElmoModel.register_for_auto_class("AutoModel")
ElmoForBidirectionalLM.register_for_auto_class("AutoModelForPreTraining")
ElmoForTokenClassification.register_for_auto_class("AutoModelForTokenClassification")
ElmoForSequenceClassification.register_for_auto_class("AutoModelForSequenceClassification")
ElmoTokenizer.register_for_auto_class("AutoTokenizer")
