"""A Ctrl-C while a console command imports torch (its first seconds), without a race: the command runs in a fresh
Python where importing torch raises KeyboardInterrupt, as SIGINT's handler raises it in the import."""

from __future__ import annotations

import subprocess
import sys
import textwrap

# The console script's route for the command's module (argv[1]), with its arguments.
_COMMAND = textwrap.dedent(
    """
    import importlib
    import sys

    class CtrlCWhileTorchIsImported:
        def find_spec(self, name, path=None, target=None):
            if name == "torch":
                raise KeyboardInterrupt
            return None

    sys.meta_path.insert(0, CtrlCWhileTorchIsImported())
    sys.exit(importlib.import_module(sys.argv[1]).main(sys.argv[2:]))
    """
)


def run_with_ctrl_c_on_importing_torch(module: str, *arguments: str) -> subprocess.CompletedProcess:
    """`module.main(arguments)` in a subprocess interrupted when it imports torch: its exit status and output."""
    return subprocess.run(
        [sys.executable, "-c", _COMMAND, module, *arguments], capture_output=True, text=True, timeout=120
    )
