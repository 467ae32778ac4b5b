"""`elmo_transformers.common.processes`: leaving the process group, and Ctrl-C deferred where it cannot be cut."""

from __future__ import annotations

import gc
import os
import signal
import weakref

import pytest

from elmo_transformers.common import processes


class _Cycle:
    """An object only the garbage collector frees (it refers to itself), as the objects of finished collective
    calls that gloo's threads would otherwise free during the group's teardown."""

    def __init__(self) -> None:
        self.itself = self


def test_the_group_is_left_after_its_garbage_is_collected(monkeypatch: pytest.MonkeyPatch) -> None:
    collected_first: list[bool] = []
    monkeypatch.setattr(
        processes.PartialState, "destroy_process_group", lambda self: collected_first.append(alive() is None)
    )
    gc.disable()  # only leave_process_group's collection may free the cycle
    try:
        cycle = _Cycle()
        alive = weakref.ref(cycle)
        del cycle
        processes.leave_process_group()
    finally:
        gc.enable()
    assert collected_first == [True], "the group was destroyed while garbage of its calls was still held"


def test_ctrl_c_is_raised_once_the_block_is_done() -> None:
    done: list[str] = []
    with pytest.raises(KeyboardInterrupt):
        with processes.deferred_interrupts():
            os.kill(os.getpid(), signal.SIGINT)
            done.append("the rest of the block")
    assert done == ["the rest of the block"]
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler, "the previous handler is back"


class _InterruptedWhenCollected(_Cycle):
    """A cycle whose finalizer gets a Ctrl-C, as one of h5py's or gloo's could while the group is left."""

    def __init__(self, finished: list[str]) -> None:
        super().__init__()
        self.finished = finished

    def __del__(self) -> None:
        os.kill(os.getpid(), signal.SIGINT)
        for _ in range(1000):  # bytecodes at which the signal's handler runs, inside the finalizer
            pass
        self.finished.append("the finalizer's end")


def test_ctrl_c_during_the_collection_is_raised_once_the_group_is_left(monkeypatch, capsys) -> None:
    """A Ctrl-C inside the collection, raised there, could only be printed ("Exception ignored in ...") and the
    interrupt was lost; deferred, the collection and the teardown finish and the KeyboardInterrupt comes after."""
    destroyed: list[bool] = []
    monkeypatch.setattr(processes.PartialState, "destroy_process_group", lambda self: destroyed.append(True))
    finished: list[str] = []
    gc.disable()  # only leave_process_group's collection may free the cycle
    try:
        _InterruptedWhenCollected(finished)
        with pytest.raises(KeyboardInterrupt):
            processes.leave_process_group()
    finally:
        gc.enable()
    assert finished == ["the finalizer's end"], "the finalizer was cut by the Ctrl-C"
    assert destroyed == [True], "the group was not left"
    assert "Exception ignored" not in capsys.readouterr().err
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
