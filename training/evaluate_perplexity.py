"""Held-out perplexity of a biLM, computed as bilm-tf's run_test: `python training/evaluate_perplexity.py --help`.

The command is `elmo_transformers.training.pretraining.evaluate_perplexity` (also `python -m
elmo_transformers.training.evaluate_perplexity`; installed: `elmo-evaluate-perplexity`).
"""

import runpy
from pathlib import Path

# launch.py, beside this file, imports the package or says in one line that it is not installed
start_command = runpy.run_path(str(Path(__file__).with_name("launch.py")))["start_command"]

module = "elmo_transformers.training.pretraining.evaluate_perplexity"
main = start_command(module, "main", what="elmo-evaluate-perplexity")

if __name__ == "__main__":
    main()
