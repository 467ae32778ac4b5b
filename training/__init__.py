"""Training ELMo, two workflows, each in its own subpackage, with the scripts users launch kept here:

| workflow | scripts (`training/X.py`) | code |
| --- | --- | --- |
| pretraining the biLM (bilm-tf) | `build_vocab`, `pretrain`, `evaluate_perplexity`, `model_card` | `pretraining/` |
| fine-tuning task heads (Trainer) | `run_token_classification`, `run_classification` | `finetuning/` |

`recipes/` holds the runs that built the bundled default model. Both workflows import the shared plumbing (errors,
atomic outputs, model folders, options files, model pages) from `common` and the model from `modeling_elmo`; neither
imports the other. Both need the `train` extra (`pip install 'elmo-transformers[train]'`); this package imports
nothing itself, so that a script can say so in one line.

Running the scripts
-------------------
Each script is a few lines that start the command of the same name in its workflow's subpackage
(`training/pretrain.py` runs `elmo_transformers.training.pretraining.pretrain.main`). They run three ways, all with
the package installed (`pip install -e .` in the repository):

* as files, as Hugging Face's example scripts are: `python training/pretrain.py ...`,
  `accelerate launch training/pretrain.py ...`; where the package is not installed they stop with one line that
  says to install it;
* as modules: `python -m elmo_transformers.training.pretrain ...`,
  `accelerate launch -m elmo_transformers.training.pretrain ...`; the command's own module runs the same `main`
  (`python -m elmo_transformers.training.pretraining.pretrain`), but without the one-line check of the extra;
* as the installed package's console scripts, named after the files: `elmo-pretrain`, `elmo-build-vocab`,
  `elmo-evaluate-perplexity`, `elmo-model-card`, `elmo-run-token-classification`, `elmo-run-classification`.

`recipes/prepare_default_corpus.py`, which is not installed, runs the first two ways. The scripts import the package
through `launch.py` (`start_command`, `from_package`), which they load by its path beside them, never relatively (a
file run as a script has no package): it is the one place that says the package, or the `train` extra, is missing.

Their options follow Hugging Face's example scripts, with underscores (`--output_dir`); the `elmo-*` tools of the
core install use dashes (`--batch-size`). See docs/README.md, "Command-line names". As the Trainer's users expect,
the commands declare their options as dataclasses, which `argument_parser.OneSpellingArgumentParser` (Hugging Face's
`HfArgumentParser`, one name per option) parses. Two keep argparse, for options that HfArgumentParser would read
otherwise: `model_card`'s `--datasets` takes zero or more names (a list field takes one or more), and
`recipes/prepare_default_corpus.py`'s `--sources` is one comma-separated value (a list field's are space-separated).
"""
