"""SHA256SUMS: the record of a folder's files that every folder this package writes carries, and its check.

The record is in `sha256sum`'s format, so that `sha256sum -c SHA256SUMS` checks a folder without this package, and
it is read as `sha256sum -c` reads it: `HASH  NAME` (text) and `HASH *NAME` (binary), `HASH NAME`, the hash in
either case, names written `./NAME`, the BSD form `SHA256 (NAME) = HASH` (`sha256sum --tag`), a backslash before a
line whose name is escaped, comment lines (`#` first) and empty lines. A line that sha256sum would call improperly
formatted is refused here (with its number), not skipped: a record that names no file checks nothing.

Standard library only: the ONNX path of `elmo-embed`, which runs without torch and transformers, imports it.
"""

from __future__ import annotations

import hashlib
import os
import posixpath
import re
from pathlib import Path

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
    """The SHA-256 of a file (hex), read in 1 MiB blocks."""
    digest = hashlib.sha256()
    with open(path, "rb") as file:
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


def folder_checksum_problem(folder: Path) -> str | None:
    """The line naming the first file that `folder/SHA256SUMS` records and that is missing, unreadable or has
    another sha256 (with both hashes, short), or the line of the record that cannot be read; None when every
    recorded file matches, or when the folder has no record (saved by save_pretrained, or by an older package).
    The line states the problem; the caller adds the way on that fits what it reads."""
    try:
        recorded = _read_record(folder)
    except _Unreadable as problem:
        return str(problem)
    for name, sha256 in (recorded or {}).items():
        problem = _file_problem(folder / name, sha256)
        if problem:
            return problem
    return None


def checksum_problem(path: Path, sha256: str) -> str | None:
    """The line refusing the file `path` whose content has the checksum `sha256` when its folder's SHA256SUMS
    records another (or cannot be read); None when they agree, or when nothing is recorded for it."""
    try:
        recorded = _read_record(path.parent) or {}
    except _Unreadable as problem:
        return str(problem)
    expected = recorded.get(path.name)
    return None if expected is None or expected == sha256 else _mismatch(path, sha256, expected)


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
        with open(record, "rb") as file:
            if os.fstat(file.fileno()).st_size > MAX_CHECKSUMS_BYTES:
                raise _Unreadable(_too_big(record))
            content = file.read(MAX_CHECKSUMS_BYTES + 1)  # bounded even where the size lies (a pipe, /proc)
    except FileNotFoundError:
        return None
    except OSError as error:
        raise _Unreadable(f"{record}: cannot be read ({error.strerror or error})") from None
    if len(content) > MAX_CHECKSUMS_BYTES:
        raise _Unreadable(_too_big(record))
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
    refused when it leaves the folder."""
    text = os.fsdecode(name)
    normal = posixpath.normpath(text)
    if posixpath.isabs(normal) or normal == ".." or normal.startswith("../") or normal == ".":
        raise _Unreadable(f"{record}: line {number} names {text!r}, which is not a file inside {record.parent}")
    return normal
