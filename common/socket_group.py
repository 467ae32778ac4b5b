"""The process group of `elmo-embed`'s own workers on a graph (`inference.workers`), without torch: a worker that
joined torch's group (gloo, through accelerate) imported torch and accelerate first, 1.7 s of its start-up, for a
run that needs neither, and a graph could not run in workers where torch is not installed.

The run's collective calls are two (`common.processes`): wait until every worker gets there, and give every worker
the main worker's object (a refusal, a line or None). Both are one `exchange`: each worker sends worker 0 (the main
one) its arrival, worker 0 waits for all of them, then sends each its own object. Worker 0 listens at
MASTER_ADDR:MASTER_PORT, where the others connect, authenticated by the run's key (`GROUP_KEY_VARIABLE`, which the
command draws); the objects travel as JSON (never a pickle), of at most `_MAX_MESSAGE_BYTES`. A worker that has
stopped (an error, a signal) closed its connection: the others' next exchange raises `GroupBroken`, a RuntimeError
as gloo's "Connection closed by peer" is, which `common.processes` says in one line. A group that cannot form (worker
0 cannot listen, a worker cannot reach it) raises `GroupBroken` too, naming the address.

`common.processes` imports this module as every command starts, where a Ctrl-C is not yet caught: multiprocessing
is imported only once a group forms.
"""

from __future__ import annotations

import json
import os
import time
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from multiprocessing.connection import Connection

__all__ = ["GROUP_KEY_VARIABLE", "GroupBroken", "SocketGroup", "socket_group", "socket_group_requested"]

# Set by the command in each graph worker's environment (hex): the key that admits a connection to the group.
GROUP_KEY_VARIABLE = "ELMO_EMBED_GROUP_KEY"
# How long a worker tries to reach worker 0, which may still be starting (its interpreter, its imports).
_CONNECT_SECONDS = 120.0
_RETRY_SECONDS = 0.05
# How long worker 0 waits for a connection to show the run's key and say its worker's number: a worker connects once
# it is ready, and answers at once; anything else that connects (a port scan) must not hold the group up.
_HANDSHAKE_SECONDS = 10.0
# Connections that may wait for worker 0's accept: every worker's, which arrive together. (multiprocessing's default,
# 1, makes the kernel drop some of them under load; with SYN cookies their workers then wait forever.)
_MIN_BACKLOG = 64
_MAX_MESSAGE_BYTES = 1 << 20

_joined: SocketGroup | None = None


class GroupBroken(RuntimeError):
    """Another worker of the run stopped (or never came): the group cannot meet again."""


def socket_group_requested() -> bool:
    """Whether this process is a graph worker that `elmo-embed` started, to meet in a `SocketGroup`."""
    return GROUP_KEY_VARIABLE in os.environ


class SocketGroup:
    """This worker's place in the group (`process_index` of `num_processes`; worker 0 is the main one, as in
    accelerate's `PartialState`, whose attributes the run reads) and its connections: worker 0 holds one to each
    other worker, in their order; another worker one to worker 0."""

    device = "cpu"

    def __init__(self, rank: int, count: int, address: tuple[str, int], key: bytes) -> None:
        self.process_index, self.num_processes = rank, count
        self.is_main_process = rank == 0
        self._connections: list[Connection] = []
        if count == 1:
            return
        if self.is_main_process:
            self._connections = _accept_all(address, key, count - 1)
        else:
            self._connections = [_connect(address, key, rank)]

    def exchange(self, value: Any) -> Any:
        """Worker 0's `value`, on every worker, once every worker has called this (the group's one collective
        call). Raises `GroupBroken` where another worker stopped (and leaves the group: worker 0's leaving breaks
        every other's exchange)."""
        try:
            if not self.is_main_process:
                _send(self._connections[0], None)
                return _receive(self._connections[0])
            for connection in self._connections:
                _receive(connection)
            for connection in self._connections:
                _send(connection, value)
            return value
        except (EOFError, OSError) as error:
            self.leave()  # (the workers still waiting on this one hear of it at once)
            raise GroupBroken(f"another worker of this run stopped ({type(error).__name__})") from None

    def leave(self) -> None:
        """Close this worker's connections (the others see it stopped, should they call the group again)."""
        for connection in self._connections:
            connection.close()
        self._connections = []


def socket_group() -> SocketGroup:
    """This process's group, joined on the first call from the environment the command gave it (RANK, WORLD_SIZE,
    MASTER_ADDR, MASTER_PORT and `GROUP_KEY_VARIABLE`)."""
    global _joined
    if _joined is None:
        environment = os.environ
        address = (environment["MASTER_ADDR"], int(environment["MASTER_PORT"]))
        key = bytes.fromhex(environment[GROUP_KEY_VARIABLE])
        _joined = SocketGroup(int(environment["RANK"]), int(environment["WORLD_SIZE"]), address, key)
    return _joined


def _accept_all(address: tuple[str, int], key: bytes, others: int) -> list[Connection]:
    """Worker 0's connections to the `others` workers, in their order (each says its number first). A connection
    without the run's key, that says no worker's number, or says nothing for `_HANDSHAKE_SECONDS`, is dropped:
    another program on this machine can neither join the run nor hold it up."""
    from multiprocessing.connection import Listener

    try:
        listener = Listener(address, backlog=max(others, _MIN_BACKLOG))
    except OSError as error:
        raise GroupBroken(f"worker 0 cannot listen at {address[0]}:{address[1]}: {error.strerror}") from None
    with listener:
        by_rank: dict[int, Connection] = {}
        while len(by_rank) < others:
            try:
                connection = listener.accept()
            except OSError:
                continue
            rank = _admitted(connection, key, others)
            if rank is None or rank in by_rank:
                connection.close()
                continue
            by_rank[rank] = connection
    return [by_rank[rank] for rank in sorted(by_rank)]


def _admitted(connection: Connection, key: bytes, others: int) -> int | None:
    """The number (1 to `others`) of the worker at the other end of the new `connection`, once each side has shown
    the other the run's key (multiprocessing's handshake, as `Listener(authkey=...)` makes it, here under a
    deadline); None for a peer that fails to, or says something else."""
    from multiprocessing import AuthenticationError
    from multiprocessing.connection import answer_challenge, deliver_challenge

    peer = _WithDeadline(connection, _HANDSHAKE_SECONDS)
    try:
        deliver_challenge(peer, key)
        answer_challenge(peer, key)
        rank = _receive(peer)
    except (AuthenticationError, OSError, EOFError, ValueError):  # (a TimeoutError is an OSError)
        return None
    return rank if type(rank) is int and 0 < rank <= others else None


class _WithDeadline:
    """A connection whose receives give up (TimeoutError) once `seconds` have passed since it was made: what
    multiprocessing's handshake and `_receive` read of it. A peer that sends part of a message and stops still holds
    the receive; one that sends nothing (what connects to a port by chance) does not."""

    def __init__(self, connection: Connection, seconds: float) -> None:
        self.connection, self.deadline = connection, time.monotonic() + seconds

    def send_bytes(self, data: bytes) -> None:
        self.connection.send_bytes(data)

    def recv_bytes(self, maxlength: int | None = None) -> bytes:
        if not self.connection.poll(max(0.0, self.deadline - time.monotonic())):
            raise TimeoutError("the peer said nothing")
        return self.connection.recv_bytes(maxlength)


def _connect(address: tuple[str, int], key: bytes, rank: int) -> Connection:
    """A worker's connection to worker 0, which says its number `rank`; retried while worker 0 starts."""
    from multiprocessing import AuthenticationError
    from multiprocessing.connection import Client

    where = f"{address[0]}:{address[1]}"
    deadline = time.monotonic() + _CONNECT_SECONDS
    while True:
        try:
            connection = Client(address, authkey=key)
            _send(connection, rank)
            return connection
        except ConnectionRefusedError:
            if time.monotonic() >= deadline:
                raise GroupBroken(f"worker 0 of this run did not listen at {where}") from None
            time.sleep(_RETRY_SECONDS)
        except AuthenticationError:
            raise GroupBroken(f"what listens at {where} is not worker 0 of this run (it lacks the run's key)") from None
        except (OSError, EOFError) as error:  # (also worker 0 stopped since it admitted this one)
            raise GroupBroken(f"worker 0 of this run at {where} could not be reached: {error}") from None


def _send(connection: Connection, value: Any) -> None:
    connection.send_bytes(json.dumps(value).encode())


def _receive(connection: Connection) -> Any:
    return json.loads(connection.recv_bytes(_MAX_MESSAGE_BYTES))
