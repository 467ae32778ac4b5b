"""Fine-tune an ELMo sequence-classification head with the Trainer.

The script users launch: `python training/run_classification.py ...` from the repository root, `python -m
training.run_classification ...`, or installed, `elmo-run-classification ...`. The command itself is
`training.finetuning.run_classification`.
"""

import sys
from pathlib import Path

if not __package__:  # run as a file, not with -m: see "Running the scripts" in training/__init__.py
    _folder = Path(__file__).resolve().parent
    sys.path[:] = [str(_folder.parent), *(entry for entry in sys.path if Path(entry).resolve() != _folder)]

from training.finetuning.run_classification import cli, main

__all__ = ["cli", "main"]  # `main(arguments)` returns the metrics, as before the split

if __name__ == "__main__":
    cli()
