"""A second writer, for the tests of one writer per output: a process that holds an output's lock."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

# Holds the lock of its argument until it reads a line on stdin (or is killed).
_HOLDER = textwrap.dedent(
    """
    import sys
    from elmo_transformers.common.errors import EmbedError
    from elmo_transformers.common.output_lock import output_lock
    with output_lock(sys.argv[1], error=EmbedError):
        print("locked", flush=True)
        sys.stdin.readline()
    """
)


def start_lock_holder(target: Path) -> subprocess.Popen:
    """A process holding the lock of `target` once this returns; a line on its stdin ends it."""
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLDER, str(target)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    assert holder.stdout.readline().strip() == "locked"
    return holder
