"""Held-out perplexity of a biLM, computed as bilm-tf's run_test: `python training/evaluate_perplexity.py --help`.

The command is `elmo_transformers.training.pretraining.evaluate_perplexity` (also `python -m
elmo_transformers.training.evaluate_perplexity`; installed: `elmo-evaluate-perplexity`).
"""

try:
    from elmo_transformers.common.extras import import_from_extra
except ModuleNotFoundError as error:  # run as a file from a checkout where the package is not installed
    if error.name != "elmo_transformers":
        raise
    raise SystemExit(
        "error: the elmo-transformers package is not installed: run `pip install -e .` in the repository"
    ) from None

module = "elmo_transformers.training.pretraining.evaluate_perplexity"
main = import_from_extra(module, "main", extra="train", what="elmo-evaluate-perplexity")

if __name__ == "__main__":
    main()
