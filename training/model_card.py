"""Publish a pretraining run's model as a Hub-ready folder with a model page: `python training/model_card.py --help`.

The command is `elmo_transformers.training.pretraining.model_card` (also `python -m
elmo_transformers.training.model_card`; installed: `elmo-model-card`).
"""

import runpy
from pathlib import Path

# launch.py, beside this file, imports the package or says in one line that it is not installed
start_command = runpy.run_path(str(Path(__file__).with_name("launch.py")))["start_command"]

module = "elmo_transformers.training.pretraining.model_card"
main = start_command(module, "main", what="elmo-model-card")

if __name__ == "__main__":
    main()
