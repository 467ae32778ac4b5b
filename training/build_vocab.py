"""Build the softmax vocabulary of a biLM from a text corpus: `python training/build_vocab.py --help`.

The command is `elmo_transformers.training.pretraining.build_vocab` (also `python -m
elmo_transformers.training.build_vocab`; installed: `elmo-build-vocab`).
"""

try:
    from elmo_transformers.training.pretraining.build_vocab import main
except ModuleNotFoundError as error:  # run as a file from a checkout where the package is not installed
    if error.name != "elmo_transformers":
        raise
    raise SystemExit(
        "error: the elmo-transformers package is not installed: run `pip install -e .` in the repository"
    ) from None

if __name__ == "__main__":
    main()
