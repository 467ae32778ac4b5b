"""SHA256SUMS read as `sha256sum -c` reads it, and a folder compared with it before use (`model_folder_problem`,
which the converters, `elmo-embed` and pretraining share). GNU `sha256sum` itself, where it is installed, is the
reference for which lines are checksum lines."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tracemalloc
from collections.abc import Callable
from pathlib import Path

import pytest

from elmo_transformers.common.checksums import (
    checksum_problem,
    file_sha256,
    folder_checksum_problem,
    record_checksums,
    recorded_names,
)
from elmo_transformers.common.model_folder import model_folder_problem

WEIGHTS = "model.safetensors"
SHA256SUM = shutil.which("sha256sum")
# Each way of writing a checksum line that `sha256sum -c --strict` accepts: (hash, name) -> the record's text.
ACCEPTED_FORMS: dict[str, Callable[[str, str], str]] = {
    "text": lambda sha256, name: f"{sha256}  {name}\n",
    "binary": lambda sha256, name: f"{sha256} *{name}\n",
    "upper-case hash": lambda sha256, name: f"{sha256.upper()}  {name}\n",
    "./ name": lambda sha256, name: f"{sha256}  ./{name}\n",
    "BSD (--tag)": lambda sha256, name: f"SHA256 ({name}) = {sha256}\n",
    "BSD, upper-case hash": lambda sha256, name: f"SHA256 ({name}) = {sha256.upper()}\n",
    "BSD without spaces": lambda sha256, name: f"SHA256({name})={sha256}\n",
    "one space": lambda sha256, name: f"{sha256} {name}\n",
    "a tab": lambda sha256, name: f"{sha256}\t{name}\n",
    "leading spaces": lambda sha256, name: f"  {sha256}  {name}\n",
    "CRLF": lambda sha256, name: f"{sha256}  {name}\r\n",
    "no final newline": lambda sha256, name: f"{sha256}  {name}",
    "comment and empty lines": lambda sha256, name: f"# written by hand\n\n{sha256}  {name}\n\n",
    "escaped (backslash first)": lambda sha256, name: f"\\{sha256}  {name}\n",
}
# Lines that `sha256sum -c --strict` calls improperly formatted (`sha256sum -c` warns and skips them).
BAD_LINES: dict[str, Callable[[str], str]] = {
    "words": lambda sha256: "these are the weights",
    "63 hex digits": lambda sha256: f"{sha256[:-1]}  x",
    "65 hex digits": lambda sha256: f"{sha256}0  x",
    "not hex": lambda sha256: f"{sha256[:-1]}g  x",
    "only spaces": lambda sha256: "   ",
    "another algorithm": lambda sha256: f"MD5 (x) = {sha256}",
    "BSD without =": lambda sha256: f"SHA256 (x) {sha256}",
    "an unknown escape": lambda sha256: f"\\{sha256}  x\\q",
}


def _copy(folder: Path, destination: Path) -> Path:
    return Path(shutil.copytree(folder, destination))


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _flip_a_byte(path: Path) -> None:
    """A bit of the last weight's lowest byte (little-endian float32): the file loads and computes finite values."""
    data = bytearray(path.read_bytes())
    data[-4] ^= 0x01
    path.write_bytes(bytes(data))


def _gnu_check(folder: Path) -> subprocess.CompletedProcess:
    return subprocess.run([SHA256SUM, "--strict", "-c", "SHA256SUMS"], cwd=folder, capture_output=True, text=True)


@pytest.mark.parametrize("form", ACCEPTED_FORMS)
def test_each_form_that_sha256sum_reads_is_compared(fixture_model_folder: Path, tmp_path: Path, form: str) -> None:
    """Upper-case hashes, `./` names and the BSD form were ignored, and damaged weights embedded (off by up to 17)."""
    folder = _copy(fixture_model_folder, tmp_path / "model")
    weights = folder / WEIGHTS
    expected = _sha256(weights)
    (folder / "SHA256SUMS").write_text(ACCEPTED_FORMS[form](expected, WEIGHTS), encoding="utf-8", newline="")
    if SHA256SUM:
        assert _gnu_check(folder).returncode == 0, "sha256sum -c --strict reads the form"
    assert model_folder_problem(folder) is None
    _flip_a_byte(weights)
    assert model_folder_problem(folder) == (
        f"{weights}: its sha256 is {_sha256(weights)[:16]}..., but SHA256SUMS records {expected[:16]}...: the file"
        " is damaged; copy, convert or download the folder again (or, for a file changed on purpose, write its new"
        " sha256 into SHA256SUMS: sha256sum FILE)"
    )


@pytest.mark.parametrize("bad", BAD_LINES)
def test_a_line_that_sha256sum_cannot_read_is_refused_with_its_number(
    fixture_model_folder: Path, tmp_path: Path, bad: str
) -> None:
    """Such a line was skipped in silence, and with it the check of the file it was meant to record."""
    folder = _copy(fixture_model_folder, tmp_path / "model")
    record = folder / "SHA256SUMS"
    sha256 = _sha256(folder / WEIGHTS)
    record.write_text(f"{sha256}  {WEIGHTS}\n{BAD_LINES[bad](sha256)}\n", encoding="utf-8")
    if SHA256SUM:
        assert "1 line is improperly formatted" in _gnu_check(folder).stderr, "sha256sum -c --strict refuses it too"
    assert model_folder_problem(folder) == (
        f"{record}: line 2 is not a checksum line (expected 'HASH  NAME' or 'SHA256 (NAME) = HASH', as sha256sum"
        " writes them): correct it or record the folder again; copy, convert or download the folder again (or, for a"
        " file changed on purpose, write its new sha256 into SHA256SUMS: sha256sum FILE)"
    )


@pytest.mark.parametrize("name", ["../model.safetensors", "/etc/hostname", ".", "sub/../../model.safetensors"])
def test_a_name_outside_the_folder_is_refused(fixture_model_folder: Path, tmp_path: Path, name: str) -> None:
    folder = _copy(fixture_model_folder, tmp_path / "model")
    record = folder / "SHA256SUMS"
    record.write_text(f"{'0' * 64}  {name}\n", encoding="utf-8")
    problem = model_folder_problem(folder)
    assert problem.startswith(f"{record}: line 1 names {name!r}, which is not a file inside {folder}; ")


def test_a_recorded_file_that_is_missing_is_refused(fixture_model_folder: Path, tmp_path: Path) -> None:
    folder = _copy(fixture_model_folder, tmp_path / "model")
    (folder / "vocab.txt").write_text("", encoding="utf-8")  # (the fixture has no vocabulary: one is recorded)
    with open(folder / "SHA256SUMS", "a", encoding="utf-8") as record:
        record.write(f"{_sha256(folder / 'vocab.txt')}  vocab.txt\n")
    assert model_folder_problem(folder) is None
    (folder / "vocab.txt").unlink()
    assert model_folder_problem(folder).startswith(
        f"{folder / 'vocab.txt'}: SHA256SUMS records it, but it is missing: the folder is incomplete; "
    )


def test_a_file_recorded_twice_with_two_hashes_is_refused(fixture_model_folder: Path, tmp_path: Path) -> None:
    folder = _copy(fixture_model_folder, tmp_path / "model")
    record = folder / "SHA256SUMS"
    sha256 = _sha256(folder / WEIGHTS)
    record.write_text(f"{sha256}  {WEIGHTS}\nSHA256 (./{WEIGHTS}) = {'0' * 64}\n", encoding="utf-8")
    assert model_folder_problem(folder).startswith(f"{record}: line 2 records {WEIGHTS} again, with another sha256; ")


def test_a_record_of_no_file_is_refused(fixture_model_folder: Path, tmp_path: Path) -> None:
    """sha256sum -c: "no properly formatted checksum lines found"."""
    folder = _copy(fixture_model_folder, tmp_path / "model")
    record = folder / "SHA256SUMS"
    record.write_text("# nothing\n\n", encoding="utf-8")
    assert model_folder_problem(folder).startswith(f"{record}: records no file (no checksum line); ")


def test_a_huge_record_is_refused_without_being_read(fixture_model_folder: Path, tmp_path: Path) -> None:
    """A 225 MB SHA256SUMS was read whole (+608 MB); it is refused, and the check's memory stays under 1 MiB."""
    folder = _copy(fixture_model_folder, tmp_path / "model")
    record = folder / "SHA256SUMS"
    with open(record, "ab") as file:
        file.truncate(225 << 20)  # sparse: no disk taken
    tracemalloc.start()
    try:
        problem = model_folder_problem(folder)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert problem.startswith(
        f"{record}: over 1 MiB, more than a record of a folder's files holds: not read; remove it or record the folder"
        " again; "
    )
    assert peak < 1 << 20, f"{peak:,} bytes"


# Imports the module in a fresh Python and prints the non-standard-library modules that came with it.
_IMPORTED_MODULES = """
import sys
before = set(sys.modules)
import elmo_transformers.common.checksums
added = {name.split(".")[0] for name in set(sys.modules) - before}
print(sorted(added - set(sys.stdlib_module_names) - {"elmo_transformers"}))
"""


def test_the_check_imports_the_standard_library_alone() -> None:
    """The ONNX path of elmo-embed runs without torch and transformers, and imports it."""
    completed = subprocess.run([sys.executable, "-c", _IMPORTED_MODULES], capture_output=True, text=True, check=True)
    assert completed.stdout == "[]\n"


def test_awkward_names_are_recorded_as_sha256sum_writes_them(tmp_path: Path) -> None:
    """Backslashes and line breaks are escaped (the line marked by a backslash first), others kept as they are:
    sha256sum's own record of the same files is the reference, and each record reads back."""
    names = ["plain.txt", "back\\slash", "line\nbreak", "carriage\rreturn", "café ☕.json", "sub/inner.txt"]
    (tmp_path / "sub").mkdir()
    for index, name in enumerate(names):
        (tmp_path / name).write_bytes(b"x" * index)
    record_checksums(tmp_path)
    assert folder_checksum_problem(tmp_path) is None
    (tmp_path / "line\nbreak").write_bytes(b"other")
    assert folder_checksum_problem(tmp_path).startswith(f"{tmp_path / 'line'}\nbreak: its sha256 is ")
    (tmp_path / "line\nbreak").write_bytes(b"x" * 2)
    if SHA256SUM:
        listed = subprocess.run([SHA256SUM, *sorted(names)], cwd=tmp_path, capture_output=True, check=True).stdout
        assert (tmp_path / "SHA256SUMS").read_bytes() == listed
        assert _gnu_check(tmp_path).returncode == 0


# Prints `folder_checksum_problem` of the folder argv[1], in a Python of its own: a check that blocks on a FIFO or
# hashes /dev/zero forever is ended by the test's timeout instead of hanging the suite.
_CHECK_FOLDER = """
import sys
from pathlib import Path
from elmo_transformers.common.checksums import folder_checksum_problem
print(folder_checksum_problem(Path(sys.argv[1])))
"""


def _checked_apart(folder: Path) -> str:
    try:
        completed = subprocess.run(
            [sys.executable, "-c", _CHECK_FOLDER, str(folder)], capture_output=True, text=True, timeout=20
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"the check of {folder} hung")
    assert completed.returncode == 0, completed.stderr
    return completed.stdout.removesuffix("\n")


def _record(folder: Path, lines: str) -> Path:
    record = folder / "SHA256SUMS"
    record.write_text(lines, encoding="utf-8")
    return record


def test_a_recorded_fifo_is_refused_without_waiting_on_it(tmp_path: Path) -> None:
    """Opening a FIFO for reading waited for a writer that never came."""
    os.mkfifo(tmp_path / "pipe")
    _record(tmp_path, f"{'0' * 64}  pipe\n")
    assert _checked_apart(tmp_path) == (
        f"{tmp_path / 'pipe'}: SHA256SUMS records it, but it cannot be read (not a regular file but a FIFO (named"
        " pipe))"
    )


def test_a_record_that_is_a_fifo_is_refused_without_waiting_on_it(tmp_path: Path) -> None:
    """The 1 MiB cap was checked after the open, which waited for a writer."""
    os.mkfifo(tmp_path / "SHA256SUMS")
    assert _checked_apart(tmp_path) == (
        f"{tmp_path / 'SHA256SUMS'}: not a regular file but a FIFO (named pipe); only regular files are read: remove"
        " it, or record the folder again"
    )


def test_a_link_out_of_the_folder_is_not_followed(tmp_path: Path) -> None:
    """A link named by the record made the package hash any file on the machine (and print the start of its
    hash), or read /dev/zero forever."""
    folder = tmp_path / "model"
    folder.mkdir()
    secret = tmp_path / "secret"
    secret.write_bytes(b"not the folder's")
    (folder / "leak").symlink_to(secret)
    (folder / "zero").symlink_to("/dev/zero")
    for name, target in (("leak", secret), ("zero", Path("/dev/zero"))):
        _record(folder, f"{'0' * 64}  {name}\n")
        problem = _checked_apart(folder)
        assert problem == (
            f"{folder / 'SHA256SUMS'}: records {name!r}, which links to {target}, outside {folder}: not read;"
            " copy the file into the folder, or record the folder again"
        )
        assert _sha256(secret)[:16] not in problem


def test_a_link_inside_the_folder_and_the_hub_cache_layout_are_followed(tmp_path: Path) -> None:
    """What a link inside the folder names is compared; so is a Hugging Face cache snapshot, whose files link to
    its repository's blobs/."""
    folder = tmp_path / "model"
    (folder / "sub").mkdir(parents=True)
    (folder / "sub" / "weights").write_bytes(b"w")
    (folder / "alias").symlink_to("sub/weights")
    _record(folder, f"{_sha256(folder / 'sub' / 'weights')}  alias\n")
    assert folder_checksum_problem(folder) is None
    repository = tmp_path / "models--someone--elmo"
    snapshot = repository / "snapshots" / "0123abcd"
    snapshot.mkdir(parents=True)
    (repository / "blobs").mkdir()
    (repository / "blobs" / "ab12").write_bytes(b"w")
    (snapshot / "weights").symlink_to("../../blobs/ab12")
    _record(snapshot, f"{_sha256(folder / 'sub' / 'weights')}  weights\n")
    assert folder_checksum_problem(snapshot) is None
    (repository / "blobs" / "ab12").write_bytes(b"x")
    assert folder_checksum_problem(snapshot).startswith(f"{snapshot / 'weights'}: its sha256 is ")


def test_a_name_with_a_nul_byte_is_refused_in_one_line(tmp_path: Path) -> None:
    """os.stat raised ValueError (embedded null byte), a traceback."""
    record = tmp_path / "SHA256SUMS"
    record.write_bytes(b"0" * 64 + b"  a\0b\n")
    assert folder_checksum_problem(tmp_path) == (
        f"{record}: line 1 names 'a\\x00b', which holds a NUL byte: no file is named so"
    )


def test_a_backslash_in_a_name_is_literal_unless_the_line_starts_with_one(tmp_path: Path) -> None:
    """`sha256sum -c` reads `HASH  a\\nb` as the file `a\\nb` (backslash, n): unescaping every name would read a
    line break there and call the file missing. (sha256sum itself is the reference where it is installed.)"""
    name = "a\\nb"
    (tmp_path / name).write_bytes(b"literal")
    _record(tmp_path, f"{_sha256(tmp_path / name)}  {name}\n")
    if SHA256SUM:
        assert _gnu_check(tmp_path).returncode == 0
    assert folder_checksum_problem(tmp_path) is None
    (tmp_path / name).write_bytes(b"changed")
    assert folder_checksum_problem(tmp_path).startswith(f"{tmp_path / name}: its sha256 is ")


def test_links_are_not_recorded(tmp_path: Path) -> None:
    """The bundled model's page folder links its code files to the package's modules, which change with the
    package: recording them would call every later package's folder damaged (and follow a link out)."""
    outside = tmp_path / "modeling.py"
    outside.write_text("code", encoding="utf-8")
    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "config.json").write_text("{}", encoding="utf-8")
    (folder / "modeling.py").symlink_to(outside)
    (folder / "same.json").symlink_to("config.json")
    record_checksums(folder)
    assert recorded_names(folder) == ["config.json"]
    assert (folder / "SHA256SUMS").read_text(encoding="utf-8") == f"{_sha256(folder / 'config.json')}  config.json\n"


def test_a_record_that_leaves_out_the_weights_is_refused(fixture_model_folder: Path, tmp_path: Path) -> None:
    """Such a record compared nothing of the weights: every record written lists them, so it is itself damage."""
    folder = _copy(fixture_model_folder, tmp_path / "model")
    record = _record(folder, f"{_sha256(folder / 'config.json')}  config.json\n")
    expected = (
        f"{folder / WEIGHTS}: {record} does not record it, though every record written lists it: the record is damaged"
    )
    assert model_folder_problem(folder).startswith(f"{expected}; ")
    assert checksum_problem(folder / WEIGHTS, file_sha256(folder / WEIGHTS)) == expected


def test_only_regular_files_are_hashed(tmp_path: Path) -> None:
    """/dev/null hashed as an empty file (and /dev/zero forever, a FIFO: waiting; the record tests above)."""
    for path, kind in ((Path("/dev/null"), "a character device"), (tmp_path, "a folder")):
        with pytest.raises(OSError) as raised:
            file_sha256(path)
        assert str(raised.value) == f"{path}: not a regular file but {kind}; only regular files are read"
