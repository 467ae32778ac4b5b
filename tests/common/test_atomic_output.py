"""The write-then-rename steps that the converters, the pretraining checkpoints and elmo-embed share."""

from __future__ import annotations

import pytest

from elmo_transformers.common.atomic_output import (
    atomic_output_file,
    atomic_output_folder,
    partial_path,
    publish_file,
    publish_folder,
)
from elmo_transformers.common.errors import ConversionError


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
