"""The group `elmo-embed`'s graph workers meet in without torch (`common/socket_group.py`): every worker gets worker
0's object once all have arrived; a worker that stops breaks the others' next exchange, which `common.processes` says
in one line; a connection without the run's key is turned away. The workers are threads here; across processes,
through `common.processes`, tests/inference/test_embed_workers.py runs the group (a refusal said once, a killed
worker named by the command alone)."""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable
from multiprocessing.connection import Client
from typing import Any

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
