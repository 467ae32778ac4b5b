"""What a script of this folder imports first when it runs as a file (`python training/pretrain.py`,
`accelerate launch training/pretrain.py`): Python then puts the script's folder first on `sys.path`; this puts the
repository root in its place, so that `training` is this checkout's package (whether or not a copy is installed)
and no name of this folder (`pretraining`, `finetuning`, ...) passes for a top-level module."""

import sys
from pathlib import Path

_folder = Path(__file__).resolve().parent
sys.path[:] = [str(_folder.parent), *(entry for entry in sys.path if Path(entry).resolve() != _folder)]
