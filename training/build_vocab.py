"""Build the softmax vocabulary of a biLM from a text corpus: `python training/build_vocab.py --help`.

The command is `elmo_transformers.training.pretraining.build_vocab` (also `python -m
elmo_transformers.training.build_vocab`; installed: `elmo-build-vocab`).
"""

try:
    from elmo_transformers.common.extras import import_from_extra
except ModuleNotFoundError as error:  # run as a file from a checkout where the package is not installed
    if error.name != "elmo_transformers":
        raise
    raise SystemExit(
        "error: the elmo-transformers package is not installed: run `pip install -e .` in the repository"
    ) from None

module = "elmo_transformers.training.pretraining.build_vocab"
main = import_from_extra(module, "main", extra="train", what="elmo-build-vocab")

if __name__ == "__main__":
    main()
