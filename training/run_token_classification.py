"""Fine-tune an ELMo token-classification head with the Trainer: `python training/run_token_classification.py --help`.

The command is `elmo_transformers.training.finetuning.run_token_classification` (also `python -m
elmo_transformers.training.run_token_classification`; installed: `elmo-run-token-classification`).
"""

try:
    from elmo_transformers.common.extras import import_from_extra
except ModuleNotFoundError as error:  # run as a file from a checkout where the package is not installed
    if error.name != "elmo_transformers":
        raise
    raise SystemExit(
        "error: the elmo-transformers package is not installed: run `pip install -e .` in the repository"
    ) from None

module = "elmo_transformers.training.finetuning.run_token_classification"
cli = import_from_extra(module, "cli", extra="train", what="elmo-run-token-classification")

if __name__ == "__main__":
    cli()
