"""Run a script in a Python where this package cannot be imported, as a Hub user who loads a saved folder with
`trust_remote_code=True` has it: the folder's own code files must be enough. The editable install would put the
package on `sys.path`, so every top-level package the project installs is refused, by a `sitecustomize.py` on
`PYTHONPATH`: in the script and in every Python it starts (sentence-transformers' spawned pool workers). The same
refusal of other packages stands for an extra that is not installed."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import tomllib
from collections.abc import Sequence
from pathlib import Path

__all__ = ["PROJECT_PACKAGES", "run_without_the_package"]

with open(Path(__file__).resolve().parents[2] / "pyproject.toml", "rb") as _file:
    # the installed top-level names: `modeling_elmo` and `elmo_transformers` (pyproject.toml's packages)
    PROJECT_PACKAGES = sorted({name.split(".")[0] for name in tomllib.load(_file)["tool"]["setuptools"]["packages"]})

# A name set to None in sys.modules is what Python takes for a package that is not installed: `import` raises
# ModuleNotFoundError and `importlib.util.find_spec` returns None (which libraries use to test for optional packages).
_REFUSE = """
import sys

sys.modules.update(dict.fromkeys({refused!r}))
"""


def run_without_the_package(
    script: str, *arguments: str, work: Path, refuse: Sequence[str] = PROJECT_PACKAGES
) -> subprocess.CompletedProcess[str]:
    """Run `script` (its `sys.argv[1:]` = `arguments`) offline in `work`, with its own modules cache there, where
    the top-level packages `refuse` (this package's, by default) cannot be imported."""
    site = work / "refuse-the-package"
    site.mkdir(exist_ok=True)
    (site / "sitecustomize.py").write_text(_REFUSE.format(refused=tuple(refuse)))
    environment = dict(os.environ, HF_HUB_OFFLINE="1", HF_MODULES_CACHE=str(work / "modules"), PYTHONPATH=str(site))
    command = [sys.executable, "-c", textwrap.dedent(script), *arguments]
    return subprocess.run(command, capture_output=True, text=True, cwd=work, env=environment)
