"""Fine-tuning ELMo task heads: the frozen-biLM feature cache, its data collator and the training scripts
(`python -m training.run_token_classification`, `python -m training.run_classification`)."""

from .collator import ElmoCachedFeaturesCollator
from .feature_cache import FEATURES_COLUMN, bilm_features_key, cache_bilm_features

__all__ = ["FEATURES_COLUMN", "ElmoCachedFeaturesCollator", "bilm_features_key", "cache_bilm_features"]
