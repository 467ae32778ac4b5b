"""Build the softmax vocabulary of a biLM from a text corpus.

The script users launch: `python training/build_vocab.py ...` from the repository root, `python -m
training.build_vocab ...`, or installed, `elmo-build-vocab ...`. The command itself is
`training.pretraining.build_vocab`.
"""

import sys
from pathlib import Path

if not __package__:  # run as a file, not with -m: see "Running the scripts" in training/__init__.py
    _folder = Path(__file__).resolve().parent
    sys.path[:] = [str(_folder.parent), *(entry for entry in sys.path if Path(entry).resolve() != _folder)]

from training.pretraining.build_vocab import main

if __name__ == "__main__":
    main()
