"""Files from outside read as data (`common.regular_files`): a FIFO, a device or a folder given where a file is read
is refused in one line, without waiting on it or reading it forever. Each reader that could hang, or take memory
until none is left, runs in a Python of its own, ended by a timeout and held to 1 GiB of memory."""

from __future__ import annotations

import os
import resource
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from elmo_transformers.common.errors import ConversionError, DataFileError
from elmo_transformers.common.options_json import read_options
from elmo_transformers.common.safe_load import load_tensors
from elmo_transformers.common.vocabulary_file import read_vocabulary
from elmo_transformers.conversion.allennlp_hdf5 import read_allennlp_weights
from modeling_elmo import ElmoConfig

_READ = {
    "options": "from elmo_transformers.common.options_json import read_options as read\n",
    "vocabulary": "from functools import partial\n"
    "from elmo_transformers.common.errors import ConversionError\n"
    "from elmo_transformers.common.vocabulary_file import read_vocabulary\n"
    "read = partial(read_vocabulary, error=ConversionError)\n",
}
# Runs the reader on argv[1] and prints the one line it refuses the file with.
_PRINT_REFUSAL = """
import sys
from elmo_transformers.common.errors import ElmoError
try:
    read(sys.argv[1])
except ElmoError as error:
    print(error)
"""
_MEMORY = 1 << 30


def _limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (_MEMORY * 4, _MEMORY * 4))  # address space: a little over 1 GiB used


def _refusal_apart(reader: str, path: Path) -> str:
    try:
        completed = subprocess.run(
            [sys.executable, "-c", _READ[reader] + _PRINT_REFUSAL, str(path)],
            capture_output=True,
            text=True,
            timeout=60,
            preexec_fn=_limit_memory,
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"reading {path} as the {reader} hung")
    assert completed.returncode == 0, completed.stderr[-2000:]
    return completed.stdout.removesuffix("\n")


@pytest.fixture
def fifo(tmp_path: Path) -> Path:
    path = tmp_path / "pipe"
    os.mkfifo(path)
    return path


@pytest.mark.parametrize("reader", _READ)
def test_a_fifo_is_refused_without_waiting_for_a_writer(reader: str, fifo: Path) -> None:
    """Opening it waited for a writer that never came (`elmo-convert --options FIFO` hung)."""
    assert _refusal_apart(reader, fifo).startswith(f"{fifo}: not a regular file but a FIFO (named pipe); ")


@pytest.mark.parametrize("reader", _READ)
def test_dev_zero_is_refused_without_reading_it(reader: str) -> None:
    """It was read until memory ran out."""
    assert _refusal_apart(reader, Path("/dev/zero")).startswith(
        "/dev/zero: not a regular file but a character device; "
    )


def test_a_folder_is_refused_in_one_line(tmp_path: Path) -> None:
    """IsADirectoryError came as a traceback."""
    with pytest.raises(ConversionError) as options:
        read_options(tmp_path)
    assert str(options.value) == (
        f"{tmp_path}: not a regular file but a folder; only regular files are read: name the options.json file itself"
    )
    with pytest.raises(ConversionError) as vocabulary:
        read_vocabulary(tmp_path, error=ConversionError)
    assert str(vocabulary.value) == (
        f"{tmp_path}: not a regular file but a folder; only regular files are read: name the vocabulary file itself"
        " (one word a line)"
    )


def test_a_device_given_as_weights_is_named_so() -> None:
    """/dev/zero as --weights was called "no such weights file"; /dev/null as a pickle "no such file"."""
    with pytest.raises(ConversionError) as weights:
        read_allennlp_weights("/dev/zero", ElmoConfig())
    assert str(weights.value) == (
        "/dev/zero: not a regular file but a character device; only regular files are read: expected the weights file"
    )
    with pytest.raises(DataFileError) as pickle:
        load_tensors("/dev/null", DataFileError)
    assert str(pickle.value).startswith("/dev/null: not a regular file but a character device; ")


@pytest.mark.parametrize("flag", ["--options", "--vocab"])
def test_the_converter_refuses_a_fifo_given_as_options_or_vocabulary(
    fifo: Path, fixture_model_folder: Path, tmp_path: Path, flag: str
) -> None:
    """`elmo-convert allennlp --options FIFO` and `elmo-convert token-embeddings --vocab FIFO` waited for a writer."""
    if flag == "--options":
        command = ["allennlp", "--options", str(fifo), "--weights", str(tmp_path / "weights.hdf5")]
    else:
        command = ["token-embeddings", "--model", str(fixture_model_folder), "--vocab", str(fifo)]
    command = [sys.executable, "-m", "elmo_transformers.conversion.cli", *command, "--output", str(tmp_path / "out")]
    try:
        completed = subprocess.run(command, capture_output=True, text=True, timeout=120)
    except subprocess.TimeoutExpired:
        pytest.fail(f"elmo-convert hung on a FIFO given as {flag}")
    assert completed.returncode != 0
    assert (
        completed.stderr.strip()
        .splitlines()[-1]
        .startswith(f"elmo-convert: error: {fifo}: not a regular file but a FIFO (named pipe); ")
    )


# Prints `model_folder_problem` of the folder argv[1], in a Python of its own (a read that waits on a FIFO is ended
# by the timeout).
_MODEL_FOLDER_PROBLEM = """
import sys
from elmo_transformers.common.model_folder import model_folder_problem
print(model_folder_problem(sys.argv[1]))
"""


@pytest.mark.parametrize("name", ["config.json", "tokenizer_config.json", "model.safetensors"])
def test_a_model_folder_file_that_is_a_fifo_is_named_without_waiting_on_it(
    fixture_model_folder: Path, tmp_path: Path, name: str
) -> None:
    """config.json a FIFO was "not a model folder (no config.json)"; tokenizer_config.json a FIFO waited for a
    writer."""
    folder = Path(shutil.copytree(fixture_model_folder, tmp_path / "model"))
    (folder / name).unlink(missing_ok=True)
    os.mkfifo(folder / name)
    try:
        completed = subprocess.run(
            [sys.executable, "-c", _MODEL_FOLDER_PROBLEM, str(folder)], capture_output=True, text=True, timeout=60
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"the check of a model folder whose {name} is a FIFO hung")
    assert completed.returncode == 0, completed.stderr[-2000:]
    assert completed.stdout.startswith(f"{folder / name}: not a regular file but a FIFO (named pipe); ")
