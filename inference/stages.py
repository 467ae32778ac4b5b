"""Three stages over a stream of work, in order: produce the items, step each one, finish each result.

`elmo-embed` reads and tokenizes (produce), runs the model (step) and writes the hdf5 file (finish). On a GPU
the three can overlap: a thread produces the next batches while the main thread queues the model's work on the
device, and another thread waits for the vectors and writes them. Small bounded queues between the stages keep
the memory flat; the finishing thread alone does what must happen once per item in order (the file's writes).
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, TypeVar

__all__ = ["run_stages"]

Item = TypeVar("Item")
Result = TypeVar("Result")

# Items waiting between two stages: enough to cover the jitter of one stage, few enough to keep memory flat.
QUEUE_DEPTH = 4
# How often (seconds) a thread blocked on a queue looks whether it should give up.
_POLL = 0.05
_END = object()


@dataclass
class _Failure:
    """An exception raised by the producing thread, passed on in its place in the stream."""

    error: BaseException


def run_stages(
    items: Iterable[Item],
    step: Callable[[Item], Result],
    finish: Callable[[Result], None],
    *,
    overlap: bool,
    depth: int = QUEUE_DEPTH,
) -> None:
    """`finish(step(item))` for every item of `items`, in order.

    With `overlap`, `items` is iterated in a thread of its own and `finish` is called in another, while `step`
    runs in the calling thread (where Ctrl-C arrives). Whatever happens, every item stepped before the first
    exception is finished (as it would be without `overlap`), then that exception is raised here, after both
    threads have ended. An interruption while waiting for those items stops after the item being finished.
    """
    if not overlap:
        for item in items:
            finish(step(item))
        return
    producer = _Producer(items, depth)
    finisher = _Finisher(finish, depth)
    producer.start()
    finisher.start()
    try:
        for item in producer:
            finisher.put(step(item))
    finally:
        producer.stop()
        finisher.close()
    finisher.raise_failure()


class _Producer(threading.Thread):
    """Iterates `items` ahead of the consumer, up to `depth` items; iterating it gives them (or their exception)."""

    def __init__(self, items: Iterable[Any], depth: int) -> None:
        super().__init__(name="elmo-embed-read", daemon=True)
        self._items = items
        self._queue: queue.Queue = queue.Queue(depth)
        self._stopped = threading.Event()

    def run(self) -> None:
        try:
            for item in self._items:
                if not self._put(item):
                    return
        except BaseException as error:  # handed to the consumer, which raises it
            self._put(_Failure(error))
            return
        self._put(_END)

    def _put(self, item: Any) -> bool:
        while not self._stopped.is_set():
            try:
                self._queue.put(item, timeout=_POLL)
                return True
            except queue.Full:
                continue
        return False

    def __iter__(self) -> Any:
        while (item := self._queue.get()) is not _END:
            if isinstance(item, _Failure):
                raise item.error
            yield item

    def stop(self) -> None:
        """Stop reading ahead (a no-op once the items are all read) and wait for the thread to end."""
        self._stopped.set()
        self.join()


class _Finisher(threading.Thread):
    """Calls `finish` on each item put, in order, in a thread of its own; stops at its first exception."""

    def __init__(self, finish: Callable[[Any], None], depth: int) -> None:
        super().__init__(name="elmo-embed-write", daemon=True)
        self._finish = finish
        self._queue: queue.Queue = queue.Queue(depth)
        self._failed = threading.Event()
        self._abandoned = threading.Event()
        self._error: BaseException | None = None

    def run(self) -> None:
        while not self._abandoned.is_set():
            try:
                item = self._queue.get(timeout=_POLL)
            except queue.Empty:
                continue
            if item is _END:
                return
            try:
                self._finish(item)
            except BaseException as error:  # raised again in the calling thread
                self._error = error
                self._failed.set()
                return

    def put(self, item: Any) -> None:
        """Queue `item`; raises the exception of `finish` once it has failed."""
        while not self._failed.is_set():
            try:
                self._queue.put(item, timeout=_POLL)
                return
            except queue.Full:
                continue
        self.raise_failure()

    def close(self) -> None:
        """Wait until every item put is finished (or `finish` has failed). Interrupted while waiting, stop after
        the item being finished."""
        try:
            while not self._failed.is_set():
                try:
                    self._queue.put(_END, timeout=_POLL)
                    break
                except queue.Full:
                    continue
            self.join()
        except BaseException:
            self._abandoned.set()
            self.join()
            raise

    def raise_failure(self) -> None:
        """Raise the exception of `finish`, if it failed."""
        if self._error is not None:
            raise self._error
