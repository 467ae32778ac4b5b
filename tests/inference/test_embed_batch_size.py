"""What the vectors owe to `--batch-size`: a batch's shape picks the native kernels (oneDNN's convolutions and
products, whose blocking follows the shape), so a sentence's vectors in batches of another size differ in their
last bits (measured at one thread: up to 4.8e-7 on the test model, on 6 of 22 lines; 1, 7 and 64 gave equal bits
at two threads), never more than that rounding. The same batch size gives the same bits, resumed or not. So
`settings.json` does not record the batch size: a run that ran out of memory resumes with a smaller one, as its
error says, into a file within that rounding of the uninterrupted one; with the same --batch-size it is the
uninterrupted file, bit for bit.

The runs go in a fresh process, as the command runs: MKL reads its setting (`MKL_CBWR=AUTO,STRICT`) when its first
kernel runs, which in this test process (the fixtures compute) is long past, and without it a product's bits
depend on where the allocator put its operands, whatever the batch size."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import h5py
import numpy as np
import pytest
from embed_launch import AWKWARD_LINES, ENVIRONMENT

# How far another batch size moves a vector of the test model: a few float32 ulps of its values (up to about 7).
ROUNDING = 2e-6
# Mixed lengths in one window: empty lines, one word, lines over --max-words 8 (embedded in pieces), a long word.
LINES = [*AWKWARD_LINES, *reversed(AWKWARD_LINES), "z " * 19, "q"]

# Runs elmo-embed once per argument (a JSON list of command lines) in this one process; "interrupt at N" makes
# the next run's N-th batch a Ctrl-C.
_RUNS = """
import json, sys
from elmo_transformers.inference.embed import main
from elmo_transformers.inference.torch_runner import TorchEmbedder

run = TorchEmbedder.run
for argv in json.loads(sys.argv[1]):
    if argv[0] == "interrupt at":
        calls = []

        def interrupted(self, prepared, stop=int(argv[1])):
            calls.append(1)
            if len(calls) == stop:
                raise KeyboardInterrupt
            return run(self, prepared)

        TorchEmbedder.run = interrupted
        continue
    print("exit status", main(argv), flush=True)
    TorchEmbedder.run = run
"""


def _embed_in_a_fresh_process(*runs: list[str | Path]) -> list[int]:
    """The exit status of each run of elmo-embed (its arguments) in one new process, one after the other."""
    argv = json.dumps([[str(argument) for argument in run] for run in runs])
    completed = subprocess.run(
        [sys.executable, "-c", _RUNS, argv], capture_output=True, text=True, env=ENVIRONMENT, check=False
    )
    assert completed.returncode == 0, completed.stderr
    return [int(line.split()[-1]) for line in completed.stdout.splitlines() if line.startswith("exit status ")]


def _vectors(path: Path) -> dict[str, np.ndarray]:
    with h5py.File(path, "r") as file:
        return {name: file[name][()] for name in file if name.isdigit()}


def _assert_same_bits(left: dict[str, np.ndarray], right: dict[str, np.ndarray], what: str) -> None:
    assert sorted(left) == sorted(right), what
    for name in left:
        assert left[name].dtype == right[name].dtype and np.array_equal(left[name], right[name]), f"{what}: line {name}"


def _assert_within_rounding(left: dict[str, np.ndarray], right: dict[str, np.ndarray], what: str) -> None:
    assert sorted(left) == sorted(right), what
    for name in left:
        np.testing.assert_allclose(left[name], right[name], rtol=0, atol=ROUNDING, err_msg=f"{what}: line {name}")


def _source(tmp_path: Path) -> Path:
    source = tmp_path / "in.txt"
    source.write_text("".join(line + "\n" for line in LINES), encoding="utf-8")
    return source


@pytest.mark.parametrize("flags", [[], ["--tokenize", "--layers", "top"]], ids=["all layers", "tokenized, top"])
def test_the_batch_size_changes_the_vectors_by_rounding_at_most(
    flags: list[str], fixture_model_folder: Path, tmp_path: Path
) -> None:
    source, sizes = _source(tmp_path), (1, 1, 7, 64)
    model = ["--model", fixture_model_folder, "--max-words", "8", *flags]
    runs = [[source, tmp_path / f"{run}.hdf5", *model, "--batch-size", size] for run, size in enumerate(sizes)]
    assert _embed_in_a_fresh_process(*runs) == [0, 0, 0, 0]
    vectors = [_vectors(tmp_path / f"{run}.hdf5") for run in range(len(sizes))]
    _assert_same_bits(vectors[0], vectors[1], "--batch-size 1, twice")
    _assert_within_rounding(vectors[0], vectors[2], "--batch-size 1 and 7")
    _assert_within_rounding(vectors[0], vectors[3], "--batch-size 1 and 64")


def test_a_resume_gives_the_uninterrupted_file_and_with_another_batch_size_within_rounding(
    fixture_model_folder: Path, tmp_path: Path
) -> None:
    source, model = _source(tmp_path), ["--model", fixture_model_folder, "--max-words", "8"]
    same, other = tmp_path / "same.hdf5", tmp_path / "other.hdf5"
    codes = _embed_in_a_fresh_process(
        [source, tmp_path / "whole-1.hdf5", *model, "--batch-size", "1"],
        [source, tmp_path / "whole-7.hdf5", *model, "--batch-size", "7"],
        ["interrupt at", "6"],  # a Ctrl-C at the sixth batch of one sentence
        [source, same, *model, "--batch-size", "1"],
        [source, same, *model, "--batch-size", "1", "--resume"],
        ["interrupt at", "6"],
        [source, other, *model, "--batch-size", "1"],
        [source, other, *model, "--batch-size", "7", "--resume"],
    )
    assert codes == [0, 0, 130, 0, 130, 0]
    _assert_same_bits(_vectors(tmp_path / "whole-1.hdf5"), _vectors(same), "resumed with the same --batch-size")
    _assert_within_rounding(_vectors(tmp_path / "whole-7.hdf5"), _vectors(other), "resumed with --batch-size 7")
