"""Held-out perplexity of a biLM, computed as bilm-tf's run_test.

The script users launch: `python training/evaluate_perplexity.py ...` from the repository root, `python -m
training.evaluate_perplexity ...`, or installed, `elmo-evaluate-perplexity ...`. The command itself is
`training.pretraining.evaluate_perplexity`.
"""

import sys
from pathlib import Path

if not __package__:  # run as a file, not with -m: see "Running the scripts" in training/__init__.py
    _folder = Path(__file__).resolve().parent
    sys.path[:] = [str(_folder.parent), *(entry for entry in sys.path if Path(entry).resolve() != _folder)]

from training.pretraining.evaluate_perplexity import main

if __name__ == "__main__":
    main()
