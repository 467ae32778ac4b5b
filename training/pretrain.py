"""Train ELMo's biLM, from scratch or from a saved model, on one CPU or many GPUs: `accelerate launch
training/pretrain.py --help`.

The command is `elmo_transformers.training.pretraining.pretrain` (also `python -m elmo_transformers.training.pretrain`;
installed: `elmo-pretrain`).
"""

import runpy
from pathlib import Path

# launch.py, beside this file, imports the package or says in one line that it is not installed
start_command = runpy.run_path(str(Path(__file__).with_name("launch.py")))["start_command"]

module = "elmo_transformers.training.pretraining.pretrain"
main = start_command(module, "main", what="elmo-pretrain")

if __name__ == "__main__":
    main()
