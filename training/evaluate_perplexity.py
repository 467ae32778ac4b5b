"""Held-out perplexity of a biLM, computed as bilm-tf's run_test: `python training/evaluate_perplexity.py --help`.

The command is `elmo_transformers.training.pretraining.evaluate_perplexity` (also `python -m
elmo_transformers.training.evaluate_perplexity`; installed: `elmo-evaluate-perplexity`).
"""

try:
    from elmo_transformers.training.pretraining.evaluate_perplexity import main
except ModuleNotFoundError as error:  # run as a file from a checkout where the package is not installed
    if error.name != "elmo_transformers":
        raise
    raise SystemExit(
        "error: the elmo-transformers package is not installed: run `pip install -e .` in the repository"
    ) from None

if __name__ == "__main__":
    main()
