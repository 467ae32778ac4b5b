"""The console scripts of `elmo-convert` and `elmo-embed` (pyproject.toml's [project.scripts]): each imports its
command's module, then runs its `main`, so that a Ctrl-C while that module is imported (Python's first moments,
before `main` can catch anything) is the command's one interruption line, as it is once `main` runs, not a
KeyboardInterrupt traceback. This module imports nothing but the standard library, `common.errors` and
`common.processes`."""

from __future__ import annotations

import importlib

from elmo_transformers.common.errors import report_interruption
from elmo_transformers.common.processes import worker_number

__all__ = ["elmo_convert", "elmo_embed"]


def _launch(module: str, program: str) -> int:
    """`module.main()` on `sys.argv`, or the interruption line of `program` when a Ctrl-C comes while `module` is
    imported (nothing was started: nothing is written)."""
    try:
        main = importlib.import_module(module).main
    except KeyboardInterrupt:
        if worker_number() not in (None, 0):  # (one of elmo-embed's workers: the first says it)
            return 130
        return report_interruption(program, "nothing was started, nothing was written: run the command again")
    return main()


def elmo_convert() -> int:
    """The `elmo-convert` console script."""
    return _launch("elmo_transformers.conversion.cli", "elmo-convert")


def elmo_embed() -> int:
    """The `elmo-embed` console script."""
    return _launch("elmo_transformers.inference.embed", "elmo-embed")
