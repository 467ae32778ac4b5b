"""The output folder of a training script: one run writes it at a time, and a folder that already holds something
is trained into only when the user says so. pretrain.py and the fine-tuning scripts share these steps, so that the
three behave alike.

Under `accelerate launch` the main process alone takes the lock and decides, and every process raises its refusal
(`elmo_transformers.common.processes.on_main_process`).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

from elmo_transformers.common.atomic_output import output_mode
from elmo_transformers.common.errors import TrainingError
from elmo_transformers.common.output_lock import output_lock
from elmo_transformers.common.processes import on_main_process
from elmo_transformers.common.regular_files import file_kind

__all__ = ["exclusive_output_dir", "refuse_existing_output_dir"]


@contextmanager
def exclusive_output_dir(output_dir: Path) -> Iterator[None]:
    """Hold the lock of `output_dir` (`OUTPUT_DIR.lock` beside it) inside the block; a second run, of any script,
    stops on every process before it writes anything, with one line naming the process that holds it."""
    with ExitStack() as held:
        on_main_process(lambda: held.enter_context(output_lock(output_dir, error=TrainingError)), error=TrainingError)
        yield


def refuse_existing_output_dir(output_dir: Path, *, overwrite: bool, resume: str = "") -> None:
    """Raise `TrainingError` when `output_dir` is no folder (a file, a device: whatever --overwrite_output_dir says),
    or holds files and the user passed neither --overwrite_output_dir nor (where the script can continue a run:
    `resume` names the flag) that flag; and one that cannot be looked at (`output_mode`)."""
    output_mode(output_dir, error=TrainingError)
    if (output_dir.exists() or output_dir.is_symlink()) and not output_dir.is_dir():
        kind = file_kind(os.stat(output_dir).st_mode) if output_dir.exists() else "a broken link"
        raise TrainingError(f"{output_dir} is {kind}, not a folder: name a folder to train into")
    if overwrite or not output_dir.is_dir() or not any(output_dir.iterdir()):
        return
    continue_it = f"pass {resume} to continue it or " if resume else "pass "
    raise TrainingError(f"{output_dir} is not empty: {continue_it}--overwrite_output_dir to write into it anyway")
