"""Train ELMo's biLM, from scratch or from a saved model, on one CPU or many GPUs: `accelerate launch
training/pretrain.py --help`.

The command is `elmo_transformers.training.pretraining.pretrain` (also `python -m elmo_transformers.training.pretrain`;
installed: `elmo-pretrain`).
"""

try:
    from elmo_transformers.common.extras import import_from_extra
except ModuleNotFoundError as error:  # run as a file from a checkout where the package is not installed
    if error.name != "elmo_transformers":
        raise
    raise SystemExit(
        "error: the elmo-transformers package is not installed: run `pip install -e .` in the repository"
    ) from None

module = "elmo_transformers.training.pretraining.pretrain"
main = import_from_extra(module, "main", extra="train", what="elmo-pretrain")

if __name__ == "__main__":
    main()
