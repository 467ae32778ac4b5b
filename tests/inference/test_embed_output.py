"""`elmo-embed`'s output, as the user runs the command: one writer at a time, an output that is the input refused,
a full disk told in one line and resumed to the same file, the file's record of how it was made, and a --help that
does not load torch."""

from __future__ import annotations

import gc
import hashlib
import importlib.metadata
import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import h5py
import numpy as np
import pytest
from embed_limits import main_runs_with

import elmo_transformers.inference.segment_store as segment_store
from elmo_transformers.inference.embed import main
from elmo_transformers.inference.limits import EmbedLimits

LINES = [
    "The cat sat on the mat .",
    "Hello !",
    "",
    "ELMo gives every word three vectors .",
    "one two three four five six seven eight nine ten",
    "a",
    "Colorless green ideas sleep furiously .",
]
ELMO_EMBED = str(Path(sys.executable).with_name("elmo-embed"))
# One thread: the runs compared bit for bit compute the same way, and the 2 shared cores are not oversubscribed.
ENVIRONMENT = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}

# `elmo-embed` (its main()) that stops after writing its first batch until the file named by $ELMO_TEST_GO exists,
# having created the one named by $ELMO_TEST_PAUSED: a run caught in the middle, for a second writer to meet.
_PAUSING_RUN = textwrap.dedent(
    """
    import os, sys, time
    from pathlib import Path
    from elmo_transformers.inference.embed import main
    from elmo_transformers.inference.segment_store import SegmentStore
    end_batch = SegmentStore.end_batch
    def pausing_end_batch(self):
        end_batch(self)
        if not Path(os.environ["ELMO_TEST_PAUSED"]).exists():
            Path(os.environ["ELMO_TEST_PAUSED"]).touch()
            while not Path(os.environ["ELMO_TEST_GO"]).exists():
                time.sleep(0.05)
    SegmentStore.end_batch = pausing_end_batch
    sys.argv[0] = "elmo-embed"
    sys.exit(main(sys.argv[1:]))
    """
)


def _write_lines(path: Path, lines: list[str]) -> Path:
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


def _datasets(path: Path) -> dict[str, np.ndarray]:
    """Every dataset of a finished file, read whole (a damaged one raises)."""
    with h5py.File(path, "r") as file:
        return {name: file[name][()] for name in file}


def _stored_lines(partial: Path) -> set[int]:
    """The lines stored in the segments of an interrupted run's folder (each segment read whole)."""
    lines: set[int] = set()
    for segment in partial.glob("lines-*.hdf5"):
        lines.update(int(name) for name in _datasets(segment))
    return lines


def _assert_same_datasets(path: Path, expected: Path) -> None:
    """The same datasets, bit for bit, with the same attributes."""
    with h5py.File(path, "r") as file, h5py.File(expected, "r") as wanted:
        assert sorted(file) == sorted(wanted)
        for name in wanted:
            assert file[name].dtype == wanted[name].dtype and file[name].shape == wanted[name].shape, name
            assert np.array_equal(file[name][()], wanted[name][()]), name
            assert dict(file[name].attrs) == dict(wanted[name].attrs), name


def _assert_close_datasets(path: Path, expected: Path) -> None:
    """The same datasets, to 1e-6: a line embedded again in this process (where MKL may not have read elmo-embed's
    MKL_CBWR before its first product) may differ in the last bit; a damaged line differs by far more."""
    actual, wanted = _datasets(path), _datasets(expected)
    assert sorted(actual) == sorted(wanted)
    for name, vectors in wanted.items():
        if name.isdigit():
            np.testing.assert_allclose(actual[name], vectors, rtol=0, atol=1e-6, err_msg=name)


def _snapshot(folder: Path) -> dict[str, tuple[int, int]]:
    """(size, modification time) of everything under `folder`: what a refused run must leave as it was."""
    return {str(path.relative_to(folder)): (path.stat().st_size, path.stat().st_mtime_ns) for path in folder.rglob("*")}


@pytest.fixture(scope="module")
def reference_file(fixture_model_folder: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """LINES embedded by an uninterrupted run of the fixture model, batches of 1."""
    folder = tmp_path_factory.mktemp("reference")
    source = _write_lines(folder / "in.txt", LINES)
    output = folder / "out.hdf5"
    assert main([str(source), str(output), "--model", str(fixture_model_folder), "--batch-size", "1"]) == 0
    return output


@pytest.mark.parametrize("flags", [[], ["--overwrite"], ["--resume"]], ids=lambda flags: " ".join(flags) or "-")
@pytest.mark.slow
def test_a_second_writer_stops_naming_the_first_and_touches_nothing(
    flags: list[str], reference_file: Path, fixture_model_folder: Path, tmp_path: Path
) -> None:
    source = _write_lines(tmp_path / "in.txt", LINES)
    output = tmp_path / "out.hdf5"
    args = [str(source), str(output), "--model", str(fixture_model_folder), "--batch-size", "1"]
    paused, go = tmp_path / "paused", tmp_path / "go"
    environment = {**ENVIRONMENT, "ELMO_TEST_PAUSED": str(paused), "ELMO_TEST_GO": str(go)}
    first = subprocess.Popen(
        [sys.executable, "-c", _PAUSING_RUN, *args], env=environment, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 120
        while not paused.exists():
            if first.poll() is not None:
                pytest.fail(f"the first run ended before writing: {first.communicate()[1][-3000:]}")
            assert time.monotonic() < deadline, "the first run did not start writing"
            time.sleep(0.05)
        before = _snapshot(tmp_path)
        second = subprocess.run([ELMO_EMBED, *args, *flags], env=ENVIRONMENT, capture_output=True, text=True)
        assert second.returncode == 2
        assert second.stderr == (
            f"elmo-embed: error: {output} is being written by process {first.pid} (elmo-embed {' '.join(args)}):"
            " wait for it to finish, or stop it first\n"
        )
        assert _snapshot(tmp_path) == before, "the refused run changed nothing"
    finally:
        go.touch()
        out, err = first.communicate(timeout=120)
    assert first.returncode == 0, err
    assert out.startswith(f"Wrote {output}: 7 lines")
    written, expected = _datasets(output), _datasets(reference_file)
    assert sorted(written) == sorted(expected) and written.pop("sentence_to_index") == expected.pop("sentence_to_index")
    for name, vectors in expected.items():
        np.testing.assert_allclose(written[name], vectors, rtol=0, atol=1e-6, err_msg=name)


@pytest.mark.parametrize("link", ["output", "hard link", "symbolic link", "partial", "lock"])
def test_an_output_that_is_the_input_is_refused(link: str, fixture_model_folder: Path, tmp_path: Path, capsys) -> None:
    source = _write_lines(tmp_path / "in.txt", LINES)
    content = source.read_bytes()
    output = source if link == "output" else tmp_path / "out.hdf5"
    named = {"hard link": output, "symbolic link": output, "partial": Path(f"{output}.partial")}
    named["lock"] = Path(f"{output}.lock")
    if link == "symbolic link":
        output.symlink_to(source)
    elif link != "output":
        os.link(source, named[link])
    code = main([str(source), str(output), "--model", str(fixture_model_folder), "--overwrite"])
    err = capsys.readouterr().err
    assert code == 2
    refused = named.get(link, source)
    assert err == f"elmo-embed: error: {refused} is the input file {source}: write the output to another path\n"
    assert source.read_bytes() == content


def _can_mount_tmpfs() -> bool:
    """Whether this process may mount a tmpfs (root, and a kernel that lets it): then the full-disk tests use a
    real small file system, else an injected ENOSPC."""
    folder = Path(tempfile.mkdtemp(prefix="elmo-tmpfs-probe-"))
    try:
        mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(folder)], capture_output=True)
        if mounted.returncode != 0:
            return False
        subprocess.run(["umount", str(folder)], check=True)
        return True
    except OSError:  # no mount command
        return False
    finally:
        folder.rmdir()


SMALL_DISK = "tmpfs" if _can_mount_tmpfs() else "injected ENOSPC"
# Free space left by the ballast on the tmpfs: about 40 lines of the default model's vectors.
FREE_BYTES = 2 * 1000**2
EXAMPLE_LINES = (Path(__file__).parents[2] / "examples" / "sentences.txt").read_text(encoding="utf-8").splitlines()

# `elmo-embed` (its main()) with small segments ($ELMO_TEST_SEGMENT_BYTES), and, when $ELMO_TEST_ENOSPC_AFTER is
# set, an h5py that fails as on a full disk once that many datasets were created (the injected ENOSPC).
_SMALL_SEGMENTS_RUN = textwrap.dedent(
    """
    import errno, os, sys
    import h5py
    import functools
    import elmo_transformers.inference.run as run
    from elmo_transformers.inference.limits import EmbedLimits
    limits = EmbedLimits(segment_bytes=int(os.environ["ELMO_TEST_SEGMENT_BYTES"]))
    run.embed_file = functools.partial(run.embed_file, limits=limits)
    if "ELMO_TEST_ENOSPC_AFTER" in os.environ:
        budget = [int(os.environ["ELMO_TEST_ENOSPC_AFTER"])]
        create_dataset = h5py.Group.create_dataset
        def full_disk(self, *args, **kwargs):
            budget[0] -= 1
            if budget[0] < 0:
                raise OSError(errno.ENOSPC, "Can't synchronously write data (file write failed: errno = 28,"
                              " error message = 'No space left on device')")
            return create_dataset(self, *args, **kwargs)
        h5py.Group.create_dataset = full_disk
    from elmo_transformers.inference.embed import main
    sys.exit(main(sys.argv[1:]))
    """
)


@pytest.fixture
def small_disk(tmp_path: Path, record_property) -> Iterator[tuple[Path, dict[str, str], Callable[[], None]]]:
    """A folder on a disk with about FREE_BYTES free, the environment that runs `_SMALL_SEGMENTS_RUN` on it, and a
    function that frees the space. A tmpfs filled by a ballast file where one can be mounted, else an ENOSPC
    injected into h5py (the test's id does not say which: `record_property` and the printed line do)."""
    record_property("small_disk", SMALL_DISK)
    print(f"full disk: {SMALL_DISK}")
    folder = tmp_path / "disk"
    folder.mkdir()
    environment = {**ENVIRONMENT, "ELMO_TEST_SEGMENT_BYTES": "200000"}
    if SMALL_DISK == "injected ENOSPC":
        environment["ELMO_TEST_ENOSPC_AFTER"] = "120"  # the 50 empty lines come first
        yield folder, environment, lambda: None  # the resumed run is elmo-embed itself, without the injection
        return
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=32m", "tmpfs", str(folder)], check=True)
    try:
        ballast = folder / "ballast"
        ballast.write_bytes(b"\0" * (shutil.disk_usage(folder).free - FREE_BYTES))
        yield folder, environment, ballast.unlink
    finally:
        subprocess.run(["umount", str(folder)], check=True)


@pytest.mark.parametrize("compression", ["none", "gzip", "lzf"])
@pytest.mark.slow
def test_a_full_disk_ends_in_one_line_and_resumes_to_the_same_file(
    compression: str, small_disk: tuple[Path, dict[str, str], Callable[[], None]], tmp_path: Path
) -> None:
    """300 lines of the default model's vectors (26 MB with the merge, uncompressed) on a disk with 2 MB free: one
    line naming what is safe and the command to resume, exit status 2 (no h5py traceback, no crash: compressed, the
    chunks waited in HDF5's chunk cache and failed to write when h5py freed the dataset, printing a hundred
    tracebacks, then the process crashed); once space is freed that very command finishes the file, equal to the
    uninterrupted run's."""
    folder, environment, free_space = small_disk
    source = _write_lines(tmp_path / "in.txt", EXAMPLE_LINES * 50)
    output = folder / "out.hdf5"
    partial = Path(f"{output}.partial")
    args = [str(source), str(output), "--batch-size", "8", "--no-space-check", "--compression", compression]
    failed = subprocess.run(
        [sys.executable, "-c", _SMALL_SEGMENTS_RUN, *args], env=environment, capture_output=True, text=True
    )
    assert failed.returncode == 2, failed.stderr[-3000:]
    stored = _stored_lines(partial)
    resume_command = ["elmo-embed", *args, "--resume"]
    assert failed.stderr == (
        f"elmo-embed: error: {partial}: the disk is full (No space left on device): {len(stored)} of 300 lines are"
        f" safely stored; free some space and rerun with --resume: {shlex.join(resume_command)}\n"
    )
    assert 0 < len(stored) < 300 and not output.exists()
    assert not list(partial.glob(".*")), "the segment being written when the disk filled is removed"
    assert not Path(f"{output}.lock").exists()

    free_space()
    resumed = subprocess.run([ELMO_EMBED, *resume_command[1:]], env=ENVIRONMENT, capture_output=True, text=True)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert f"resumed: {len(stored)} lines were already in out.hdf5.partial" in resumed.stdout
    assert not partial.exists()
    with h5py.File(output, "r") as file:
        assert file.attrs["elmo_embed_command"] == shlex.join(["elmo-embed", *args]), "the command that started it"
    uninterrupted = tmp_path / "uninterrupted.hdf5"
    clean = subprocess.run(
        [ELMO_EMBED, str(source), str(uninterrupted), *args[2:]], env=ENVIRONMENT, capture_output=True
    )
    assert clean.returncode == 0
    _assert_same_datasets(output, uninterrupted)


@pytest.mark.parametrize(("tokenize", "words"), [(False, 100), (True, 1000)])
def test_too_little_space_is_refused_before_writing(
    tokenize: bool, words: int, fixture_model_folder: Path, tmp_path: Path, capsys, monkeypatch
) -> None:
    """The estimate counts the words as the run splits them: 100 lines of 10 commas are 100 words, or 1,000 with
    --tokenize (the issue's 1.7M punctuation marks wrote 15.7 GB); each takes 3 x 32 float32 twice (segments and
    the merged file), plus the datasets' and the words' bytes."""
    source = _write_lines(tmp_path / "in.txt", [",,,,,,,,,,"] * 100)
    monkeypatch.setattr(shutil, "disk_usage", lambda path: shutil._ntuple_diskusage(10**9, 0, 1000))
    args = [str(source), str(tmp_path / "out.hdf5"), "--model", str(fixture_model_folder)]
    code = main([*args, *(["--tokenize"] if tokenize else [])])
    err = capsys.readouterr().err
    # 2 x (words x 384 bytes + 100 datasets x 400 + the JSON words, 50 bytes a line) + 100 x (10 + 12) for
    # sentence_to_index.
    needed = {False: "159.0 KB", True: "860.2 KB"}[tokenize]
    assert code == 2 and err == (
        f"elmo-embed: error: {tmp_path / 'out.hdf5'}: the vectors of {words:,} words (stored in segments, then merged"
        f" into one file) need about {needed}, but {tmp_path} has 1.0 KB free: free some space, write elsewhere,"
        " or pass --no-space-check to try anyway\n"
    )
    assert sorted(path.name for path in tmp_path.iterdir()) == ["in.txt"], "nothing is written"


@pytest.mark.slow
def test_a_killed_run_resumes_to_the_same_file(fixture_model_folder: Path, tmp_path: Path) -> None:
    """SIGKILL once segments are stored: the segment being written is lost (and removed by the next run), the
    stored ones are kept, and --resume ends in the uninterrupted run's datasets, bit for bit."""
    source = _write_lines(tmp_path / "in.txt", LINES * 300)
    output = tmp_path / "out.hdf5"
    partial = Path(f"{output}.partial")
    args = [str(source), str(output), "--model", str(fixture_model_folder), "--batch-size", "8", "--max-words", "4"]
    environment = {**ENVIRONMENT, "ELMO_TEST_SEGMENT_BYTES": "20000"}
    run = subprocess.Popen([sys.executable, "-c", _SMALL_SEGMENTS_RUN, *args], env=environment, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 120
    while len(list(partial.glob("lines-*.hdf5"))) < 3:
        assert run.poll() is None and time.monotonic() < deadline, "the run ended before it could be killed"
        time.sleep(0.01)
    run.kill()
    run.wait()
    stored = _stored_lines(partial)
    assert 0 < len(stored) < len(LINES) * 300
    resumed = subprocess.run([ELMO_EMBED, *args, "--resume"], env=ENVIRONMENT, capture_output=True, text=True)
    assert resumed.returncode == 0, resumed.stderr
    assert f"resumed: {len(stored):,} lines were already in out.hdf5.partial" in resumed.stdout
    uninterrupted = tmp_path / "uninterrupted.hdf5"
    assert subprocess.run([ELMO_EMBED, str(source), str(uninterrupted), *args[2:]], env=ENVIRONMENT).returncode == 0
    _assert_same_datasets(output, uninterrupted)


def test_the_file_records_how_it_was_made(reference_file: Path, fixture_model_folder: Path) -> None:
    """Root attributes (readers of AllenNLP's layout ignore them): the model and its weights' sha256, the dtypes,
    the layers, the stored dtype and filter, the package version and the command line."""
    with h5py.File(reference_file, "r") as file:
        attributes = dict(file.attrs)
    weights = hashlib.sha256((fixture_model_folder / "model.safetensors").read_bytes()).hexdigest()
    command = ["elmo-embed", str(reference_file.with_name("in.txt")), str(reference_file)]
    assert attributes == {
        "elmo_embed_model": str(fixture_model_folder.resolve()),
        "elmo_embed_backend": "pytorch",
        "elmo_embed_model_sha256": weights,
        "elmo_embed_compute_dtype": "float32",
        "elmo_embed_layers": "all",
        "elmo_embed_normalization": "none",
        "elmo_embed_storage_dtype": "float32",
        "elmo_embed_compression": "none",
        "elmo_embed_version": importlib.metadata.version("elmo-transformers"),
        "elmo_embed_command": shlex.join([*command, "--model", str(fixture_model_folder), "--batch-size", "1"]),
    }


# main() given $ELMO_TEST_ARGV (JSON) in a fresh interpreter; prints the heavy modules it had imported on exit.
_MODULES_AFTER_MAIN = textwrap.dedent(
    """
    import json, os, sys
    from elmo_transformers.inference.embed import main
    try:
        main(json.loads(os.environ["ELMO_TEST_ARGV"]))
    except SystemExit:
        pass
    print(json.dumps(sorted({"torch", "transformers", "h5py", "numpy"} & set(sys.modules))))
    """
)


@pytest.mark.parametrize(
    ("argv", "output"),
    [(["--help"], "usage: elmo-embed"), (["in.txt"], "the following arguments are required: OUT")],
    ids=["help", "argument error"],
)
def test_help_and_argument_errors_do_not_load_torch(argv: list[str], output: str) -> None:
    environment = {**ENVIRONMENT, "ELMO_TEST_ARGV": json.dumps(argv)}
    completed = subprocess.run(
        [sys.executable, "-c", _MODULES_AFTER_MAIN], env=environment, capture_output=True, text=True, check=True
    )
    assert output in completed.stdout + completed.stderr
    assert completed.stdout.splitlines()[-1] == "[]", "no torch, transformers, h5py or numpy for --help"


class _InterruptWhenFreed:
    """Sends this process SIGINT when freed, so that Python raises the KeyboardInterrupt inside `__del__`, as it
    does inside h5py's weakref callbacks, where it can only be printed ("Exception ignored")."""

    def __del__(self) -> None:
        os.kill(os.getpid(), signal.SIGINT)
        for _ in range(1000):  # the handler runs at a bytecode boundary, still in here
            pass


def test_ctrl_c_during_the_merge_stops_the_run(
    fixture_model_folder: Path, tmp_path: Path, capsys: pytest.CaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A Ctrl-C while h5py freed an object was swallowed in 2 of 3 tries: the merge went on and the run exited 0.
    Now it stops the run (exit 130, OUT.partial kept) and --resume merges again."""
    source = _write_lines(tmp_path / "in.txt", LINES * 3)
    output = tmp_path / "out.hdf5"
    args = [str(source), str(output), "--model", str(fixture_model_folder)]
    copy = h5py.Group.copy
    copies = []

    def copy_then_interrupt(self, *arguments, **options):
        copies.append(1)
        if len(copies) == 3:
            _InterruptWhenFreed()
        return copy(self, *arguments, **options)

    monkeypatch.setattr(h5py.Group, "copy", copy_then_interrupt)
    assert main(args) == 130
    partial = Path(f"{output}.partial")
    assert capsys.readouterr().err.endswith(
        f"elmo-embed: interrupted: {partial} keeps the finished lines; rerun with --resume\n"
    )
    assert not output.exists() and len(copies) == 3 and not list(partial.glob(".*")), "the merged file is removed"
    monkeypatch.undo()
    assert main([*args, "--resume"]) == 0
    uninterrupted = tmp_path / "uninterrupted.hdf5"
    assert main([str(source), str(uninterrupted), *args[2:]]) == 0
    _assert_same_datasets(output, uninterrupted)


def test_a_segment_is_closed_and_synced_before_its_final_name(
    fixture_model_folder: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Only a renamed segment counts as stored: renamed while still open or unsynced, a crash could leave a segment
    whose name says done and whose content is not on disk."""
    events: list[tuple[str, tuple[int, int]]] = []  # (what, the file's device and inode)
    fsync, rename = os.fsync, Path.rename

    def recording_fsync(descriptor: int) -> None:
        events.append(("sync", _file_identity(os.fstat(descriptor))))
        fsync(descriptor)

    def recording_rename(self: Path, target: Path) -> Path:
        if self.name.startswith(".segment-"):
            open_files = {
                Path(os.fsdecode(file.name)).name for file in h5py.h5f.get_obj_ids(h5py.h5f.OBJ_ALL, h5py.h5f.OBJ_FILE)
            }
            events.append(("rename, open" if self.name in open_files else "rename", _file_identity(self.stat())))
        return rename(self, target)

    main_runs_with(monkeypatch, limits=EmbedLimits(segment_bytes=1))  # a segment per batch
    monkeypatch.setattr(os, "fsync", recording_fsync)
    monkeypatch.setattr(Path, "rename", recording_rename)
    source = _write_lines(tmp_path / "in.txt", LINES * 3)
    assert (
        main([str(source), str(tmp_path / "out.hdf5"), "--model", str(fixture_model_folder), "--batch-size", "4"]) == 0
    )
    renamed = [name for event, name in events if event.startswith("rename")]
    assert len(renamed) > 2 and all(event != "rename, open" for event, _ in events), events
    for segment in renamed:
        assert events.index(("sync", segment)) < events.index(("rename", segment)), "a segment renamed unsynced"


def _file_identity(status: os.stat_result) -> tuple[int, int]:
    return status.st_dev, status.st_ino


def _interrupt_after_writes(monkeypatch: pytest.MonkeyPatch, writes: int) -> None:
    """Ctrl-C (a KeyboardInterrupt) before the run's write number `writes` + 1 (of a line, or of a piece of one),
    one segment per batch."""
    main_runs_with(monkeypatch, limits=EmbedLimits(segment_bytes=1))
    write = segment_store.SegmentStore.write
    done: list[int] = []

    def interrupting_write(self, *args, **kwargs) -> None:
        if len(done) == writes:
            raise KeyboardInterrupt
        done.append(1)
        write(self, *args, **kwargs)

    monkeypatch.setattr(segment_store.SegmentStore, "write", interrupting_write)


def _flip_vector_bytes(segment: Path) -> None:
    """Flip 64 bytes inside the vectors of the segment's largest line: the file still opens and reads, with other
    values."""
    with h5py.File(segment, "r") as file:
        name = max((name for name in file if name.isdigit()), key=lambda name: file[name].size)
        offset = file[name].id.get_offset()
    with open(segment, "r+b") as stored:
        stored.seek(offset)
        flipped = bytes(byte ^ 0xFF for byte in stored.read(64))
        stored.seek(offset)
        stored.write(flipped)


def test_a_damaged_segment_is_embedded_again_on_resume(
    reference_file: Path, fixture_model_folder: Path, tmp_path: Path, capsys, monkeypatch: pytest.MonkeyPatch
) -> None:
    """64 bytes flipped in a stored segment of an interrupted run passed --resume (exit 0, vectors off by up to 421):
    each segment's name records its sha256, compared on resuming; a damaged segment (or one without a recorded
    checksum) is removed with a warning and its lines are embedded again, to the uninterrupted run's file."""
    source = _write_lines(tmp_path / "in.txt", LINES)
    output = tmp_path / "out.hdf5"
    partial = Path(f"{output}.partial")
    args = [str(source), str(output), "--model", str(fixture_model_folder), "--batch-size", "1"]
    _interrupt_after_writes(monkeypatch, 5)
    assert main(args) == 130
    monkeypatch.undo()
    damaged, unnamed, *_ = sorted(partial.glob("lines-*.hdf5"), key=lambda path: -path.stat().st_size)
    _flip_vector_bytes(damaged)
    actual, recorded = hashlib.sha256(damaged.read_bytes()).hexdigest(), damaged.stem.rsplit("-", 1)[1]
    unrecorded = unnamed.with_name(unnamed.stem.rsplit("-", 1)[0] + ".hdf5")  # lines-FIRST-LAST.hdf5
    unnamed.rename(unrecorded)
    capsys.readouterr()
    assert main([*args, "--resume"]) == 0
    warnings = [line for line in capsys.readouterr().err.splitlines() if "warning" in line]
    assert sorted(warnings) == sorted(
        [
            f"elmo-embed: warning: {damaged} is damaged: its sha256 is {actual[:16]}..., its name records"
            f" {recorded[:16]}...: removed, its lines are embedded again",
            f"elmo-embed: warning: {unrecorded} records no sha256 in its name (lines-FIRST-LAST-SHA256.hdf5):"
            " removed, its lines are embedded again",
        ]
    )
    _assert_close_datasets(output, reference_file)


@pytest.mark.parametrize("output_format", ["hdf5", "datasets"])
def test_a_segment_damaged_before_the_merge_stops_the_run_in_one_line(
    output_format: str,
    reference_file: Path,
    fixture_model_folder: Path,
    tmp_path: Path,
    capsys,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The merge compares each segment's checksum as it first reads it: a damaged one stops the run in one line
    naming it (the output is not written), and --resume embeds its lines again."""
    source = _write_lines(tmp_path / "in.txt", LINES)
    output = tmp_path / "out"
    partial = Path(f"{output}.partial")
    args = [str(source), str(output), "--model", str(fixture_model_folder), "--batch-size", "1"]
    args += ["--format", output_format]
    main_runs_with(monkeypatch, limits=EmbedLimits(segment_bytes=1))
    store_all = segment_store.SegmentStore.store_all
    damaged: list[Path] = []

    def store_all_then_damage(self, lines: int) -> None:
        store_all(self, lines)
        if not damaged:
            damaged.append(max(partial.glob("lines-*.hdf5"), key=lambda path: path.stat().st_size))
            _flip_vector_bytes(damaged[0])

    monkeypatch.setattr(segment_store.SegmentStore, "store_all", store_all_then_damage)
    assert main(args) == 2
    error = capsys.readouterr().err
    actual = hashlib.sha256(damaged[0].read_bytes()).hexdigest()
    assert error == (
        f"elmo-embed: error: {damaged[0]} is damaged: its sha256 is {actual[:16]}..., its name records"
        f" {damaged[0].stem.rsplit('-', 1)[1][:16]}...: rerun with --resume, which removes it and embeds its lines"
        f" again: {shlex.join(['elmo-embed', *args, '--resume'])}\n"
    )
    assert not output.exists() and not list(partial.glob(".merged-*")), "no output, no merged file left"
    assert main([*args, "--resume"]) == 0
    assert f"elmo-embed: warning: {damaged[0]} is damaged" in capsys.readouterr().err
    if output_format == "hdf5":
        _assert_close_datasets(output, reference_file)


@pytest.mark.parametrize("output_format", ["hdf5", "datasets"])
def test_ctrl_c_once_the_output_is_published_says_it_is_complete(
    output_format: str, fixture_model_folder: Path, tmp_path: Path, capsys, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A Ctrl-C while OUT.partial was being removed, after OUT was published, said "OUT.partial keeps the finished
    lines; rerun with --resume", which then refused (OUT exists), and the partial stayed. Now the removal is
    finished and the one line says the output is complete."""
    source = _write_lines(tmp_path / "in.txt", LINES)
    output = tmp_path / "out"
    partial = Path(f"{output}.partial")
    rmtree = shutil.rmtree

    def interrupted_rmtree(path, *arguments, **options) -> None:
        if Path(path) == partial:
            os.kill(os.getpid(), signal.SIGINT)  # Python raises it at the next bytecode boundary: here
        rmtree(path, *arguments, **options)

    monkeypatch.setattr(shutil, "rmtree", interrupted_rmtree)
    try:
        code = main([str(source), str(output), "--model", str(fixture_model_folder), "--format", output_format])
    except KeyboardInterrupt:
        pytest.fail("the interrupt escaped as a traceback")
    assert (code, capsys.readouterr().err) == (
        130,
        f"elmo-embed: interrupted: {output} is complete (every line is written; {partial.name} is removed):"
        " nothing is lost\n",
    )
    assert output.exists() and not partial.exists()


def test_ctrl_c_while_leaving_the_process_group_says_the_output_is_complete(
    reference_file: Path, fixture_model_folder: Path, tmp_path: Path, capsys, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ctrl-C in the last half-second, as the run left its process group, was a KeyboardInterrupt traceback from
    `leave_process_group`, though the file was complete: now one line (the group is left first)."""
    from elmo_transformers.common import processes

    left: list[str] = []

    def interrupted_collect() -> int:
        os.kill(os.getpid(), signal.SIGINT)
        left.append("collected")
        return 0

    from accelerate import PartialState

    monkeypatch.setattr(processes, "launched", lambda: True)  # (a process of `accelerate launch`, which has a group)
    monkeypatch.setattr(gc, "collect", interrupted_collect)
    destroy = PartialState.destroy_process_group
    monkeypatch.setattr(PartialState, "destroy_process_group", lambda self: left.append("destroyed") or destroy(self))
    source = _write_lines(tmp_path / "in.txt", LINES)
    output = tmp_path / "out.hdf5"
    try:
        code = main([str(source), str(output), "--model", str(fixture_model_folder), "--batch-size", "1"])
    except KeyboardInterrupt:
        pytest.fail("the interrupt escaped as a traceback")
    assert (code, capsys.readouterr().err.splitlines()[-1]) == (
        130,
        f"elmo-embed: interrupted: {output} is complete (every line is written; out.hdf5.partial is removed):"
        " nothing is lost",
    )
    assert left == ["collected", "destroyed"], "the group is left whole"
    _assert_close_datasets(output, reference_file)
