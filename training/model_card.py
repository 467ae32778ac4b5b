"""Publish a pretraining run's model as a Hub-ready folder with a model page.

The script users launch: `python training/model_card.py ...` from the repository root, `python -m
training.model_card ...`, or installed, `elmo-model-card ...`. The command itself is
`training.pretraining.model_card`.
"""

import sys
from pathlib import Path

if not __package__:  # run as a file, not with -m: see "Running the scripts" in training/__init__.py
    _folder = Path(__file__).resolve().parent
    sys.path[:] = [str(_folder.parent), *(entry for entry in sys.path if Path(entry).resolve() != _folder)]

from training.pretraining.model_card import main

if __name__ == "__main__":
    main()
