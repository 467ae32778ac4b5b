"""`elmo-embed --format datasets`: a folder that `datasets.load_from_disk` opens, a row per line whose vectors equal
the hdf5 output's bit for bit (every layer choice, awkward lines, --tokenize), written in shards by 2 processes
as by one, resumed after a kill, and refused where it would replace what it must not."""

from __future__ import annotations

import errno
import json
import os
import shlex
import sys
from pathlib import Path

import datasets
import h5py
import numpy as np
import pytest
from datasets.arrow_writer import ArrowWriter
from embed_launch import AWKWARD_LINES, embed_in_one_process, launch_embed, write_input
from embed_limits import main_runs_with

from elmo_transformers.inference.datasets_output import RECORD_FILE, shard_lines
from elmo_transformers.inference.embed import main
from elmo_transformers.inference.limits import EmbedLimits

LINES = AWKWARD_LINES * 2
OPTIONS = ["--batch-size", "3", "--max-words", "8"]


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_input(tmp_path_factory.mktemp("inputs"), LINES)


def _assert_rows_equal_the_hdf5_file(folder: Path, hdf5: Path, *, words: bool) -> None:
    rows = datasets.load_from_disk(str(folder))
    assert rows.column_names == (["line", "words", "vectors"] if words else ["line", "vectors"])
    with h5py.File(hdf5, "r") as file:
        assert len(rows) == len(file) - 1 == len(LINES)
        for index, row in enumerate(rows.with_format("numpy")):
            dataset = file[str(index)]
            assert row["line"] == index
            vectors = np.array(row["vectors"].tolist(), dtype=dataset.dtype).reshape(dataset.shape)
            assert np.array_equal(vectors, dataset[()]), index
            if words:
                assert list(row["words"]) == json.loads(dataset.attrs["words"])
        record = json.loads((folder / RECORD_FILE).read_text(encoding="utf-8"))
        expected = {name: value for name, value in file.attrs.items() if name != "elmo_embed_command"}
        assert {name: value for name, value in record.items() if name != "elmo_embed_command"} == expected


@pytest.mark.parametrize(("layers", "storage_dtype"), [("all", "float32"), ("top", "float16")])
@pytest.mark.parametrize("tokenize", [False, True], ids=["words", "tokenize"])
def test_rows_equal_the_hdf5_file(
    layers: str, storage_dtype: str, tokenize: bool, source: Path, fixture_model_folder: Path, tmp_path: Path
) -> None:
    options = [*OPTIONS, "--model", str(fixture_model_folder), "--layers", layers, "--storage-dtype", storage_dtype]
    options += ["--tokenize"] if tokenize else []
    assert main([str(source), str(tmp_path / "out.hdf5"), *options]) == 0
    assert main([str(source), str(tmp_path / "rows"), *options, "--format", "datasets"]) == 0
    assert sorted(path.name for path in (tmp_path / "rows").iterdir()) == [
        "data-00000-of-00001.arrow", "dataset_info.json", RECORD_FILE, "state.json",
    ]  # fmt: skip
    _assert_rows_equal_the_hdf5_file(tmp_path / "rows", tmp_path / "out.hdf5", words=tokenize)
    value = datasets.load_from_disk(str(tmp_path / "rows")).features["vectors"]
    while not isinstance(value, datasets.Value):
        value = value.feature
    assert value.dtype == storage_dtype
    assert not (tmp_path / "rows.partial").exists()


@pytest.mark.slow
def test_two_processes_write_a_shard_each_and_a_kill_resumes(
    source: Path, fixture_model_folder: Path, tmp_path: Path
) -> None:
    hdf5_options = [*OPTIONS, "--model", fixture_model_folder, "--tokenize"]
    options = [*hdf5_options, "--format", "datasets"]
    output = tmp_path / "rows"
    environment = {"ELMO_TEST_SEGMENT_BYTES": "1", "ELMO_TEST_FAIL_PROCESS": "1", "ELMO_TEST_FAIL_HOW": "kill"}
    killed = launch_embed(source, output, *options, environment=environment)
    assert killed.returncode != 0 and not output.exists()
    resumed = launch_embed(source, output, *options, "--resume")
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert "resumed: " in resumed.stdout
    assert sorted(path.name for path in output.glob("*.arrow")) == [
        "data-00000-of-00002.arrow",
        "data-00001-of-00002.arrow",
    ]
    hdf5 = tmp_path / "one.hdf5"
    embed_in_one_process(source, hdf5, *hdf5_options)
    _assert_rows_equal_the_hdf5_file(output, hdf5, words=True)


def test_an_output_folder_is_replaced_only_when_told(
    source: Path, fixture_model_folder: Path, tmp_path: Path, capsys
) -> None:
    output = tmp_path / "rows"
    output.mkdir()
    (output / "kept.txt").write_text("mine")
    arguments = [str(source), str(output), "--model", str(fixture_model_folder), "--format", "datasets"]
    assert main(arguments) == 2
    assert capsys.readouterr().err == f"elmo-embed: error: {output} already exists: pass --overwrite to replace it\n"
    assert (output / "kept.txt").read_text() == "mine"
    assert main([*arguments, "--overwrite"]) == 0
    assert not (output / "kept.txt").exists() and len(datasets.load_from_disk(str(output))) == len(LINES)
    inside = tmp_path / "holder"
    inside.mkdir()
    held = inside / "in.txt"
    held.write_text("a b\n", encoding="utf-8")
    capsys.readouterr()
    assert main([str(held), str(inside), "--format", "datasets", "--overwrite"]) == 2
    assert f"{inside} holds the input {held}: replacing it would delete the input" in capsys.readouterr().err
    assert held.read_text() == "a b\n"


def test_a_full_disk_while_writing_a_shard_is_one_line_and_resumes(
    source: Path, fixture_model_folder: Path, tmp_path: Path, capsys, monkeypatch
) -> None:
    output = tmp_path / "rows"
    arguments = [str(source), str(output), "--model", str(fixture_model_folder), "--format", "datasets"]
    write_table = ArrowWriter.write_table

    def full_disk(self, table, *args, **kwargs):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(ArrowWriter, "write_table", full_disk)
    assert main(arguments) == 2
    partial = Path(f"{output}.partial")
    assert capsys.readouterr().err == (
        f"elmo-embed: error: {partial}: the disk is full (No space left on device): {len(LINES):,} of"
        f" {len(LINES):,} lines are safely stored; free some space and rerun with --resume:"
        f" {shlex.join(['elmo-embed', *arguments, '--resume'])}\n"
    )
    assert not output.exists() and not list(partial.glob(".dataset.tmp/*.arrow")), "the failed shard is removed"
    monkeypatch.setattr(ArrowWriter, "write_table", write_table)
    assert main([*arguments, "--resume"]) == 0
    assert len(datasets.load_from_disk(str(output))) == len(LINES)


def test_the_shards_are_sized_by_the_stored_vectors(
    source: Path, fixture_model_folder: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Shards of about `EmbedLimits.shard_bytes` (here 2 KB: the fixture's vectors are tens of KB), consecutive lines
    in order, not one per process whatever the size."""
    options = [*OPTIONS, "--model", str(fixture_model_folder)]
    assert main([str(source), str(tmp_path / "out.hdf5"), *options]) == 0
    main_runs_with(monkeypatch, limits=EmbedLimits(shard_bytes=2000))
    assert main([str(source), str(tmp_path / "rows"), *options, "--format", "datasets"]) == 0
    with h5py.File(tmp_path / "out.hdf5", "r") as file:
        vector_bytes = sum(file[name].nbytes for name in file if name.isdigit())
    shards = sorted((tmp_path / "rows").glob("*.arrow"))
    assert len(shards) >= vector_bytes // 2000 > 1
    _assert_rows_equal_the_hdf5_file(tmp_path / "rows", tmp_path / "out.hdf5", words=False)


def test_shards_are_consecutive_lines_at_least_one_per_process() -> None:
    assert shard_lines(10, 0, 1) == [range(0, 10)]
    assert shard_lines(10, 0, 3) == [range(0, 3), range(3, 6), range(6, 10)]
    assert shard_lines(0, 0, 2) == [range(0, 0), range(0, 0)]
    assert len(shard_lines(1000, 1_700_000_000, 2)) == 4  # about 500 MB each


def test_the_missing_extra_is_one_line_like_every_other_error(
    source: Path, tmp_path: Path, capsys, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without datasets, --format datasets exited 1 with "error: ...", without the elmo-embed: prefix."""
    monkeypatch.setitem(sys.modules, "datasets", None)  # import datasets now fails as where it is not installed
    assert main([str(source), str(tmp_path / "vectors"), "--format", "datasets"]) == 2
    assert capsys.readouterr().err == (
        "elmo-embed: error: --format datasets needs datasets, which comes with an extra:"
        " pip install 'elmo-transformers[datasets]'\n"
    )
    assert not any(tmp_path.iterdir())
