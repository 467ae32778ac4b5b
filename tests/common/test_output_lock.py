"""One writer per output (elmo_transformers.common.output_lock): a second process is refused, naming the first; a lock
dies with its holder; and the disk-full recognition and free-space check of elmo_transformers.common.disk_space."""

from __future__ import annotations

import errno
import fcntl
import os
import signal
import subprocess

import pytest
from lock_holder import start_lock_holder

from elmo_transformers.common.disk_space import check_free_space, format_bytes, is_disk_full
from elmo_transformers.common.errors import EmbedError
from elmo_transformers.common.output_lock import lock_path, output_lock


def test_a_second_writer_is_refused_naming_the_first(tmp_path):
    target = tmp_path / "out.hdf5"
    holder = start_lock_holder(target)
    try:
        with pytest.raises(EmbedError, match=rf"out.hdf5 is being written by process {holder.pid} \(-c "):
            with output_lock(target, error=EmbedError):
                pytest.fail("the lock was taken twice")
        assert not target.exists()
    finally:
        holder.communicate("\n")
    assert holder.returncode == 0
    assert not lock_path(target).exists()  # released and removed
    with output_lock(target, error=EmbedError):
        assert lock_path(target).read_text().startswith(f"{os.getpid()}\n")


def test_a_killed_holder_leaves_no_lock_behind(tmp_path):
    target = tmp_path / "model"
    holder = start_lock_holder(target)
    holder.send_signal(signal.SIGKILL)
    holder.wait()
    assert lock_path(target).exists()  # its file stays, but the kernel dropped the lock
    with output_lock(target, error=EmbedError):
        pass


@pytest.mark.parametrize("replaced", [True, False], ids=["replaced", "vanished"])
def test_a_lock_file_replaced_or_vanished_while_waiting_is_not_held(replaced, tmp_path, monkeypatch):
    """A holder that finishes unlinks the file, and another process may have made a new one: a process that had
    opened the old one before must lock the file the path names now, a new one if there is none (held on the old
    one, it would write beside a process that locked the new one)."""
    target = tmp_path / "out"
    real_flock = fcntl.flock
    calls = []

    def flock_after_the_file_changed(descriptor, operation):
        if not calls:  # the first holder finished between our open and our flock
            lock_path(target).unlink()
            if replaced:
                lock_path(target).write_text("")
        calls.append(descriptor)
        return real_flock(descriptor, operation)

    monkeypatch.setattr(fcntl, "flock", flock_after_the_file_changed)
    with output_lock(target, error=EmbedError):
        assert len(calls) == 2
        assert os.path.samestat(os.stat(lock_path(target)), os.fstat(calls[1]))


def test_the_lock_file_is_unlinked_before_the_lock_is_released(tmp_path, monkeypatch):
    """Released first, a waiting process could lock the old file and find it still named, then hold a lock that
    the unlink makes void: a third process would create and lock a new file, and two would write."""
    target = tmp_path / "out"
    real_close = os.close
    named_at_release = []

    def close(descriptor):
        if fcntl.fcntl(descriptor, fcntl.F_GETFD) >= 0 and os.path.samestat(os.fstat(descriptor), held):
            named_at_release.append(lock_path(target).exists())
        real_close(descriptor)

    with output_lock(target, error=EmbedError):
        held = os.stat(lock_path(target))
        monkeypatch.setattr(os, "close", close)
    assert named_at_release == [False]


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to mount a read-only tmpfs")
def test_a_read_only_folder_is_one_line(tmp_path):
    """An OSError creating the lock file was a traceback (also with --format datasets, whose output is a folder)."""
    folder = tmp_path / "read-only"
    folder.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "ro,size=1m", "tmpfs", str(folder)]).returncode != 0:
        pytest.skip("tmpfs cannot be mounted here")
    try:
        for target in (folder / "out.hdf5", folder / "new" / "vectors"):
            with pytest.raises(EmbedError) as refused:
                with output_lock(target, error=EmbedError):
                    pytest.fail("locked on a read-only file system")
            assert str(refused.value) == (
                f"{target.parent}: cannot write the output there (Read-only file system: {lock_path(target)} cannot"
                " be created): write it to another folder"
            )
    finally:
        subprocess.run(["umount", str(folder)], check=True)


def test_disk_full_is_recognised_through_causes_and_library_messages():
    assert is_disk_full(OSError(errno.ENOSPC, "No space left on device"))
    try:
        try:
            raise OSError(errno.EDQUOT, "quota")
        except OSError as cause:
            raise RuntimeError("Can't write data") from cause
    except RuntimeError as error:
        assert is_disk_full(error)
    try:
        try:
            raise OSError(errno.ENOSPC, "No space left on device")
        except OSError:
            raise RuntimeError("[enforce fail at inline_container.cc:672] . unexpected pos 2048 vs 1024")  # noqa: B904
    except RuntimeError as error:
        assert is_disk_full(error), "an implicitly chained error (__context__), as torch.save's"
    assert is_disk_full(Exception("Error while serializing: IoError(Os { code: 28, kind: StorageFull, ... os error 28"))
    assert is_disk_full(OSError("Can't write data (file write failed: ... error message = 'No space left on device')"))
    assert not is_disk_full(OSError(errno.EACCES, "Permission denied"))
    assert not is_disk_full(RuntimeError("out of memory"))


def test_the_free_space_check_names_the_output_and_the_flag(tmp_path):
    output = tmp_path / "not" / "yet" / "out.hdf5"
    check_free_space(output, 1, what="the vectors", error=EmbedError)
    with pytest.raises(EmbedError) as refused:
        check_free_space(output, 10**18, what="the vectors of 3 words", error=EmbedError)
    message = str(refused.value)
    assert message.startswith(f"{output}: the vectors of 3 words need about 1,000,000.0 TB, but {tmp_path} has ")
    assert message.endswith("pass --no-space-check to try anyway") and "\n" not in message
    assert format_bytes(999) == "999 bytes" and format_bytes(1_500_000) == "1.5 MB"
