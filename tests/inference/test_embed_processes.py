"""`elmo-embed` under `accelerate launch` (2 CPU processes over gloo): the batches of one process shared out, the
file of one process bit for bit, a killed process resumed by any number of processes, a failure in one process
that stops all of them in its one line, and the refusals of a run printed once."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest
from command_output import messages
from embed_launch import AWKWARD_LINES, assert_same_file, embed_in_one_process, launch_embed
from lock_holder import start_lock_holder

from elmo_transformers.common.errors import EmbedError
from elmo_transformers.inference.batching import Piece, batch_groups
from elmo_transformers.inference.request import process_device

LINES = AWKWARD_LINES * 4  # many batches of --batch-size 3
OPTIONS = ["--batch-size", "3", "--max-words", "8"]


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("inputs")
    text = "".join(line + "\n" for line in LINES)
    (folder / "in.txt").write_text(text, encoding="utf-8")
    (folder / "in.txt.gz").write_bytes(gzip.compress(text.encode()))
    return {"text": folder / "in.txt", "gzip": folder / "in.txt.gz"}


@pytest.mark.parametrize("kind", ["text", "gzip --tokenize"])
@pytest.mark.slow
def test_two_processes_write_the_file_of_one(
    kind: str, inputs: dict[str, Path], fixture_model_folder: Path, tmp_path: Path
) -> None:
    source = inputs[kind.split()[0]]
    options = [*OPTIONS, "--model", fixture_model_folder, *kind.split()[1:]]
    embed_in_one_process(source, tmp_path / "one.hdf5", *options)
    record = tmp_path / "record"
    record.mkdir()
    launched = launch_embed(source, tmp_path / "two.hdf5", *options, environment={"ELMO_TEST_RECORD": str(record)})
    assert launched.returncode == 0, launched.stderr[-3000:]
    assert_same_file(tmp_path / "one.hdf5", tmp_path / "two.hdf5")
    written = [[int(line) for line in (record / f"{process}.txt").read_text().split()] for process in (0, 1)]
    assert written[0] and written[1], "both processes embedded lines"
    assert not set(written[0]) & set(written[1]), "each line is written by one process, its pieces included"
    assert set(written[0]) | set(written[1]) == set(range(len(LINES)))
    assert launched.stdout.count("Wrote ") == 1, "the summary is printed once, by the main process"
    assert f"{len(LINES):,} lines" in launched.stdout


@pytest.mark.parametrize("resumed_by", [2, 1], ids=["resumed-by-2", "resumed-by-1"])
@pytest.mark.slow
def test_a_killed_process_is_resumed_into_the_same_file(
    resumed_by: int, inputs: dict[str, Path], fixture_model_folder: Path, tmp_path: Path
) -> None:
    source, options = inputs["text"], [*OPTIONS, "--model", fixture_model_folder]
    embed_in_one_process(source, tmp_path / "one.hdf5", *options)
    output = tmp_path / "two.hdf5"
    environment = {"ELMO_TEST_SEGMENT_BYTES": "1", "ELMO_TEST_FAIL_PROCESS": "1", "ELMO_TEST_FAIL_HOW": "kill"}
    killed = launch_embed(source, output, *options, environment=environment)
    assert killed.returncode != 0 and not output.exists()
    assert list(Path(f"{output}.partial").glob("lines-*.hdf5")), "the killed process's first batch is stored"
    if resumed_by == 2:
        resumed = launch_embed(source, output, *options, "--resume")
        assert resumed.returncode == 0, resumed.stderr[-3000:]
        assert "resumed: " in resumed.stdout
    else:
        assert "resumed: " in embed_in_one_process(source, output, *options, "--resume").stdout
    assert_same_file(tmp_path / "one.hdf5", output)
    assert not Path(f"{output}.partial").exists()


@pytest.mark.parametrize("how", ["raise", "refuse"])
@pytest.mark.slow
def test_a_failure_in_one_process_stops_all_in_its_one_line(
    how: str, inputs: dict[str, Path], fixture_model_folder: Path, tmp_path: Path
) -> None:
    output = tmp_path / "two.hdf5"
    environment = {"ELMO_TEST_FAIL_PROCESS": "1", "ELMO_TEST_FAIL_HOW": how}
    failed = launch_embed(inputs["text"], output, *OPTIONS, "--model", fixture_model_folder, environment=environment)
    assert failed.returncode != 0 and not output.exists(), "no merged file"
    errors = messages(failed.stderr, "elmo-embed: error: ")
    partial = f"{output}.partial keeps the finished lines"
    # A failure of the process's computation (out of memory, ...), or a refusal of its lines (an EmbedError, which
    # every process raising alike would leave to the main one): either way the failed process prints it.
    expected = (
        f"elmo-embed: error: RuntimeError after {len(LINES):,} lines: injected failure in the model; {partial}:"
        " rerun with --resume (with a smaller --batch-size after running out of memory)"
        if how == "raise"
        else "elmo-embed: error: injected failure in the model"
    )
    assert errors[:1] == [expected], failed.stderr[-3000:]
    # The main process, waiting for the failed one, says why it stops, unless the launcher stopped it first.
    assert errors[1:] in (
        [],
        [
            f"elmo-embed: error: another process of this run stopped (its error is above): {partial};"
            " rerun with --resume"
        ],
    ), failed.stderr[-3000:]
    # The only traceback is the launcher's report of the failed process.
    assert failed.stderr.count("Traceback (most recent call last)") == failed.stderr.count("ChildFailedError("), (
        failed.stderr[-3000:]
    )


@pytest.mark.slow
def test_a_refusal_is_printed_once(inputs: dict[str, Path], fixture_model_folder: Path, tmp_path: Path) -> None:
    output = tmp_path / "two.hdf5"
    holder = start_lock_holder(output)
    try:
        refused = launch_embed(inputs["text"], output, "--model", fixture_model_folder)
    finally:
        holder.communicate("\n")
    assert refused.returncode != 0 and not output.exists()
    errors = messages(refused.stderr, "elmo-embed: error: ")
    assert len(errors) == 1 and f"{output} is being written by process {holder.pid}" in errors[0], refused.stderr


def test_batches_that_share_a_line_are_one_group() -> None:
    def batch(*lines: int) -> list[Piece]:
        return [Piece(line, 0, ["w"]) for line in lines]

    # Batch 3 shares line 7 with batch 1, batch 4 shares line 9 with batch 3 (so with 1), batch 2 is alone.
    batches = [batch(1, 2), batch(7, 8), batch(3), batch(7, 9), batch(9, 4), batch(5)]
    assert batch_groups(batches) == [0, 1, 2, 1, 1, 5]
    # Batch 2 joins the groups of batches 0 and 1, batch 4 those of 3 and of 0 (through 2): each group is whole.
    assert batch_groups([batch(1), batch(2), batch(1, 2), batch(3), batch(3, 2), batch(6)]) == [0, 0, 0, 0, 0, 5]
    assert batch_groups([]) == []


class _Processes:
    def __init__(self, count: int, device: str) -> None:
        self.num_processes, self.device = count, device


def test_each_process_uses_a_device_of_its_own() -> None:
    assert (
        process_device(None, _Processes(1, "cpu")) is None
        and process_device("cuda:1", _Processes(1, "cpu")) == "cuda:1"
    )
    assert process_device(None, _Processes(2, "cuda:1")) == "cuda:1" == process_device("cuda", _Processes(2, "cuda:1"))
    assert process_device("cpu", _Processes(2, "cuda:1")) == "cpu"
    with pytest.raises(EmbedError, match=r"^--device cuda:0: with 2 processes each uses a device of its own"):
        process_device("cuda:0", _Processes(2, "cuda:1"))
