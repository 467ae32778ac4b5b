"""The output folder of a training script: one run writes it at a time, and a folder that already holds something
is trained into only when the user says so. pretrain.py and the fine-tuning scripts share these steps, so that the
three behave alike.

Under `accelerate launch` every process runs the script, but the processes of one run must not refuse each other:
the main process alone takes the lock (`elmo_transformers.common.output_lock`) and decides, and every process raises its
refusal, so that all of them stop with the same one line instead of waiting for the main one at the next collective
call.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

from accelerate import PartialState
from accelerate.utils import broadcast_object_list

from elmo_transformers.common.errors import TrainingError
from elmo_transformers.common.output_lock import output_lock

__all__ = ["exclusive_output_dir", "on_main_process", "refuse_existing_output_dir"]


def on_main_process(check: Callable[[], None], *, is_main_process: bool) -> None:
    """Run `check` on the main process only; a `TrainingError` it raises is raised on every process."""
    refusal: list[str | None] = [None]
    if is_main_process:
        try:
            check()
        except TrainingError as error:
            refusal = [str(error)]
    (message,) = broadcast_object_list(refusal)
    if message is not None:
        # Every process holds the refusal before any ends: the launcher stops the others once one has ended.
        PartialState().wait_for_everyone()
        raise TrainingError(message)


@contextmanager
def exclusive_output_dir(output_dir: Path, *, is_main_process: bool) -> Iterator[None]:
    """Hold the lock of `output_dir` (`OUTPUT_DIR.lock` beside it) inside the block; a second run, of any script,
    stops on every process before it writes anything, with one line naming the process that holds it."""
    with ExitStack() as held:
        on_main_process(
            lambda: held.enter_context(output_lock(output_dir, error=TrainingError)), is_main_process=is_main_process
        )
        yield


def refuse_existing_output_dir(output_dir: Path, *, overwrite: bool, resume: str = "") -> None:
    """Raise `TrainingError` when `output_dir` holds files and the user passed neither --overwrite_output_dir nor
    (where the script can continue a run: `resume` names the flag) that flag."""
    if overwrite or not output_dir.is_dir() or not any(output_dir.iterdir()):
        return
    continue_it = f"pass {resume} to continue it or " if resume else "pass "
    raise TrainingError(f"{output_dir} is not empty: {continue_it}--overwrite_output_dir to write into it anyway")
