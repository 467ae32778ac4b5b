"""Training ELMo: the biLM's pretraining and task heads' fine-tuning scripts; the frozen-biLM feature cache and its
data collator are exported here.

Running the scripts
-------------------
`pretrain`, `build_vocab`, `evaluate_perplexity`, `model_card`, `run_token_classification` and `run_classification`
run three ways:

* as files from the repository root, as Hugging Face's example scripts are: `python training/pretrain.py ...`,
  `accelerate launch training/pretrain.py ...` (the package need not be installed);
* as modules: `python -m training.pretrain ...`, `accelerate launch -m training.pretrain ...`;
* as the installed package's console scripts, named after the files: `elmo-pretrain`, `elmo-build-vocab`,
  `elmo-evaluate-perplexity`, `elmo-model-card`, `elmo-run-token-classification`, `elmo-run-classification`.

`recipes/prepare_default_corpus.py`, which is not installed, runs the first two ways. The scripts import the package
by its name (`from training.jsonl import ...`), never relatively: a file run as a script has no package. Run as a
file, Python puts the script's folder first on `sys.path`; the lines after the script's standard-library imports put
the repository root in its place, so that `training` is this checkout's (whether or not a copy is installed) and no
module of the folder (`evaluation`, `metrics`, ...) passes for a top-level module of that name.
"""

from .collator import ElmoCachedFeaturesCollator
from .feature_cache import FEATURES_COLUMN, bilm_features_key, cache_bilm_features

__all__ = ["FEATURES_COLUMN", "ElmoCachedFeaturesCollator", "bilm_features_key", "cache_bilm_features"]
