"""The processes of one run under `accelerate launch`: the main process decides what all of them must agree on.

Every process runs the command, but the processes of one run must not refuse each other: the main process alone
takes an output's lock (`elmo_transformers.common.output_lock`) and checks what is there, and every process raises
its refusal, so that all of them stop with the same one line instead of waiting for the main one at the next
collective call. Without a launcher there is one process, the main one, and nothing is sent.
"""

from __future__ import annotations

from collections.abc import Callable

from accelerate import PartialState
from accelerate.utils import broadcast_object_list

from .errors import ElmoError

__all__ = ["on_main_process"]


def on_main_process(check: Callable[[], None], *, error: type[ElmoError]) -> None:
    """Run `check` on the main process only; an `error` it raises is raised on every process (as `error`)."""
    state = PartialState()
    refusal: list[str | None] = [None]
    if state.is_main_process:
        try:
            check()
        except error as raised:
            refusal = [str(raised)]
    (message,) = broadcast_object_list(refusal)
    if message is not None:
        # Every process holds the refusal before any ends: the launcher stops the others once one has ended.
        state.wait_for_everyone()
        raise error(message)
