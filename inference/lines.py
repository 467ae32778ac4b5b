"""Read the input one line at a time, without ever holding the whole file, and never failing on bad bytes.

The input is plain or gzip-compressed text (recognised by its first bytes, whatever its name). An input that is
mostly not text (binary data, UTF-16), or text in another encoding than UTF-8 (Latin-1, cp1252: its first 64 KB hold
bytes that are not UTF-8 and no character beyond ASCII that is), is refused before anything is written; a few bad
bytes in a UTF-8 file are decoded as U+FFFD, line by line, with a warning.
"""

from __future__ import annotations

import codecs
import gzip
import hashlib
import io
import re
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from elmo_transformers.common.errors import EmbedError, first_line

__all__ = ["Line", "check_text", "content_sha256", "open_input", "read_lines"]

# Bytes that are not UTF-8 come out of the "surrogateescape" decoder as U+DC80..U+DCFF, which valid UTF-8 never
# decodes to.
_ESCAPED_BYTE = re.compile("[\udc80-\udcff]")
# A character beyond ASCII that UTF-8 decoded (not an escaped byte).
_UTF8_BEYOND_ASCII = re.compile("[\x80-\udc7f\udd00-\U0010ffff]")
# What UTF-8 text does not hold: bytes that are not UTF-8, and control characters other than whitespace (NUL too).
_NOT_TEXT = re.compile("[\udc80-\udcff\x00-\x08\x0e-\x1f\x7f]")
_GZIP_MAGIC = b"\x1f\x8b"
# check_text reads this much of the (decompressed) input, and refuses it when more than this share of it is
# not text: binary data scores about 60%, UTF-16 text 50%, Latin-1 or cp1252 text a few percent.
SAMPLE_BYTES = 1 << 16
MAX_NOT_TEXT_SHARE = 0.3
# Errors of damaged gzip data (gzip.BadGzipFile is an OSError).
_GZIP_ERRORS = (EOFError, zlib.error, gzip.BadGzipFile)


@dataclass(frozen=True)
class Line:
    """One input line: `index` (0-based) names its dataset, `text` is the line stripped of surrounding whitespace.

    `replaced` is True when the line was not valid UTF-8: each invalid byte sequence is then U+FFFD in `text`.
    """

    index: int
    text: str
    replaced: bool


def open_input(path: str | Path) -> BinaryIO:
    """The bytes of `path`, decompressed when it starts with gzip's magic bytes."""
    with open(path, "rb") as file:
        compressed = file.read(len(_GZIP_MAGIC)) == _GZIP_MAGIC
    return gzip.open(path, "rb") if compressed else open(path, "rb")


def check_text(path: str | Path) -> None:
    """Refuse `path` (one line naming what is wrong) unless its first `SAMPLE_BYTES` look like UTF-8 text: not
    binary, and not in another encoding."""
    try:
        with open_input(path) as file:
            sample = file.read(SAMPLE_BYTES)
    except _GZIP_ERRORS as error:
        raise EmbedError(f"{path}: damaged gzip data ({first_line(error)})") from None
    # A multi-byte character cut by the end of the sample is left out.
    text = codecs.getincrementaldecoder("utf-8")("surrogateescape").decode(sample, final=len(sample) < SAMPLE_BYTES)
    not_text = len(_NOT_TEXT.findall(text))
    if sample and not_text > MAX_NOT_TEXT_SHARE * len(sample):
        where = f"its first {len(sample):,} bytes" if len(sample) == SAMPLE_BYTES else "its bytes"
        raise EmbedError(
            f"{path}: looks binary ({not_text / len(sample):.0%} of {where} are control characters or not UTF-8),"
            " not text; elmo-embed reads UTF-8 text, one sentence per line, plain or gzip-compressed"
        )
    bad = _ESCAPED_BYTE.search(text)
    if bad and not _UTF8_BEYOND_ASCII.search(text):
        line = text.count("\n", 0, bad.start()) + 1
        byte = ord(bad.group()) - 0xDC00
        raise EmbedError(
            f"{path}: not UTF-8 text: line {line:,} holds the byte 0x{byte:02X}, and its first {len(sample):,} bytes"
            " hold no UTF-8 character beyond ASCII: another encoding (Latin-1, cp1252, ...)? elmo-embed reads UTF-8:"
            " convert it first (e.g. with iconv -f latin1 -t utf-8)"
        )


def content_sha256(path: str | Path) -> str:
    """The sha256 of the file `path` as stored (compressed or not), read in blocks."""
    with open(path, "rb") as file:
        return hashlib.file_digest(file, "sha256").hexdigest()


def read_lines(path: str | Path) -> Iterator[Line]:
    """Every line of `path` (plain or gzip-compressed), in order, as AllenNLP's `elmo` command splits and strips them.

    Lines end at "\\n", "\\r\\n" or "\\r" (Python's universal newlines, as AllenNLP read its input). A UTF-8 byte
    order mark at the start of the file is dropped. A line that is not valid UTF-8 is still yielded, with its
    invalid bytes decoded as U+FFFD, so that every line keeps its index.
    """
    index = -1
    try:
        with io.TextIOWrapper(open_input(path), encoding="utf-8-sig", errors="surrogateescape") as file:
            for index, line in enumerate(file):
                replaced = _ESCAPED_BYTE.search(line) is not None
                if replaced:
                    line = line.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
                yield Line(index, line.strip(), replaced)
    except _GZIP_ERRORS as error:
        raise EmbedError(f"{path}: damaged gzip data after line {index + 1:,} ({first_line(error)})") from None
