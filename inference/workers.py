"""`elmo-embed`'s worker processes on a CPU: one a core, of one thread each, started by the command itself as
`accelerate launch` starts its processes, so that the run is that of `accelerate launch` on CPU processes: every
worker forms the batches of one process, embeds its share of them (`sharding`), and the main one merges the file of
one process. Workers on PyTorch meet in torch's process group (gloo); workers on a graph in one without torch
(`common.socket_group`), so that they import neither torch nor accelerate, and run where torch is not installed.

Workers of one thread embed faster than one process on every core (1.1-1.6x on 2 cores): the biLSTM's steps are
short products, which threads share out poorly. A single-threaded PyTorch product gives the same bits in every
worker, so that the file is that of one process on one thread (`OMP_NUM_THREADS=1`), bit for bit; onnxruntime's
products do not depend on its threads. A short input runs in one process: a worker's start-up (its interpreter,
its imports, the model, the process group) costs more than the workers save there (measured:
`options.WORKERS_FROM_WORDS`).

The command (`plan_workers`, then `run_workers`) starts the workers, waits for them, and forwards a Ctrl-C
(SIGINT), SIGTERM and SIGHUP to each. The workers run in process groups of their own, so that a Ctrl-C in the
terminal reaches them once, through the command. Each worker reports as under `accelerate launch`: the main one
the summary and the errors that every worker meets alike, any worker a failure of its own part; the command stops
the others a moment later (they die of SIGTERM, in silence). A worker killed by a signal cannot say so: the command
says it, in one line, with what is kept for `--resume`.
"""

from __future__ import annotations

import importlib.metadata
import math
import os
import secrets
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from typing import NamedTuple

from elmo_transformers.common.errors import EmbedError, report_error, report_interruption
from elmo_transformers.common.processes import WORKER_VARIABLE, interrupts_held, launched
from elmo_transformers.common.socket_group import GROUP_KEY_VARIABLE

from .options import WORKERS_FROM_WORDS, EmbedOptions

__all__ = ["WorkerPlan", "cores", "graph_threads", "plan_workers", "run_workers"]

# How long the others may take to end on their own once a worker failed (the main one printing the refusal that
# every worker raised alike) before they are stopped.
_STOP_AFTER_SECONDS = 3.0
_POLL_SECONDS = 0.05
_FORWARDED_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def cores() -> int:
    """The cores this process may run on (its CPU affinity, which a job scheduler or `taskset` narrows)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def graph_threads() -> int | None:
    """The threads of an ONNX graph's products: `OMP_NUM_THREADS` (as torch's), where a launcher or the user set it
    (each worker: 1), else onnxruntime's choice (None)."""
    threads = os.environ.get("OMP_NUM_THREADS", "")
    return int(threads) if threads.isdigit() and int(threads) > 0 else None


class WorkerPlan(NamedTuple):
    """How a run goes: in `count` worker processes (1: this process runs alone), on a graph (`graph`: the model is
    a folder holding one) or on PyTorch."""

    count: int
    graph: bool


def plan_workers(options: EmbedOptions) -> WorkerPlan:
    """How many worker processes run `options`: --workers, or by default a worker a core for an input of at least
    `WORKERS_FROM_WORDS` words (its backend's). 1 (this process runs alone) in a worker, under a launcher, on a GPU,
    or without torch for a PyTorch model (whose process group the workers share), where --workers N is refused in
    one line."""
    graph = _runs_a_graph(options)
    requested = options.workers
    if requested == 1 or WORKER_VARIABLE in os.environ:
        return WorkerPlan(1, graph)
    refusal = _one_process_only(options, graph=graph)
    if refusal is not None:
        if requested is not None:
            raise EmbedError(f"--workers {requested}: {refusal}")
        return WorkerPlan(1, graph)
    if requested is None:
        return WorkerPlan(cores() if cores() > 1 and _long_input(options, graph=graph) else 1, graph)
    return WorkerPlan(requested, graph)


def _one_process_only(options: EmbedOptions, *, graph: bool) -> str | None:
    """Why the run is one process whatever --workers says (with the way on), or None."""
    if launched():
        return "under accelerate launch (or another launcher) its processes are the workers: drop --workers"
    try:
        cpu_build = importlib.metadata.version("torch").endswith("+cpu")
    except importlib.metadata.PackageNotFoundError:
        if not graph:  # (a graph's workers meet without torch: `common.socket_group`)
            return "the workers meet in torch's process group, and torch is not installed: pip install torch"
        cpu_build = True  # (without torch, the CPU alone)
    if _on_an_accelerator(options, cpu_only=cpu_build or graph):
        device = options.device or "cuda (the GPU found, the default device)"
        return (
            f"workers are CPU processes, and this run is on {device}: pass --device cpu with --workers, or drop"
            " --workers (accelerate launch runs a process a GPU)"
        )
    return None


def _on_an_accelerator(options: EmbedOptions, *, cpu_only: bool) -> bool:
    """Whether the run goes to a GPU (or another accelerator): --device says so, or by default torch finds one,
    unless the run is on the CPU alone (`cpu_only`: a graph's is, and a CPU build of torch has none, which its
    version tells without importing torch, in no time); another build is asked."""
    if options.device is not None:
        return options.device.split(":")[0] != "cpu"
    if cpu_only:
        return False
    import torch

    return torch.accelerator.is_available()


def _long_input(options: EmbedOptions, *, graph: bool) -> bool:
    """Whether the input holds at least its backend's `WORKERS_FROM_WORDS` whitespace-separated words, read until
    it does, by the measure of the run's backend (a `graph`'s or PyTorch's). An input that the run refuses holds
    none: the one process refuses it."""
    from .lines import check_input, read_lines

    words = 0
    try:
        check_input(options.input)
        for line in read_lines(options.input):
            words += len(line.text.split())
            if words >= max(WORKERS_FROM_WORDS.values()):
                break
    except (EmbedError, OSError):
        return False
    if words < min(WORKERS_FROM_WORDS.values()):
        return False
    return words >= WORKERS_FROM_WORDS["graph" if graph else "pytorch"]


def _runs_a_graph(options: EmbedOptions) -> bool:
    """Whether the run's model is a folder holding an exported graph (the default model is a PyTorch one)."""
    from elmo_transformers.serving.graph_layout import holds_graph  # (a light module: no h5py, no model package)

    return options.model is not None and holds_graph(options.model)


def run_workers(plan: WorkerPlan, argv: Sequence[str], kept: Callable[[], str]) -> int:
    """Run the `plan`'s workers of `elmo-embed ARGV` and wait for them; the run's exit status. `kept` says what a
    stopped run keeps (for the line that names a killed worker). Workers on a graph meet in a group without torch
    (`common.socket_group`), the others in torch's (gloo, through accelerate)."""
    workers = _Workers(plan.count, argv, kept, graph=plan.graph)
    forwarding = threading.current_thread() is threading.main_thread()  # (signals are caught there only)
    previous = {number: signal.signal(number, workers.forward) for number in _FORWARDED_SIGNALS if forwarding}
    try:
        return workers.run()
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)


class _Workers:
    """The worker processes of one run, started (`run`) with the environment `accelerate launch` gives its
    processes, and watched until every one has ended."""

    def __init__(self, count: int, argv: Sequence[str], kept: Callable[[], str], *, graph: bool) -> None:
        self.count, self.command, self.kept = count, _worker_command(argv), kept
        # The group's key, where the workers meet without torch (a graph's run): drawn afresh for each run.
        self.group_key = secrets.token_hex(32) if graph else None
        self.processes: list[subprocess.Popen] = []
        self.forwarded: list[int] = []  # the signals passed on to every worker
        self.failed: subprocess.Popen | None = None  # the first worker seen failing
        self.killed = False  # by a signal that neither the user nor this command sent it
        self.stopped = False  # the workers were stopped (SIGTERM) once one had failed

    def forward(self, number: int, frame: object) -> None:
        """Pass the signal `number` on to every running worker."""
        self.forwarded.append(number)
        self._signal_running(number)

    def run(self) -> int:
        port = _free_port()
        try:
            for rank in range(self.count):
                if self.forwarded:  # (interrupted while starting them: those started have the signal)
                    break
                environment = _worker_environment(rank, self.count, port, self.group_key)
                with interrupts_held():  # (the worker lets a Ctrl-C in once it can say it in its one line)
                    self.processes.append(subprocess.Popen(self.command, env=environment, process_group=0))
        except OSError as error:
            self._signal_running(signal.SIGTERM)
            return report_error("elmo-embed", EmbedError(f"cannot start {self.count} worker processes: {error}"))
        if not self.processes:
            return report_interruption("elmo-embed", self.kept())
        try:
            self._watch()
        except BaseException:  # (this command's own failure: the workers do not outlive it)
            self._stop()
            raise
        return self._status()

    def _watch(self) -> None:
        """Wait for every worker; once one has failed, stop the others: at once if it was killed, a moment later
        if it exited (the main worker may be printing the error that every worker raised alike)."""
        stop_at = math.inf
        while True:
            running = [process for process in self.processes if process.poll() is None]
            if self.failed is None:
                # A killed worker first: the others it left exit 2 in silence (`embed._run`), and it is the one to name.
                failed = sorted((process for process in self.processes if process.returncode), key=_killed_first)
                self.failed = failed[0] if failed else None
                if self.failed is not None:
                    self.killed = self.failed.returncode < 0 and not self.forwarded
                    stop_at = time.monotonic() + (0.0 if self.killed else _STOP_AFTER_SECONDS)
            if not running:
                return
            if not self.stopped and time.monotonic() >= stop_at:
                self._stop()
            time.sleep(_POLL_SECONDS)

    def _stop(self) -> None:
        self._signal_running(signal.SIGTERM)
        self.stopped = True

    def _signal_running(self, number: int) -> None:
        for process in self.processes:
            if process.poll() is None:
                process.send_signal(number)

    def _status(self) -> int:
        """The run's exit status once every worker has ended: on a signal passed on, the main worker's (130 where it
        printed the interruption); else the first failure's, said in one line where a signal killed the worker."""
        if self.forwarded:
            status = self.processes[0].returncode
            if status < 0 and self.forwarded[0] == signal.SIGINT:
                # Its Ctrl-C came before Python caught it, or where it is not seen (a wait in C++, for the process
                # group of a worker that the Ctrl-C ended): it could not say so, and was stopped.
                return report_interruption("elmo-embed", self.kept())
            return 128 - status if status < 0 else status
        if self.failed is None:
            return 0
        if not self.killed:
            return self.failed.returncode
        name = _signal_name(-self.failed.returncode)
        rank = self.processes.index(self.failed)
        message = f"worker {rank} of {self.count} (pid {self.failed.pid}) was killed by {name}: {self.kept()}"
        return report_error("elmo-embed", EmbedError(message))


def _signal_name(number: int) -> str:
    """The name of the signal `number` (SIGKILL), or "signal N" for one Python does not name (a real-time one)."""
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def _killed_first(process: subprocess.Popen) -> bool:
    """The sort key that puts a process a signal ended (a negative exit status) before one that exited."""
    return process.returncode > 0


def _worker_command(argv: Sequence[str]) -> list[str]:
    """The command line of each worker: this process's own (its interpreter's options and script included) where
    it runs `argv` from its command line, else `python -m elmo_transformers.inference.embed ARGV`."""
    argv = list(argv)
    if argv == sys.argv[1:] and sys.orig_argv[len(sys.orig_argv) - len(argv) :] == argv:
        return [sys.executable, *sys.orig_argv[1:]]
    return [sys.executable, "-m", "elmo_transformers.inference.embed", *argv]


def _worker_environment(rank: int, count: int, port: int, group_key: str | None) -> dict[str, str]:
    """The environment of worker `rank` of `count`: what `accelerate launch` (torchrun) gives each process on one
    machine, whose group meets at `port` (a `socket_group` admitted by `group_key` where one is given), and one
    thread for torch (OpenMP, MKL) and the graph (`graph_threads`)."""
    group = {"RANK": rank, "LOCAL_RANK": rank, "WORLD_SIZE": count, "LOCAL_WORLD_SIZE": count, "MASTER_PORT": port}
    group |= {WORKER_VARIABLE: rank, "MASTER_ADDR": "127.0.0.1", "OMP_NUM_THREADS": 1, "MKL_NUM_THREADS": 1}
    if group_key is not None:
        group[GROUP_KEY_VARIABLE] = group_key
    return {**os.environ, **{name: str(value) for name, value in group.items()}}


def _free_port() -> int:
    """A TCP port of this machine that no process listens on now (the main worker's process group binds it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]
