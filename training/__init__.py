"""Training ELMo, two workflows, each in its own subpackage, with the scripts users launch kept here:

| workflow | scripts (`training/X.py`) | code |
| --- | --- | --- |
| pretraining the biLM (bilm-tf) | `build_vocab`, `pretrain`, `evaluate_perplexity`, `model_card` | `pretraining/` |
| fine-tuning task heads (Trainer) | `run_token_classification`, `run_classification` | `finetuning/` |

`recipes/` holds the runs that built the bundled default model. Both workflows import the shared plumbing (errors,
atomic outputs, model folders, options files, model pages) from `common` and the model from `modeling_elmo`; neither
imports the other. The frozen-biLM feature cache and its data collator are exported here, where they always were.

Running the scripts
-------------------
Each script is a few lines that start the command of the same name in its workflow's subpackage
(`training/pretrain.py` runs `training.pretraining.pretrain.main`). They run three ways:

* as files from the repository root, as Hugging Face's example scripts are: `python training/pretrain.py ...`,
  `accelerate launch training/pretrain.py ...` (the package need not be installed);
* as modules: `python -m training.pretrain ...`, `accelerate launch -m training.pretrain ...`;
* as the installed package's console scripts, named after the files: `elmo-pretrain`, `elmo-build-vocab`,
  `elmo-evaluate-perplexity`, `elmo-model-card`, `elmo-run-token-classification`, `elmo-run-classification`.

`recipes/prepare_default_corpus.py`, which is not installed, runs the first two ways. The scripts import the package
by its name (`from training.pretraining.pretrain import main`), never relatively: a file run as a script has no
package. Run as a file, a script first imports `_file_launch` (found because Python puts the script's folder first on
`sys.path`), which puts the repository root in the folder's place.
"""

from common.moved_modules import keep_old_paths

from .finetuning.collator import ElmoCachedFeaturesCollator
from .finetuning.feature_cache import FEATURES_COLUMN, bilm_features_key, cache_bilm_features

__all__ = ["FEATURES_COLUMN", "ElmoCachedFeaturesCollator", "bilm_features_key", "cache_bilm_features"]

# Where the modules of the flat folder this package was went when it was split by workflow.
keep_old_paths(
    {
        "training.lm_checkpoint": "training.pretraining.checkpoint",
        "training.lm_evaluation": "training.pretraining.perplexity",
        "training.lm_metrics": "training.pretraining.metrics_log",
        "training.lm_model": "training.pretraining.starting_model",
        "training.lm_vocabulary": "training.pretraining.vocabulary",
        "training.text_stream": "training.pretraining.text_stream",
        "training.window_packer": "training.pretraining.window_packer",
        "training.sparse_softmax_sync": "training.pretraining.sparse_softmax_sync",
        "training.arguments": "training.finetuning.arguments",
        "training.collator": "training.finetuning.collator",
        "training.feature_cache": "training.finetuning.feature_cache",
        "training.evaluation": "training.finetuning.evaluation",
        "training.layer_weights": "training.finetuning.layer_weights",
        "training.workflow": "training.finetuning.workflow",
        "training.jsonl": "training.finetuning.jsonl",
    }
)
