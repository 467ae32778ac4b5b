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
    from accelerate import PartialState

    collected_first: list[bool] = []
    monkeypatch.setattr(processes, "launched", lambda: True)  # (a process of `accelerate launch`)
    monkeypatch.setattr(PartialState, "destroy_process_group", lambda self: collected_first.append(alive() is None))
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
    from accelerate import PartialState

    destroyed: list[bool] = []
    monkeypatch.setattr(processes, "launched", lambda: True)  # (a process of `accelerate launch`)
    monkeypatch.setattr(PartialState, "destroy_process_group", lambda self: destroyed.append(True))
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


@pytest.mark.parametrize(
    ("environment", "expected"),
    [
        ({}, False),
        ({"WORLD_SIZE": "1", "RANK": "0"}, False),
        ({"LOCAL_RANK": "0"}, True),  # torchrun's and accelerate launch's
        ({"WORLD_SIZE": "2"}, True),
        ({"PMI_SIZE": "1", "WORLD_SIZE": "4"}, False),  # the first world size set counts, as accelerate reads them
        ({"OMPI_COMM_WORLD_SIZE": "3"}, True),  # MPI's
    ],
)
def test_a_launched_process_is_told_from_the_environment_as_accelerate_tells_it(
    monkeypatch: pytest.MonkeyPatch, environment: dict[str, str], expected: bool
) -> None:
    """A run of one process (elmo-embed on a graph) imports neither accelerate nor torch: whether a launcher started
    it is read from the environment, as accelerate's `PartialState` reads it."""
    for name in ("LOCAL_RANK", "RANK", "WORLD_SIZE", "PMI_SIZE", "OMPI_COMM_WORLD_SIZE", "MV2_COMM_WORLD_SIZE"):
        monkeypatch.delenv(name, raising=False)
    for name, value in environment.items():
        monkeypatch.setenv(name, value)
    assert processes.launched() is expected
    if not expected:  # then the run's one process is the main one, and nothing is sent
        assert processes.is_main_process()
        assert processes.on_main_process(lambda: None, error=processes.ElmoError) is None
