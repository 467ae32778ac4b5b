"""The processes of one run under `accelerate launch`: the main process decides what all of them must agree on, and
a process that stops ends the others' waits in one line.

Every process runs the command, but the processes of one run must not refuse each other: the main process alone
takes an output's lock (`elmo_transformers.common.output_lock`) and checks what is there, and every process raises
its refusal, so that all of them stop with the same one line instead of waiting for the main one at the next
collective call. Without a launcher there is one process, the main one, and nothing is sent: accelerate (and torch,
which it imports) is then not imported at all (`launched`), so that `elmo-embed` on a graph runs without them. Nor
are they by `elmo-embed`'s own workers on a graph, which meet in a group of their own (`common.socket_group`).
"""

from __future__ import annotations

import gc
import os
import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TypeVar

from .errors import ElmoError
from .socket_group import socket_group, socket_group_requested

__all__ = [
    "WORKER_VARIABLE",
    "OneProcess",
    "Terminated",
    "deferred_interrupts",
    "interrupts_held",
    "is_main_process",
    "launched",
    "leave_process_group",
    "on_main_process",
    "peer_stopped",
    "take_held_interrupts",
    "terminations_interrupt",
    "wait_for_everyone",
    "worker_number",
]

Result = TypeVar("Result")
# The world sizes by which accelerate's `PartialState` tells a launched process (`_prepare_backend`), the first one set
# counting: MPI's launchers' and torchrun's (which `accelerate launch` runs), besides LOCAL_RANK.
_WORLD_SIZE_VARIABLES = ("PMI_SIZE", "OMPI_COMM_WORLD_SIZE", "MV2_COMM_WORLD_SIZE", "WORLD_SIZE")


# Set in the environment of each worker process that `elmo-embed` starts itself (`inference.workers`): its number.
WORKER_VARIABLE = "ELMO_EMBED_WORKER"


def worker_number() -> int | None:
    """This process's number among the workers that `elmo-embed` started (0: the first, which reports what every
    worker meets alike), or None outside them: known without accelerate, whose import a Ctrl-C may cut short."""
    number = os.environ.get(WORKER_VARIABLE)
    return None if number is None else int(number)


def launched() -> bool:
    """Whether a launcher started this process as one of a run's several, read from the environment as accelerate's
    `PartialState` reads it (LOCAL_RANK set, or a world size above 1), without importing accelerate (and torch)."""
    if int(os.environ.get("LOCAL_RANK", -1)) != -1:
        return True
    world_size = next((int(os.environ[name]) for name in _WORLD_SIZE_VARIABLES if name in os.environ), 1)
    return world_size > 1


@dataclass(frozen=True)
class OneProcess:
    """The processes of a run that no launcher started (`launched` is False): this one alone, the main one, as
    accelerate's `PartialState` would describe it, known without importing accelerate."""

    process_index: int = 0
    num_processes: int = 1
    is_main_process: bool = True


def is_main_process() -> bool:
    """Whether this is the main process of the run (the only one without a launcher): the one that reports."""
    if not launched():
        return True
    if socket_group_requested():
        return worker_number() == 0
    from accelerate import PartialState

    return PartialState().is_main_process


class _PeerStopped(Exception):
    """The cause of the error `_together` raises: another process of the run stopped (`peer_stopped`)."""


def peer_stopped(error: BaseException) -> bool:
    """Whether `error` says only that another process of the run stopped (`_together`): that process, or whatever
    watches the processes (the launcher; elmo-embed, over its own workers), says why."""
    return isinstance(error.__cause__, _PeerStopped)


def _together(call: Callable[[], Result], *, error: type[ElmoError], advice: str) -> Result:
    """`call()`, a collective call; when another process of the run has stopped (its error, or the launcher's
    report of its death, is printed above), `error` says so in one line, followed by `advice`."""
    try:
        return call()
    except RuntimeError:  # gloo: "Connection closed by peer ..."; NCCL: a timeout or an abort; `GroupBroken`
        raise error(f"another process of this run stopped (its error is above){advice}") from _PeerStopped()


def wait_for_everyone(*, error: type[ElmoError], advice: str = "") -> None:
    """Wait until every process of the run gets here (see `_together` for a process that never does)."""
    if not launched():
        return
    if socket_group_requested():
        _together(lambda: socket_group().exchange(None), error=error, advice=advice)
        return
    from accelerate import PartialState

    _together(PartialState().wait_for_everyone, error=error, advice=advice)


def on_main_process(check: Callable[[], None], *, error: type[ElmoError]) -> None:
    """Run `check` on the main process only; an `error` it raises is raised on every process (as `error`)."""
    refusal: list[str | None] = [None]
    if is_main_process():
        try:
            check()
        except error as raised:
            refusal = [str(raised)]
    (message,) = _broadcast(refusal, error=error)
    if message is not None:
        # Every process holds the refusal before any ends: the launcher stops the others once one has ended.
        wait_for_everyone(error=error)
        raise error(message)


def _broadcast(objects: list[Result], *, error: type[ElmoError]) -> list[Result]:
    """The main process's `objects`, on every process (as they are without a launcher)."""
    if not launched():
        return objects
    if socket_group_requested():
        return _together(lambda: socket_group().exchange(objects), error=error, advice="")
    from accelerate.utils import broadcast_object_list

    return _together(lambda: broadcast_object_list(objects), error=error, advice="")


@contextmanager
def deferred_interrupts() -> Iterator[Callable[[], None]]:
    """Ctrl-C (SIGINT) inside the block is raised as KeyboardInterrupt only where the check it gives is called, and
    at its end. For work that must not be cut halfway, and for code that runs in weakref callbacks and finalizers
    (h5py's bookkeeping, the garbage collector's): a KeyboardInterrupt raised there can only be printed ("Exception
    ignored in ..."), and the program went on, the user's interrupt swallowed. Outside the main thread (where
    signals cannot be caught) the block runs as is."""
    received: list[int] = []

    def check() -> None:
        if received:
            raise KeyboardInterrupt

    if threading.current_thread() is not threading.main_thread():
        yield check
        return
    previous = signal.signal(signal.SIGINT, lambda number, frame: received.append(number))
    try:
        yield check
    finally:
        signal.signal(signal.SIGINT, previous)
    check()


@contextmanager
def interrupts_held() -> Iterator[None]:
    """Ctrl-C (SIGINT) held back inside the block (blocked in this thread, delivered at its end), and from the start
    in the processes started inside it, which inherit the blocked signal: they let it in once they can say it in
    their one line (`take_held_interrupts`), instead of a traceback from their first imports. Where signals cannot
    be blocked (Windows) the block runs as is."""
    if not hasattr(signal, "pthread_sigmask"):
        yield
        return
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


def take_held_interrupts() -> None:
    """Let in the Ctrl-C that the command which started this process held back (`interrupts_held`): one that came
    meanwhile is raised here, as KeyboardInterrupt."""
    if hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})


class Terminated(KeyboardInterrupt):
    """SIGTERM (`kill PID`, a job scheduler's stop), raised as a Ctrl-C is (`terminations_interrupt`); a command that
    catches it exits with 143 (128 + 15)."""

    exit_status = 143


@contextmanager
def terminations_interrupt() -> Iterator[None]:
    """Inside the block SIGTERM raises `Terminated`, a KeyboardInterrupt: the cleanup that a Ctrl-C runs (staging
    folders removed, locks released) runs for it too. By default SIGTERM ends Python at once, with no cleanup: each
    `elmo-convert onnx` killed so left a 12 MB `.partial` folder and its lock. Outside the main thread (where signals
    cannot be caught) the block runs as is."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def terminate(number: int, frame: object) -> None:
        raise Terminated

    previous = signal.signal(signal.SIGTERM, terminate)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def leave_process_group() -> None:
    """Once a run under `accelerate launch` is over, leave its process group (a no-op for one process), so that the
    interpreter's exit has no gloo group left to tear down: that teardown aborted a process now and then ("terminate
    called without an active exception"). The objects of finished collective calls are collected first, so that
    gloo's threads, which the group's destructor joins, hold none to free. A caller that holds a DDP model frees it
    before (`LmTrainer.leave_process_group`): destroying the group while DDP's Reducer still held it deadlocked.
    A Ctrl-C meanwhile is raised once the group is left (`deferred_interrupts`): inside the collection it could only
    be printed, and a teardown cut halfway could abort the process. Without a launcher there is no group; a
    `socket_group` closes its connections."""
    if not launched():
        return
    if socket_group_requested():
        socket_group().leave()
        return
    from accelerate import PartialState

    with deferred_interrupts():
        gc.collect()
        PartialState().destroy_process_group()
