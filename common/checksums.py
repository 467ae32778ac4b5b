"""SHA256SUMS: the record of a folder's files that every folder this package writes carries, and its check.

The record is in `sha256sum`'s format, so that `sha256sum -c SHA256SUMS` checks a folder without this package, and
it is read as `sha256sum -c` reads it: `HASH  NAME` (text) and `HASH *NAME` (binary), `HASH NAME`, the hash in
either case, names written `./NAME`, the BSD form `SHA256 (NAME) = HASH` (`sha256sum --tag`), a backslash before a
line whose name is escaped, comment lines (`#` first) and empty lines. A line that sha256sum would call improperly
formatted is refused here (with its number), not skipped: a record that names no file checks nothing.

A record never leads outside its folder: a name that leaves it (`../x`, `sub/../../x`, `/x`), or that reaches,
through a link, a file whose real path is outside the folder's real path, is refused before the file is opened (a
record from outside would otherwise have the package hash any file on the machine and print the start of its hash).
The one exception is the Hugging Face cache's own layout, a snapshot folder whose files link into its repository's
`blobs/`. Only regular files are hashed (a FIFO or /dev/zero named by a record is refused, never waited on).

Standard library only: the ONNX path of `elmo-embed`, which runs without torch and transformers, imports it.
"""

from __future__ import annotations

import hashlib
import os
import posixpath
import re
from collections.abc import Iterable
from pathlib import Path

from elmo_transformers.common.regular_files import NotARegularFile, TooBig, open_regular, read_regular

__all__ = [
    "CHECKSUMS_FILE",
    "CHECKSUM_WAY_ON",
    "MAX_CHECKSUMS_BYTES",
    "checksum_problem",
    "file_sha256",
    "folder_checksum_problem",
    "record_checksums",
    "recorded_names",
]

CHECKSUMS_FILE = "SHA256SUMS"
# A record this package writes holds a line of ~80 bytes per file, and a folder holds tens of files: a record over
# this is refused before it is read (a 225 MB one read whole took 608 MB).
MAX_CHECKSUMS_BYTES = 1 << 20
# The way on from a model folder whose files do not match its record (a checkpoint's is its own).
CHECKSUM_WAY_ON = (
    f"copy, convert or download the folder again (or, for a file changed on purpose, write its new sha256 into"
    f" {CHECKSUMS_FILE}: sha256sum FILE)"
)
# The model page is not recorded: the Hub's page editor rewrites it in place, and no command reads it.
_UNRECORDED = frozenset({CHECKSUMS_FILE, "README.md"})
_HEX = rb"[0-9a-fA-F]{64}"
_WHITE = b" \t"
_GNU_LINE = re.compile(rb"(?P<sha256>" + _HEX + rb")[ \t][ *]?(?P<name>.+)", re.DOTALL)
_BSD_LINE = re.compile(rb"SHA256 ?\((?P<name>.+)\)[ \t]*=[ \t]*(?P<sha256>" + _HEX + rb")", re.DOTALL)
_ESCAPES = {b"\\\\": b"\\", b"\\n": b"\n", b"\\r": b"\r"}


class _Unreadable(Exception):
    """A SHA256SUMS that cannot be read as `sha256sum -c` reads it; the message says where and why."""


class _BadLine(Exception):
    """A line that `sha256sum -c` calls improperly formatted."""


def file_sha256(path: str | Path) -> str:
    """The SHA-256 of a regular file (hex), read in 1 MiB blocks; `NotARegularFile` (an OSError) for a FIFO, a
    device or a folder, which would block or never end."""
    digest = hashlib.sha256()
    with open_regular(path) as file:
        for block in iter(lambda: file.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def recorded_names(folder: Path) -> list[str]:
    """What `record_checksums` records of `folder`: every file under it (its relative POSIX path), sorted, but the
    record itself, the model page (README.md) and links (the bundled model's code files link to the package's
    modules, which change with the package)."""
    names = []
    for root, _, files in os.walk(folder):
        for file in files:
            path = Path(root, file)
            name = path.relative_to(folder).as_posix()
            if not path.is_symlink() and path.is_file() and name not in _UNRECORDED:
                names.append(name)
    return sorted(names)


def record_checksums(folder: Path) -> None:
    """Write `folder/SHA256SUMS`, the sha256 of each of `recorded_names(folder)` as `sha256sum` writes it, replacing
    any older record (one copied from the folder it was made from). Call it once the folder's files are written."""
    lines = [_record_line(file_sha256(folder / name), name) for name in recorded_names(folder)]
    (folder / CHECKSUMS_FILE).write_bytes(b"".join(lines))


def _record_line(sha256: str, name: str) -> bytes:
    """`sha256sum`'s line for a file: a name holding a backslash or a line break is escaped, the line marked by a
    backslash first."""
    raw = os.fsencode(name)
    escaped = raw.replace(b"\\", b"\\\\").replace(b"\n", b"\\n").replace(b"\r", b"\\r")
    return (b"\\" if escaped != raw else b"") + f"{sha256}  ".encode() + escaped + b"\n"


def folder_checksum_problem(folder: Path, *, required: Iterable[str] = (), record_required: bool = False) -> str | None:
    """The line naming the first file that `folder/SHA256SUMS` records and that is missing, unreadable, outside the
    folder or has another sha256 (with both hashes, short), or the line of the record that cannot be read; None
    when every recorded file matches, or when the folder has no record (saved by save_pretrained, or by an older
    package) and `record_required` is False. A record that leaves out one of the names `required` (the files the
    caller reads: every record this package writes lists them) is refused too: it would compare nothing of them.
    The line states the problem; the caller adds the way on that fits what it reads."""
    try:
        recorded = _read_record(folder)
    except _Unreadable as problem:
        return str(problem)
    if recorded is None:
        return f"{folder / CHECKSUMS_FILE}: missing: the folder's files cannot be compared" if record_required else None
    return _unrecorded_problem(folder, recorded, required) or next(
        (problem for name, sha256 in recorded.items() if (problem := _recorded_file_problem(folder, name, sha256))),
        None,
    )


def _unrecorded_problem(folder: Path, recorded: dict[str, str], required: Iterable[str]) -> str | None:
    missing = next((name for name in required if name not in recorded), None)
    return None if missing is None else _not_recorded(folder / missing)


def _not_recorded(path: Path) -> str:
    return (
        f"{path}: {path.parent / CHECKSUMS_FILE} does not record it, though every record written lists it:"
        " the record is damaged"
    )


def checksum_problem(path: Path, sha256: str) -> str | None:
    """The line refusing the file `path` whose content has the checksum `sha256` when its folder's SHA256SUMS
    records another, cannot be read or leaves `path` out; None when they agree, or when there is no record."""
    try:
        recorded = _read_record(path.parent)
    except _Unreadable as problem:
        return str(problem)
    if recorded is None:
        return None
    expected = recorded.get(path.name)
    if expected is None:
        return _not_recorded(path)
    return None if expected == sha256 else _mismatch(path, sha256, expected)


def _recorded_file_problem(folder: Path, name: str, expected: str) -> str | None:
    """`_file_problem` of the file `name` records, once its real path is known to lie inside the folder."""
    path = folder / name
    if not _inside(folder, path):
        return (
            f"{folder / CHECKSUMS_FILE}: records {name!r}, which links to {os.path.realpath(path)}, outside"
            f" {folder}: not read; copy the file into the folder, or record the folder again"
        )
    return _file_problem(path, expected)


def _inside(folder: Path, path: Path) -> bool:
    """Whether the real path of `path` (links resolved) lies inside the real path of `folder`, or, for a snapshot
    folder of the Hugging Face cache (`REPO/snapshots/REVISION`), in its repository's `blobs/`, where the cache
    keeps the files its snapshots link to."""
    real_folder, real = Path(os.path.realpath(folder)), Path(os.path.realpath(path))
    if real_folder in real.parents:
        return True
    cache_blobs = Path(os.path.realpath(folder.parent.parent / "blobs"))
    return folder.parent.name == "snapshots" and real.parent == cache_blobs and real.parent.is_dir()


def _file_problem(path: Path, expected: str) -> str | None:
    try:
        actual = file_sha256(path)
    except FileNotFoundError:
        return f"{path}: {CHECKSUMS_FILE} records it, but it is missing: the folder is incomplete"
    except OSError as error:
        return f"{path}: {CHECKSUMS_FILE} records it, but it cannot be read ({error.strerror or error})"
    return None if actual == expected else _mismatch(path, actual, expected)


def _mismatch(path: Path, actual: str, expected: str) -> str:
    return (
        f"{path}: its sha256 is {actual[:16]}..., but {CHECKSUMS_FILE} records {expected[:16]}...: the file is damaged"
    )


def _read_record(folder: Path) -> dict[str, str] | None:
    """name (relative to `folder`, normalised) -> lower-case sha256, as `folder/SHA256SUMS` records them; None when
    there is no record. Refuses (`_Unreadable`) a record over `MAX_CHECKSUMS_BYTES` before reading it, a line that
    cannot be read, a name outside the folder, a file recorded twice with two hashes and a record of no file."""
    record = folder / CHECKSUMS_FILE
    try:
        content = read_regular(record, MAX_CHECKSUMS_BYTES)  # bounded, and never waiting on a FIFO
    except FileNotFoundError:
        return None
    except TooBig:
        raise _Unreadable(_too_big(record)) from None
    except NotARegularFile as error:
        raise _Unreadable(f"{error}: remove it, or record the folder again") from None
    except OSError as error:
        raise _Unreadable(f"{record}: cannot be read ({error.strerror or error})") from None
    return _entries(record, content)


def _entries(record: Path, content: bytes) -> dict[str, str]:
    """`_read_record`'s entries of the record's `content`, each line read as `sha256sum -c` reads it."""
    entries: dict[str, str] = {}
    for number, line in enumerate(content.split(b"\n"), start=1):
        try:
            entry = _parse_line(line.removesuffix(b"\r"))
        except _BadLine:
            raise _Unreadable(
                f"{record}: line {number} is not a checksum line (expected 'HASH  NAME' or 'SHA256 (NAME) = HASH',"
                " as sha256sum writes them): correct it or record the folder again"
            ) from None
        if entry is None:
            continue
        name, sha256 = _entry_name(record, number, entry[0]), entry[1]
        if entries.setdefault(name, sha256) != sha256:
            raise _Unreadable(f"{record}: line {number} records {name} again, with another sha256")
    if not entries:
        raise _Unreadable(f"{record}: records no file (no checksum line)")
    return entries


def _too_big(record: Path) -> str:
    return (
        f"{record}: over {MAX_CHECKSUMS_BYTES >> 20} MiB, more than a record of a folder's files holds: not read;"
        f" remove it or record the folder again"
    )


def _parse_line(line: bytes) -> tuple[bytes, str] | None:
    """(name, lower-case sha256) of a line as `sha256sum -c` reads it; None for a line it skips (empty, or a
    comment: `#` first); `_BadLine` for one it calls improperly formatted."""
    if not line or line.startswith(b"#"):
        return None
    line = line.lstrip(_WHITE)
    escaped = line.startswith(b"\\")
    line = line[1:] if escaped else line
    entry = _BSD_LINE.fullmatch(line) or _GNU_LINE.fullmatch(line)
    if entry is None:
        raise _BadLine
    return _unescape(entry["name"]) if escaped else entry["name"], entry["sha256"].decode("ascii").lower()


def _unescape(name: bytes) -> bytes:
    """A name escaped as sha256sum escapes one (`\\\\`, `\\n`, `\\r`); `_BadLine` where another backslash follows."""
    parts = re.split(rb"(\\.?)", name, flags=re.DOTALL)
    if any(part.startswith(b"\\") and part not in _ESCAPES for part in parts):
        raise _BadLine
    return b"".join(_ESCAPES.get(part, part) for part in parts)


def _entry_name(record: Path, number: int, name: bytes) -> str:
    """A recorded name as a path relative to the record's folder (`./NAME` is NAME, as the shell resolves it);
    refused when it leaves the folder, or holds a NUL byte (which no file name holds)."""
    text = os.fsdecode(name)
    if "\0" in text:
        raise _Unreadable(f"{record}: line {number} names {text!r}, which holds a NUL byte: no file is named so")
    normal = posixpath.normpath(text)
    if posixpath.isabs(normal) or normal == ".." or normal.startswith("../") or normal == ".":
        raise _Unreadable(f"{record}: line {number} names {text!r}, which is not a file inside {record.parent}")
    return normal
