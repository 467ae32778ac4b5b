"""Build the softmax vocabulary of a biLM from a text corpus: `python training/build_vocab.py --help`.

The command is `elmo_transformers.training.pretraining.build_vocab` (also `python -m
elmo_transformers.training.build_vocab`; installed: `elmo-build-vocab`).
"""

import runpy
from pathlib import Path

# launch.py, beside this file, imports the package or says in one line that it is not installed
start_command = runpy.run_path(str(Path(__file__).with_name("launch.py")))["start_command"]

module = "elmo_transformers.training.pretraining.build_vocab"
main = start_command(module, "main", what="elmo-build-vocab")

if __name__ == "__main__":
    main()
