"""Fine-tune an ELMo sequence-classification head with the Trainer: `python training/run_classification.py --help`.

The command is `elmo_transformers.training.finetuning.run_classification` (also `python -m
elmo_transformers.training.run_classification`; installed: `elmo-run-classification`).
"""

import runpy
from pathlib import Path

# launch.py, beside this file, imports the package or says in one line that it is not installed
start_command = runpy.run_path(str(Path(__file__).with_name("launch.py")))["start_command"]

module = "elmo_transformers.training.finetuning.run_classification"
cli = start_command(module, "cli", what="elmo-run-classification")

if __name__ == "__main__":
    cli()
