"""The write-then-rename steps that the converters, the pretraining checkpoints and elmo-embed share."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from elmo_transformers.common.atomic_output import (
    atomic_output_file,
    atomic_output_folder,
    partial_path,
    publish_file,
    publish_folder,
)
from elmo_transformers.common.errors import ConversionError, TrainingError
from elmo_transformers.training.output_dir import refuse_existing_output_dir


def test_staging_paths_sit_beside_the_target(tmp_path):
    assert partial_path(tmp_path / "out.hdf5") == tmp_path / "out.hdf5.partial"
    assert partial_path(tmp_path / "checkpoint-7", hidden=True) == tmp_path / ".checkpoint-7.partial"


def test_a_published_folder_replaces_the_old_one_and_is_readable_by_all(tmp_path):
    target = tmp_path / "checkpoint-7"
    (target / "old").mkdir(parents=True)
    staging = partial_path(target, hidden=True)
    (staging / "sub").mkdir(parents=True)
    (staging / "sub" / "weights").write_bytes(b"new")
    (staging / "sub" / "weights").chmod(0o600)
    # Left by a publish killed between its two renames: it must not stop the next one.
    (tmp_path / ".checkpoint-7.previous" / "stale").mkdir(parents=True)
    publish_folder(staging, target)
    assert (target / "sub" / "weights").read_bytes() == b"new" and not (target / "old").exists()
    assert sorted(path.name for path in tmp_path.iterdir()) == ["checkpoint-7"]
    assert (target / "sub" / "weights").stat().st_mode & 0o777 == 0o644
    assert target.stat().st_mode & 0o777 == (target / "sub").stat().st_mode & 0o777 == 0o755


def test_a_published_file_replaces_the_old_one(tmp_path):
    target, staging = tmp_path / "out.hdf5", tmp_path / "out.hdf5.partial"
    target.write_bytes(b"old")
    staging.write_bytes(b"new")
    staging.chmod(0o600)
    publish_file(staging, target)
    assert target.read_bytes() == b"new" and not staging.exists() and target.stat().st_mode & 0o777 == 0o644


def test_a_failed_folder_leaves_the_old_output(tmp_path):
    (tmp_path / "model").mkdir()
    with pytest.raises(ConversionError, match="already exists: pass --overwrite"):
        with atomic_output_folder(tmp_path / "model"):
            pass
    with pytest.raises(RuntimeError), atomic_output_folder(tmp_path / "model", overwrite=True) as staging:
        (staging / "half").write_bytes(b"")
        raise RuntimeError("killed")
    assert sorted(path.name for path in tmp_path.iterdir()) == ["model"] and not any((tmp_path / "model").iterdir())


def test_a_failed_file_leaves_the_old_output(tmp_path):
    target = tmp_path / "model_card.md"
    target.write_bytes(b"old")
    with pytest.raises(ConversionError, match="already exists: pass --overwrite"):
        with atomic_output_file(target):
            pass
    with pytest.raises(RuntimeError), atomic_output_file(target, overwrite=True) as staging:
        staging.write_bytes(b"half")
        raise RuntimeError("killed")
    assert sorted(path.name for path in tmp_path.iterdir()) == ["model_card.md"] and target.read_bytes() == b"old"
    with atomic_output_file(target, overwrite=True) as staging:
        staging.write_bytes(b"new")
    assert sorted(path.name for path in tmp_path.iterdir()) == ["model_card.md"] and target.read_bytes() == b"new"


@pytest.mark.parametrize("writer", [atomic_output_folder, atomic_output_file])
def test_a_failed_output_leaves_no_folder_made_for_it_and_every_folder_that_was_there(tmp_path, writer):
    """The folders above a new output, made for its staging path and lock, stayed behind empty."""
    (tmp_path / "mine").mkdir()
    for failure in (KeyboardInterrupt, RuntimeError):
        with pytest.raises(failure), writer(tmp_path / "mine" / "new" / "deeper" / "out"):
            raise failure
        assert [path.name for path in tmp_path.rglob("*")] == ["mine"]
    (tmp_path / "mine" / "new").mkdir()
    (tmp_path / "mine" / "new" / "theirs").write_bytes(b"")  # a folder that was there, and its file, stay
    with pytest.raises(RuntimeError), writer(tmp_path / "mine" / "new" / "out"):
        raise RuntimeError("killed")
    assert sorted(path.name for path in tmp_path.rglob("*")) == ["mine", "new", "theirs"]


@pytest.mark.parametrize("writer", [atomic_output_folder, atomic_output_file])
def test_staging_left_by_a_killed_writer_is_removed_by_the_next(tmp_path, writer):
    """A writer killed with SIGKILL leaves its `.NAME.XXXXXXXX.partial` (12 MB for each `elmo-convert onnx`): no later
    run removed them, and they piled up. The next writer of the same output, holding its lock, removes them; the
    staging of other outputs, links and the resumable `NAME.partial` of elmo-embed stay."""
    output = tmp_path / "elmo"
    (tmp_path / ".elmo.k1ll3d_x.partial").mkdir()
    (tmp_path / ".elmo.k1ll3d_x.partial" / "model.onnx").write_bytes(b"\0" * 1024)
    (tmp_path / ".elmo.abcdefgh.partial").write_bytes(b"half a file")
    kept = [".elmo2.abcdefgh.partial", "elmo.partial", ".elmo.v2.partial", "elmo.lock.other"]
    for name in kept:
        (tmp_path / name).mkdir()
    (tmp_path / ".elmo.linked12.partial").symlink_to(tmp_path / "elmo.partial")
    with writer(output) as staging:
        (staging / "x").write_text("new") if staging.is_dir() else staging.write_text("new")
    assert sorted(path.name for path in tmp_path.iterdir()) == sorted(["elmo", ".elmo.linked12.partial", *kept])


def _special_files(folder: Path) -> dict[str, Path]:
    """A FIFO, a link and (where this process may make one: root) a character device like /dev/null (1, 3): what
    the rename that publishes an output would replace with a file (`elmo-embed X /dev/full --overwrite`, as root,
    replaced the device node)."""
    made = {"a FIFO (named pipe)": folder / "pipe", "a link": folder / "link"}
    os.mkfifo(made["a FIFO (named pipe)"])
    made["a link"].symlink_to(folder / "elsewhere")
    try:
        os.mknod(folder / "null", 0o666 | stat.S_IFCHR, os.makedev(1, 3))
        made["a character device"] = folder / "null"
    except PermissionError:
        pass
    return made


@pytest.mark.parametrize("writer", [atomic_output_file, atomic_output_folder])
def test_only_regular_files_and_folders_are_replaced(tmp_path: Path, writer) -> None:
    for kind, path in _special_files(tmp_path).items():
        mode = os.lstat(path).st_mode
        with pytest.raises(ConversionError) as refused, writer(path, overwrite=True) as staging:
            (staging / "x" if staging.is_dir() else staging).write_bytes(b"output")
        assert str(refused.value) == (
            f"{path} is {kind}, not a regular file: it is never replaced, even with --overwrite; write the output to"
            " another path"
        )
        assert os.lstat(path).st_mode == mode
    assert not list(tmp_path.glob("*.lock")), "no lock file is made beside what is refused"


def test_elmo_embed_replaces_no_fifo(tmp_path: Path, fixture_model_folder: Path, capsys) -> None:
    """elmo-embed ... OUT --overwrite replaced a FIFO (or, as root, /dev/null and /dev/full) with an hdf5 file."""
    from elmo_transformers.inference.embed import main

    source, output = tmp_path / "in.txt", tmp_path / "pipe"
    source.write_text("a b\n", encoding="utf-8")
    os.mkfifo(output)
    code = main([str(source), str(output), "--model", str(fixture_model_folder), "--overwrite"])
    assert (code, capsys.readouterr().err) == (
        2,
        f"elmo-embed: error: {output} is a FIFO (named pipe), not a regular file: it is never replaced, even with"
        " --overwrite; write the output to another path\n",
    )
    assert stat.S_ISFIFO(os.lstat(output).st_mode)


@pytest.mark.parametrize("under", ["out", "sub/out"])
def test_an_output_under_a_file_is_named_so(tmp_path: Path, under: str) -> None:
    """mkdir's ENOTDIR (and, for the file itself, EEXIST) was told as "File exists"."""
    (tmp_path / "file").write_bytes(b"")
    with pytest.raises(ConversionError) as refused, atomic_output_file(tmp_path / "file" / under):
        pass
    assert str(refused.value) == (
        f"{tmp_path / 'file'} is a regular file, not a folder: nothing can be written under it; write the output"
        " elsewhere"
    )


@pytest.mark.parametrize("writer", [atomic_output_file, atomic_output_folder])
def test_an_output_that_cannot_be_looked_at_is_one_line(tmp_path: Path, writer) -> None:
    """A name over the file system's 255 bytes: pathlib's tests raise where the output is first looked at."""
    output = tmp_path / ("o" * 300)
    with pytest.raises(ConversionError) as refused, writer(output):
        pass
    assert str(refused.value) == f"{output}: cannot be written: File name too long"
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(TrainingError) as refused:
        refuse_existing_output_dir(output, overwrite=False)
    assert str(refused.value) == f"{output}: cannot be written: File name too long"


def test_a_training_output_dir_that_is_no_folder_is_refused(tmp_path: Path) -> None:
    """It was let through (a FIFO, a file), and the run failed later, in a traceback."""
    os.mkfifo(tmp_path / "pipe")
    with pytest.raises(TrainingError) as refused:
        refuse_existing_output_dir(tmp_path / "pipe", overwrite=True)
    assert (
        str(refused.value) == f"{tmp_path / 'pipe'} is a FIFO (named pipe), not a folder: name a folder to train into"
    )
