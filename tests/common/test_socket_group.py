"""The group `elmo-embed`'s graph workers meet in without torch (`common/socket_group.py`): every worker gets worker
0's object once all have arrived; a worker that stops breaks the others' next exchange, which `common.processes` says
in one line; a connection without the run's key is turned away. The workers are threads here; across processes,
through `common.processes`, tests/inference/test_embed_workers.py runs the group (a refusal said once, a killed
worker named by the command alone)."""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Callable
from multiprocessing import AuthenticationError
from multiprocessing.connection import Client, Listener
from typing import Any

import pytest

from elmo_transformers.common.socket_group import GroupBroken, SocketGroup

KEY = b"k" * 32


def _free_address() -> tuple[str, int]:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()


def _in_workers(count: int, work: Callable[[SocketGroup], Any], address: tuple[str, int]) -> list[Any]:
    """What `work` returned (or raised) in each of `count` workers (threads), by worker number."""
    results: list[Any] = [None] * count

    def worker(rank: int) -> None:
        try:
            results[rank] = work(SocketGroup(rank, count, address, KEY))
        except Exception as error:  # (compared by the test)
            results[rank] = error

    threads = [threading.Thread(target=worker, args=(rank,)) for rank in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert not any(thread.is_alive() for thread in threads), "a worker hangs"
    return results


def test_every_worker_gets_worker_0s_object_each_time() -> None:
    def work(group: SocketGroup) -> list[Any]:
        got = [group.exchange([f"from {group.process_index}", None]) for _ in range(3)]
        got.append(group.exchange(None))  # (a barrier)
        group.leave()
        return got

    results = _in_workers(3, work, _free_address())
    assert results == [[["from 0", None]] * 3 + [None]] * 3


def test_a_worker_that_stops_breaks_the_others_exchange() -> None:
    def work(group: SocketGroup) -> Any:
        group.exchange(None)
        if group.process_index == 2:
            group.leave()  # (as a process that ended closes its connection)
            return "left"
        return group.exchange("again")

    results = _in_workers(3, work, _free_address())
    assert results[2] == "left"
    assert all(isinstance(result, GroupBroken) for result in results[:2]), results


def test_a_connection_without_the_runs_key_is_turned_away() -> None:
    address = _free_address()

    def stranger() -> None:
        for _ in range(200):
            try:
                Client(address, authkey=b"wrong" * 8)
            except ConnectionRefusedError:
                threading.Event().wait(0.02)  # (worker 0 is not listening yet)
            except Exception:  # turned away: the test is that the group still meets
                return

    intruder = threading.Thread(target=stranger)
    intruder.start()
    results = _in_workers(2, lambda group: group.exchange(group.process_index), address)
    intruder.join(timeout=30)
    assert results == [0, 0]


def test_many_workers_arriving_together_meet() -> None:
    """Every worker connects at once as worker 0 starts to listen: the connections waiting for its accept must all
    be kept (multiprocessing's backlog of 1 lost some, whose workers then waited forever)."""
    count = 24
    results = _in_workers(count, lambda group: group.exchange(group.process_index), _free_address())
    assert results == [0] * count


def test_a_connection_that_says_nothing_does_not_hold_the_group_up() -> None:
    """Something that connects to worker 0's port before worker 1 and stays silent (a port scan) is dropped after
    `_HANDSHAKE_SECONDS` (10): the group meets then."""
    address = _free_address()
    met: list[Any] = []
    first = threading.Thread(target=lambda: met.append(SocketGroup(0, 2, address, KEY).exchange("met")))
    first.start()
    for _ in range(500):
        try:
            silent = socket.create_connection(address)
            break
        except ConnectionRefusedError:
            threading.Event().wait(0.01)  # (worker 0 is not listening yet)
    with silent:
        second = SocketGroup(1, 2, address, KEY)  # (its connection waits behind the silent one)
        assert second.exchange(None) == "met"
    first.join(timeout=30)
    assert met == ["met"]


def test_a_group_that_cannot_form_says_where() -> None:
    address = _free_address()
    with socket.socket() as taken:
        taken.bind(address)
        taken.listen()
        with pytest.raises(GroupBroken, match=rf"^worker 0 cannot listen at 127\.0\.0\.1:{address[1]}: "):
            SocketGroup(0, 2, address, KEY)
    with Listener(address, authkey=b"another run" * 3) as another:

        def turn_away() -> None:
            with contextlib.suppress(AuthenticationError):
                another.accept()

        accepting = threading.Thread(target=turn_away)
        accepting.start()
        with pytest.raises(GroupBroken, match=rf"^what listens at 127\.0\.0\.1:{address[1]} is not worker 0 of"):
            SocketGroup(1, 2, address, KEY)
        accepting.join(timeout=30)
