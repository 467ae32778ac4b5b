"""`elmo-embed --workers` (`inference/workers.py`): on a CPU the command runs a worker a core of one thread each,
which write the file of one process on one thread, bit for bit, on PyTorch and on a graph; a short input runs in one
process; --workers is refused where it cannot apply; a killed worker, a failing one, a Ctrl-C and a refusal each
end the run in one line, and what a stopped run keeps resumes into the same file. The tests give --workers 2, so that
they do not depend on the machine's cores."""

from __future__ import annotations

import importlib.metadata
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from command_output import messages
from embed_launch import (
    AWKWARD_LINES,
    ELMO_EMBED,
    ENVIRONMENT,
    LAUNCHED_EMBED,
    assert_same_file,
    embed_in_one_process,
    write_input,
)
from embed_launch import embed_in_workers as run_workers
from lock_holder import start_lock_holder

import elmo_transformers.inference.workers as workers
from elmo_transformers.common.errors import EmbedError
from elmo_transformers.inference.embed import main as embed
from elmo_transformers.inference.options import WORKERS_FROM_WORDS, EmbedOptions
from elmo_transformers.serving.graph_layout import FLOAT_GRAPH

LINES = AWKWARD_LINES * 4  # many batches of --batch-size 3
OPTIONS = ["--batch-size", "3", "--max-words", "8"]


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_input(tmp_path_factory.mktemp("inputs"), LINES)


@pytest.fixture(scope="module")
def graph_folder(fixture_model_folder: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The fixture model exported by `elmo-convert onnx` (the [onnx] extra)."""
    pytest.importorskip("onnxruntime")
    from elmo_transformers.conversion.cli import main

    output = tmp_path_factory.mktemp("onnx") / "elmo-fixture-onnx"
    assert main(["onnx", "--model", str(fixture_model_folder), "--output", str(output)]) == 0
    return output


@pytest.mark.parametrize("backend", ["pytorch", "graph"])
@pytest.mark.slow
def test_workers_write_the_file_of_one_process(
    backend: str, source: Path, fixture_model_folder: Path, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    model = fixture_model_folder if backend == "pytorch" else request.getfixturevalue("graph_folder")
    options = [*OPTIONS, "--model", model]
    # One process on one thread (OMP_NUM_THREADS=1, as each worker): the PyTorch products' bits follow the threads.
    embed_in_one_process(source, tmp_path / "one.hdf5", *options, "--workers", "1")
    record = tmp_path / "record"
    record.mkdir()
    ran = run_workers(
        source, tmp_path / "two.hdf5", *options, "--workers", "2", environment={"ELMO_TEST_RECORD": record}
    )
    assert ran.returncode == 0, ran.stderr[-3000:]
    assert_same_file(tmp_path / "one.hdf5", tmp_path / "two.hdf5")
    written = [{int(line) for line in (record / f"{worker}.txt").read_text().split()} for worker in (0, 1)]
    assert written[0] and written[1] and not written[0] & written[1], "each worker wrote lines of its own"
    assert written[0] | written[1] == set(range(len(LINES)))
    assert ran.stdout.count("Wrote ") == 1 and f"{len(LINES):,} lines" in ran.stdout, "the summary is printed once"
    assert not messages(ran.stderr, "elmo-embed: "), ran.stderr


@pytest.mark.parametrize("backend", ["pytorch", "graph"])
@pytest.mark.slow
def test_a_killed_worker_stops_the_run_in_one_line_and_resumes(
    backend: str, source: Path, fixture_model_folder: Path, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    """On a graph the workers meet in a group without torch (`common.socket_group`): the one the killed worker
    left finds it gone there, and leaves it to the command to say."""
    model = fixture_model_folder if backend == "pytorch" else request.getfixturevalue("graph_folder")
    options = [*OPTIONS, "--model", model]
    embed_in_one_process(source, tmp_path / "one.hdf5", *options, "--workers", "1")
    output = tmp_path / "two.hdf5"
    environment = {"ELMO_TEST_SEGMENT_BYTES": "1", "ELMO_TEST_FAIL_PROCESS": "1", "ELMO_TEST_FAIL_HOW": "kill"}
    killed = run_workers(source, output, *options, "--workers", "2", environment=environment)
    assert killed.returncode == 2 and not output.exists()
    partial = Path(f"{output}.partial")
    assert messages(killed.stderr, "elmo-embed: ") == [
        f"elmo-embed: error: worker 1 of 2 (pid {_pid(killed.stderr)}) was killed by SIGKILL: {partial} keeps the"
        " finished lines; rerun with --resume"
    ], killed.stderr
    assert "Traceback" not in killed.stderr and list(partial.glob("lines-*.hdf5"))
    resumed = run_workers(source, output, *options, "--workers", "2", "--resume")
    assert resumed.returncode == 0 and "resumed: " in resumed.stdout, resumed.stderr[-3000:]
    assert_same_file(tmp_path / "one.hdf5", output)


def test_a_worker_killed_by_a_signal_python_does_not_name_is_said_in_one_line(
    source: Path, graph_folder: Path, tmp_path: Path
) -> None:
    """A real-time signal (SIGRTMIN + 6 here) ends a process by default, and has no name in Python's `signal`."""
    output = tmp_path / "two.hdf5"
    number = signal.SIGRTMIN + 6
    environment = {"ELMO_TEST_SEGMENT_BYTES": "1", "ELMO_TEST_FAIL_PROCESS": "1", "ELMO_TEST_FAIL_HOW": "kill"}
    environment["ELMO_TEST_KILL_SIGNAL"] = str(number)
    killed = run_workers(source, output, *OPTIONS, "--model", graph_folder, "--workers", "2", environment=environment)
    assert killed.returncode == 2 and "Traceback" not in killed.stderr, killed.stderr
    assert messages(killed.stderr, "elmo-embed: ") == [
        f"elmo-embed: error: worker 1 of 2 (pid {_pid(killed.stderr)}) was killed by signal {number}:"
        f" {output}.partial keeps the finished lines; rerun with --resume"
    ], killed.stderr


def _pid(stderr: str) -> str:
    return stderr.split("(pid ", 1)[1].split(")", 1)[0]


@pytest.mark.slow
def test_a_failing_worker_stops_the_run_in_its_one_line(
    source: Path, fixture_model_folder: Path, tmp_path: Path
) -> None:
    output = tmp_path / "two.hdf5"
    environment = {"ELMO_TEST_FAIL_PROCESS": "1", "ELMO_TEST_FAIL_HOW": "raise"}
    failed = run_workers(
        source, output, *OPTIONS, "--model", fixture_model_folder, "--workers", "2", environment=environment
    )
    assert failed.returncode == 2 and not output.exists()
    errors = messages(failed.stderr, "elmo-embed: ")
    partial = f"{output}.partial keeps the finished lines"
    assert errors[0] == (
        f"elmo-embed: error: RuntimeError after {len(LINES):,} lines: injected failure in the model; {partial}:"
        " rerun with --resume (with a smaller --batch-size after running out of memory)"
    ), failed.stderr[-3000:]
    # The main worker, which finds the failed one gone, leaves it to say why (tests/inference/test_embed_processes.py:
    # under accelerate launch the main process says that another stopped).
    assert errors[1:] == [], failed.stderr[-3000:]
    assert "Traceback" not in failed.stderr


@pytest.mark.slow
def test_a_ctrl_c_reaches_every_worker_once(source: Path, fixture_model_folder: Path, tmp_path: Path) -> None:
    output = tmp_path / "two.hdf5"
    environment = {"ELMO_TEST_SEGMENT_BYTES": "1", "ELMO_TEST_FAIL_PROCESS": "every", "ELMO_TEST_FAIL_HOW": "stall"}
    command = [sys.executable, LAUNCHED_EMBED, source, output, *OPTIONS, "--model", fixture_model_folder]
    run = subprocess.Popen(
        [*map(str, command), "--workers", "2"],
        env={**ENVIRONMENT, **environment},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    partial = Path(f"{output}.partial")
    deadline = time.monotonic() + 300
    while len(list(partial.glob("lines-*.hdf5"))) < 2 and time.monotonic() < deadline:  # (each worker's first batch)
        time.sleep(0.2)
    run.send_signal(signal.SIGINT)
    _, stderr = run.communicate(timeout=120)
    assert run.returncode == 130
    assert messages(stderr, "elmo-embed: ") == [
        f"elmo-embed: interrupted: {partial} keeps the finished lines; rerun with --resume"
    ], stderr
    assert "Traceback" not in stderr


@pytest.mark.parametrize("after", [0.3, 1.5])
@pytest.mark.slow
def test_a_ctrl_c_while_the_workers_start_is_one_line(
    after: float, source: Path, fixture_model_folder: Path, tmp_path: Path
) -> None:
    """In the command's imports, the workers' (torch, accelerate) or their process group's start: one line."""
    command = [ELMO_EMBED, source, tmp_path / "out.hdf5", "--model", fixture_model_folder, "--workers", "2"]
    run = subprocess.Popen(list(map(str, command)), env=ENVIRONMENT, stderr=subprocess.PIPE, text=True)
    time.sleep(after)
    run.send_signal(signal.SIGINT)
    _, stderr = run.communicate(timeout=120)
    assert run.returncode == 130 and len(messages(stderr, "elmo-embed: ")) == 1, stderr
    assert messages(stderr, "elmo-embed: ")[0].startswith("elmo-embed: interrupted: ") and "Traceback" not in stderr, (
        stderr
    )


@pytest.mark.parametrize("backend", ["pytorch", "graph"])
@pytest.mark.slow
def test_a_refusal_is_printed_once(
    backend: str, source: Path, fixture_model_folder: Path, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    """The main worker's refusal reaches the others through the group (torch's, or the graph workers' own)."""
    model = fixture_model_folder if backend == "pytorch" else request.getfixturevalue("graph_folder")
    output = tmp_path / "two.hdf5"
    holder = start_lock_holder(output)
    try:
        refused = run_workers(source, output, "--model", model, "--workers", "2")
    finally:
        holder.communicate("\n")
    assert refused.returncode == 2 and not output.exists()
    errors = messages(refused.stderr, "elmo-embed: ")
    assert len(errors) == 1 and f"{output} is being written by process {holder.pid}" in errors[0], refused.stderr


def _words_file(path: Path, words: int) -> Path:
    path.write_text("".join("a b c d e f g h i j\n" for _ in range(words // 10)), encoding="utf-8")
    return path


def _with_cores(monkeypatch: pytest.MonkeyPatch, count: int) -> None:
    """This process may run on `count` cores (its CPU affinity, as `workers.cores` reads it)."""
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(count)), raising=False)


def test_a_worker_a_core_from_the_measured_input_size(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    _with_cores(monkeypatch, 3)
    short = _words_file(tmp_path / "short.txt", WORKERS_FROM_WORDS["pytorch"] - 10)
    long = _words_file(tmp_path / "long.txt", WORKERS_FROM_WORDS["pytorch"])
    for device in (None, "cpu"):
        assert workers.plan_workers(EmbedOptions(short, "out.hdf5", device=device)).count == 1, (
            "a short input: one process"
        )
        assert workers.plan_workers(EmbedOptions(long, "out.hdf5", device=device)).count == 3
    assert workers.plan_workers(EmbedOptions(short, "out.hdf5", workers=2)).count == 2, (
        "--workers N, whatever the input"
    )
    assert workers.plan_workers(EmbedOptions(long, "out.hdf5", workers=1)).count == 1
    assert workers.plan_workers(EmbedOptions(tmp_path / "missing.txt", "out.hdf5")).count == 1, "the run refuses it"
    # A graph's one process imports no torch: the workers win from a smaller input (their backend's size).
    graph = tmp_path / "graph"
    graph.mkdir()
    (graph / FLOAT_GRAPH).touch()
    middle = _words_file(tmp_path / "middle.txt", WORKERS_FROM_WORDS["graph"])
    assert workers.plan_workers(EmbedOptions(middle, "out.hdf5", model=str(graph))) == workers.WorkerPlan(3, graph=True)
    assert workers.plan_workers(EmbedOptions(middle, "out.hdf5")) == workers.WorkerPlan(1, graph=False)
    _with_cores(monkeypatch, 1)
    assert workers.plan_workers(EmbedOptions(long, "out.hdf5")).count == 1


def test_a_short_input_runs_in_one_process(
    monkeypatch: pytest.MonkeyPatch, fixture_model_folder: Path, tmp_path: Path
) -> None:
    def no_workers(*args: object, **kwargs: object) -> subprocess.Popen:
        raise AssertionError("workers started")

    _with_cores(monkeypatch, 2)
    monkeypatch.setattr(subprocess, "Popen", no_workers)
    source = _words_file(tmp_path / "in.txt", 100)
    assert embed([str(source), str(tmp_path / "out.hdf5"), "--model", str(fixture_model_folder)]) == 0


@pytest.mark.parametrize("workers_given", [None, 2])
def test_workers_on_a_gpu_or_under_a_launcher(
    workers_given: int | None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """With --device cuda, or under `accelerate launch`, the run is one process: --workers is refused, in one line."""
    long = _words_file(tmp_path / "long.txt", WORKERS_FROM_WORDS["pytorch"])
    _with_cores(monkeypatch, 2)
    on_gpu = EmbedOptions(long, "out.hdf5", device="cuda", workers=workers_given)
    monkeypatch.setenv("LOCAL_RANK", "0")
    launched = EmbedOptions(long, "out.hdf5", workers=workers_given)
    if workers_given is None:
        assert workers.plan_workers(launched).count == 1
        monkeypatch.delenv("LOCAL_RANK")
        assert workers.plan_workers(on_gpu).count == 1
        return
    with pytest.raises(EmbedError, match=r"^--workers 2: under accelerate launch \(or another launcher\) its"):
        workers.plan_workers(launched)
    monkeypatch.delenv("LOCAL_RANK")
    with pytest.raises(EmbedError, match=r"^--workers 2: workers are CPU processes, and this run is on cuda: pass"):
        workers.plan_workers(on_gpu)


@pytest.mark.parametrize("given", ["0", "-1"])
def test_no_workers_is_refused_in_one_line(given: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert embed(["in.txt", "out.hdf5", "--workers", given]) == 2
    assert capsys.readouterr().err == (
        f"elmo-embed: error: --workers must be at least 1, got {given} (1: one process on every core)\n"
    )


def test_a_graph_runs_on_the_threads_a_launcher_gives(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    assert workers.graph_threads() == 1
    monkeypatch.delenv("OMP_NUM_THREADS")
    assert workers.graph_threads() is None


def test_without_torch_only_a_graph_runs_in_workers(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """PyTorch's workers share torch's process group: an install without torch runs a PyTorch model in one process.
    A graph's workers meet without torch (`common.socket_group`), so they run on such an install."""

    def not_installed(name: str) -> str:
        raise importlib.metadata.PackageNotFoundError(name)

    long = _words_file(tmp_path / "long.txt", WORKERS_FROM_WORDS["pytorch"])
    _with_cores(monkeypatch, 2)
    monkeypatch.setattr(importlib.metadata, "version", not_installed)
    assert workers.plan_workers(EmbedOptions(long, "out.hdf5")).count == 1
    with pytest.raises(EmbedError, match=r"^--workers 2: the workers meet in torch's process group, and torch is not"):
        workers.plan_workers(EmbedOptions(long, "out.hdf5", workers=2))
    graph = tmp_path / "graph"
    graph.mkdir()
    (graph / FLOAT_GRAPH).write_bytes(b"")  # (a graph's folder, by its file's name)
    assert workers.plan_workers(EmbedOptions(long, "out.hdf5", model=str(graph))) == workers.WorkerPlan(2, graph=True)
    assert workers.plan_workers(EmbedOptions(long, "out.hdf5", model=str(graph), workers=2)) == workers.WorkerPlan(
        2, graph=True
    )
