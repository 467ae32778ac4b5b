"""A Ctrl-C while a console command imports a module (torch in its first seconds, or the command's own module before
its `main` runs), without a race: the command runs in a fresh Python where importing that module raises
KeyboardInterrupt, as SIGINT's handler raises it in the import."""

from __future__ import annotations

import subprocess
import sys
import textwrap

# The route of a command (argv[2]: "module" for its main(arguments), or "module:function" for the console script's
# function on sys.argv), with a Ctrl-C at the import of argv[1], and the command's arguments.
_COMMAND = textwrap.dedent(
    """
    import importlib
    import sys

    interrupted, route, arguments = sys.argv[1], sys.argv[2], sys.argv[3:]

    class CtrlCWhileImporting:
        def find_spec(self, name, path=None, target=None):
            if name == interrupted:
                raise KeyboardInterrupt
            return None

    sys.meta_path.insert(0, CtrlCWhileImporting())
    if ":" in route:
        module, function = route.split(":")
        sys.argv = [function, *arguments]
        sys.exit(getattr(importlib.import_module(module), function)())
    sys.exit(importlib.import_module(route).main(arguments))
    """
)


def run_with_ctrl_c_on_importing(interrupted: str, route: str, *arguments: str) -> subprocess.CompletedProcess:
    """The command `route` ("module": `module.main(arguments)`; "module:function": a console script, on `sys.argv`)
    in a subprocess interrupted when it imports the module `interrupted`: its exit status and output."""
    return subprocess.run(
        [sys.executable, "-c", _COMMAND, interrupted, route, *arguments], capture_output=True, text=True, timeout=120
    )


def run_with_ctrl_c_on_importing_torch(module: str, *arguments: str) -> subprocess.CompletedProcess:
    """`module.main(arguments)` in a subprocess interrupted when it imports torch: its exit status and output."""
    return run_with_ctrl_c_on_importing("torch", module, *arguments)
