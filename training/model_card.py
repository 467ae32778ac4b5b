"""Publish a pretraining run's model as a Hub-ready folder with a model page: `python training/model_card.py --help`.

The command is `elmo_transformers.training.pretraining.model_card` (also `python -m
elmo_transformers.training.model_card`; installed: `elmo-model-card`).
"""

try:
    from elmo_transformers.common.extras import import_from_extra
except ModuleNotFoundError as error:  # run as a file from a checkout where the package is not installed
    if error.name != "elmo_transformers":
        raise
    raise SystemExit(
        "error: the elmo-transformers package is not installed: run `pip install -e .` in the repository"
    ) from None

module = "elmo_transformers.training.pretraining.model_card"
main = import_from_extra(module, "main", extra="train", what="elmo-model-card")

if __name__ == "__main__":
    main()
