"""What `elmo-convert` does around its output: one writer at a time (a second is refused in one line naming the
first, touching nothing), no output that would replace the current directory or the inputs, and a disk too small
refused before the weights are written, or a disk that fills told in one line (the old output kept)."""

from __future__ import annotations

import errno
import os
import re
import shlex
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from command_output import exit_status_after_ctrl_c, file_tree, last_error_line
from huggingface_hub import HfApi
from original_files import small_options, write_original_model

from elmo_transformers.conversion.cli import main
from modeling_elmo import ElmoModel

# `elmo-convert ARGS` as the console script runs it, paused (until a line comes on stdin) once it has written the
# weights into its staging folder: a first writer caught in the middle of its output, deterministically.
_PAUSED_CONVERSION = textwrap.dedent(
    """
    import sys
    from elmo_transformers.conversion.cli import main
    from modeling_elmo import ElmoTokenizer

    def paused(*args, **kwargs):
        print("writing", flush=True)
        sys.stdin.readline()
        return save_pretrained(*args, **kwargs)

    save_pretrained, ElmoTokenizer.save_pretrained = ElmoTokenizer.save_pretrained, paused
    sys.argv = ["elmo-convert", *sys.argv[1:]]
    sys.exit(main())
    """
)


@pytest.fixture
def original(tmp_path: Path) -> tuple[Path, Path]:
    return write_original_model(tmp_path / "original", small_options(), seed=11)


def _allennlp(options: Path, weights: Path, output: Path | str, *extra: str) -> list[str]:
    return ["allennlp", "--options", str(options), "--weights", str(weights), "--output", str(output), *extra]


def _elmo_convert(*arguments: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "elmo_transformers.conversion.cli", *arguments],
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.mark.parametrize("second_overwrites", [False, True], ids=["second-plain", "second-overwrite"])
@pytest.mark.slow
def test_a_second_writer_is_refused_naming_the_first(original, tmp_path: Path, second_overwrites: bool) -> None:
    """The first writer replaces an old output where the second would too (--overwrite), and writes a new one
    where the second would not: in both the second stops, naming the first, and the first's output is whole."""
    output = tmp_path / "converted"
    first_arguments = _allennlp(*original, output)
    if second_overwrites:
        assert main(_allennlp(*original, output)) == 0  # the old output both would replace
        first_arguments.append("--overwrite")
    first = subprocess.Popen(
        [sys.executable, "-c", _PAUSED_CONVERSION, *first_arguments],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert first.stdout.readline().strip() == "writing", first.stderr.read()
        before = file_tree(tmp_path)
        second = _elmo_convert(*_allennlp(*original, output, *(["--overwrite"] if second_overwrites else [])))
        assert second.returncode == 2
        assert second.stderr.splitlines() == [
            f"elmo-convert: error: {output} is being written by process {first.pid}"
            f" ({shlex.join(['elmo-convert', *first_arguments])}): wait for it to finish, or stop it first"
        ]
        assert file_tree(tmp_path) == before, "the second writer touched nothing"
    finally:
        out, err = first.communicate("\n", timeout=300)
    assert first.returncode == 0, err
    assert out.strip().splitlines()[-1].startswith(f"Converted {original[1]}")
    assert sorted(path.name for path in tmp_path.iterdir()) == ["converted", "original"], "no staging or lock left"
    ElmoModel.from_pretrained(output)  # complete and loadable


def test_the_current_directory_and_a_folder_of_the_inputs_are_refused(
    original, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    options, weights = original
    (tmp_path / "work").mkdir()
    monkeypatch.chdir(tmp_path / "work")
    before = file_tree(tmp_path)
    for output, problem in [
        (".", ". is the current directory or holds it: it cannot be replaced; name a new folder"),
        ("..", ".. is the current directory or holds it: it cannot be replaced; name a new folder"),
        (
            str(options.parent),
            f"{options.parent} holds the input {weights}: replacing it would delete the input; name another folder",
        ),
    ]:
        assert main(_allennlp(options, weights, output, "--overwrite")) == 2
        assert capsys.readouterr().err.splitlines() == [f"elmo-convert: error: {problem}"]
    assert file_tree(tmp_path) == before
    converted = tmp_path / "converted"
    assert main(_allennlp(options, weights, converted)) == 0
    capsys.readouterr()
    for command in (["to-allennlp"], ["sentence-transformers"]):
        assert main([*command, "--model", str(converted), "--output", str(converted), "--overwrite"]) == 2
        # (after the progress bar of loading the model)
        assert capsys.readouterr().err.splitlines()[-1:] == [
            f"elmo-convert: error: {converted} holds the input {converted}: replacing it would delete the input;"
            " name another folder"
        ]
    assert ElmoModel.from_pretrained(converted).config.cell_size == 32


def test_a_full_disk_is_told_in_one_line_and_leaves_the_old_model(
    tmp_path: Path, small_disk, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    """A model of 4.8 MB on a disk of 2 MB that holds an old model of 0.2 MB: the free-space check refuses it;
    with --no-space-check the disk fills while the weights are written. Either way the old model stays, and
    nothing else is left. On a disk of 8 MB it converts."""
    tiny = write_original_model(tmp_path / "tiny", small_options(), seed=11)
    big = write_original_model(tmp_path / "big", small_options(dim=512, projection_dim=64), seed=11)
    disk = small_disk("2m")
    if disk is None:
        disk = tmp_path / "disk"
        monkeypatch.setattr(shutil, "disk_usage", lambda _: shutil._ntuple_diskusage(2e6, 0, 2e6))
    output = disk / "model"
    assert main(_allennlp(*tiny, output)) == 0
    old = file_tree(disk)

    assert main(_allennlp(*big, output, "--overwrite")) == 2
    assert re.fullmatch(
        rf"elmo-convert: error: {output}: the 1,194,292 weights need about 4\.8 MB, but {output} has \d\.\d MB free:"
        " free some space, write elsewhere, or pass --no-space-check to try anyway",
        last_error_line(capsys),
    )
    assert file_tree(disk) == old

    if not os.path.ismount(disk):

        def full_disk(model, folder, **kwargs):
            (Path(folder) / "model.safetensors").write_bytes(b"half")
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

        monkeypatch.setattr(ElmoModel, "save_pretrained", full_disk)
    assert main(_allennlp(*big, output, "--overwrite", "--no-space-check")) == 2
    assert last_error_line(capsys) == (
        f"elmo-convert: error: {output}: the disk is full: nothing was written, {output} is as it was;"
        " free some space or write elsewhere"
    )
    assert file_tree(disk) == old, "the old model whole, the staging folder and the lock removed"
    monkeypatch.undo()

    roomy = small_disk("8m") or tmp_path / "roomy"
    assert main(_allennlp(*big, roomy / "model")) == 0
    assert ElmoModel.from_pretrained(roomy / "model").config.cell_size == 512


def test_too_little_room_for_token_embeddings_is_refused(
    original, tmp_path: Path, small_disk, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    """The token layer of 100,000 words (3.2 MB) for a disk of 2 MB is refused before it is computed."""
    model = tmp_path / "model"
    assert main(_allennlp(*original, model)) == 0
    vocabulary = tmp_path / "vocab.txt"
    vocabulary.write_text("".join(f"w{index}\n" for index in range(100_000)))
    disk = small_disk("2m")
    if disk is None:
        disk = tmp_path / "disk"
        monkeypatch.setattr(shutil, "disk_usage", lambda _: shutil._ntuple_diskusage(2e6, 0, 2e6))
    output = disk / "embeddings.hdf5"
    command = ["token-embeddings", "--model", str(model), "--vocab", str(vocabulary), "--output", str(output)]
    assert main(command) == 2
    assert re.fullmatch(
        rf"elmo-convert: error: {output}: the token layer of 100,000 words need about 3\.2 MB, but {disk} has"
        r" \d\.\d MB free: free some space, write elsewhere, or pass --no-space-check to try anyway",
        last_error_line(capsys),
    )
    assert not any(disk.iterdir()), "nothing written, the lock removed"


def test_ctrl_c_is_one_line_naming_what_is_kept(
    original, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    """Ctrl-C while converting leaves nothing (the staging folder removed); while uploading, the written folder."""
    output = tmp_path / "model"

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(ElmoModel, "save_pretrained", interrupted)  # (the converted model, into the staging folder)
    assert exit_status_after_ctrl_c(lambda: main(_allennlp(*original, output))) == 130
    assert last_error_line(capsys) == (
        f"elmo-convert: interrupted: nothing was written: {output} is as it was; run the command again"
    )
    assert sorted(path.name for path in tmp_path.iterdir()) == ["original"]
    monkeypatch.undo()

    monkeypatch.setattr(HfApi, "create_repo", interrupted)  # (the upload's first request)
    assert exit_status_after_ctrl_c(lambda: main(_allennlp(*original, output, "--push-to-hub", "someone/elmo"))) == 130
    assert last_error_line(capsys) == (
        f"elmo-convert: interrupted: {output} is written, its upload was not finished: hf upload someone/elmo {output}"
    )
    assert ElmoModel.from_pretrained(output).config.cell_size == 32
