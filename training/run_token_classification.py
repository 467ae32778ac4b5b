"""Fine-tune an ELMo token-classification head with the Trainer: `python training/run_token_classification.py --help`.

The command is `training.finetuning.run_token_classification` (also `python -m training.run_token_classification`;
installed: `elmo-run-token-classification`).
"""

if not __package__:  # run as a file (see training/_file_launch.py)
    import _file_launch  # noqa: F401

from training.finetuning.run_token_classification import cli, main  # noqa: F401  (main: importable here, as it was)

if __name__ == "__main__":
    cli()
