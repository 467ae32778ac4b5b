"""Train ELMo's biLM, from scratch or from a saved model, on one CPU or many GPUs.

The script users launch: `accelerate launch training/pretrain.py ...` from the repository root, `python -m
training.pretrain ...`, or installed, `elmo-pretrain ...`. The command itself is `training.pretraining.pretrain`.
"""

import sys
from pathlib import Path

if not __package__:  # run as a file, not with -m: see "Running the scripts" in training/__init__.py
    _folder = Path(__file__).resolve().parent
    sys.path[:] = [str(_folder.parent), *(entry for entry in sys.path if Path(entry).resolve() != _folder)]

from training.pretraining.pretrain import main

if __name__ == "__main__":
    main()
