"""How `elmo-embed` shares a run out among the processes of `accelerate launch`: the processes (`run_processes`; each
one's device is `request.process_device`), the groups of batches each embeds (`BatchShare`), and the failure of one
process's own part (`ProcessFailure`). One process, the usual run, is the case of a share of one.

Every process reads the whole input and forms the same batches; process `process` embeds every `processes`-th group
of those that hold unfinished lines, from the `process`-th on (a group is a batch, or the batches that share the
pieces of a line over --max-words: `batching.batch_groups`). The batches, and so the vectors, are those of one
process, and a resumed run shares out what is left among any number of processes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from elmo_transformers.common.errors import EmbedError
from elmo_transformers.common.processes import OneProcess, launched
from elmo_transformers.common.socket_group import GroupBroken, SocketGroup, socket_group, socket_group_requested

if TYPE_CHECKING:
    from accelerate import PartialState

__all__ = ["BatchShare", "ProcessFailure", "run_processes"]


class ProcessFailure(EmbedError):
    """A failure in one process's own part of the run (its batches, its writes), which that process reports; an
    error that every process of `accelerate launch` raises alike (bad input, an output in the way) is reported by
    the main process alone."""


def run_processes(device: str | None, *, graph: bool) -> PartialState | OneProcess | SocketGroup:
    """The processes of this run: one, or those of `accelerate launch` (or `elmo-embed`'s workers), which join one
    CPU group (gloo) on a graph (run on the CPU), without a GPU or with --device cpu. A run of one process on a graph
    goes without accelerate and torch (`OneProcess`), and so do `elmo-embed`'s own workers on a graph, which meet in
    a `SocketGroup`."""
    if graph and not launched():
        return OneProcess()
    if graph and socket_group_requested():
        try:
            return socket_group()
        except GroupBroken as error:  # (this worker's own failure: it says it, as one of its batches would)
            raise ProcessFailure(f"the workers of this run could not meet: {error}") from None
    import torch
    from accelerate import PartialState

    return PartialState(cpu=graph or device == "cpu" or not torch.accelerator.is_available())


@dataclass
class BatchShare:
    """Which of the `processes` embeds each group of batches holding unfinished lines: one after the other, in the
    order the groups are formed, so that this `process` embeds every `processes`-th group from its own on."""

    process: int = 0
    processes: int = 1
    # The groups of batches of unfinished lines formed so far, for all processes.
    dispatched: int = 0

    def window_owners(self) -> Callable[[int], int]:
        """The process that embeds each group of one window's batches, by the group's number in the window
        (`batch_groups`): a group is given out when it is first asked for."""
        owners: dict[int, int] = {}

        def owner(group: int) -> int:
            if group not in owners:
                owners[group] = self.dispatched % self.processes
                self.dispatched += 1
            return owners[group]

        return owner
