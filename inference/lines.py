"""Read the input one line at a time, without ever holding the whole file, and never failing on bad bytes.

The input is a regular file (it is read more than once) of plain or gzip-compressed text (recognised by its first
bytes, whatever its name). An input that is mostly not text (binary data), or text in another encoding than UTF-8,
is refused before anything is written, naming the encoding and the command that converts it where its first 64 KB
tell it: UTF-16 or UTF-32 (a byte order mark), CESU-8 (characters beyond U+FFFF as two UTF-16 surrogates, each
encoded as UTF-8, as Java's modified UTF-8 writes them), Latin-1 or cp1252 (bytes that are not UTF-8 and no
character beyond ASCII that is). A few bad bytes in a UTF-8 file are decoded as U+FFFD, line by line, with a
warning.
"""

from __future__ import annotations

import codecs
import gzip
import hashlib
import io
import os
import re
import shlex
import stat
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from elmo_transformers.common.errors import EmbedError, first_line

__all__ = ["MAX_LINE_CHARACTERS", "Line", "check_input", "check_text", "content_sha256", "open_input", "read_lines"]

# Bytes that are not UTF-8 come out of the "surrogateescape" decoder as U+DC80..U+DCFF, which valid UTF-8 never
# decodes to.
_ESCAPED_BYTE = re.compile("[\udc80-\udcff]")
# A character beyond ASCII that UTF-8 decoded (not an escaped byte).
_UTF8_BEYOND_ASCII = re.compile("[\x80-\udc7f\udd00-\U0010ffff]")
# A character beyond U+FFFF: 4 bytes in UTF-8, which CESU-8 never writes.
_BEYOND_BMP = re.compile("[\U00010000-\U0010ffff]")
# A UTF-16 surrogate (U+D800..U+DFFF) encoded as UTF-8, ED A0..BF xx: as escaped bytes, for UTF-8 has none.
_ENCODED_SURROGATE = re.compile("\udced[\udca0-\udcbf][\udc80-\udcbf]")
# Bytes 0x80..0x9F: printable in cp1252 (curly quotes, the euro sign), control characters in Latin-1.
_CP1252_BYTE = re.compile("[\udc80-\udc9f]")
# What UTF-8 text does not hold: bytes that are not UTF-8, and control characters other than whitespace (NUL too).
_NOT_TEXT = re.compile("[\udc80-\udcff\x00-\x08\x0e-\x1f\x7f]")
# Where `read_lines` ends a line (universal newlines).
_LINE_END = re.compile("\r\n?|\n")
_GZIP_MAGIC = b"\x1f\x8b"
# The byte order marks of encodings other than UTF-8 (UTF-32 first: its little-endian mark starts like UTF-16's).
_OTHER_BYTE_ORDER_MARKS = {
    codecs.BOM_UTF32_LE: ("UTF-32", "little-endian"),
    codecs.BOM_UTF32_BE: ("UTF-32", "big-endian"),
    codecs.BOM_UTF16_LE: ("UTF-16", "little-endian"),
    codecs.BOM_UTF16_BE: ("UTF-16", "big-endian"),
}
# check_text reads this much of the (decompressed) input, and refuses it when more than this share of it is
# not text: binary data scores about 60%, UTF-16 text without a byte order mark 50%, Latin-1 or cp1252 text a few
# percent.
SAMPLE_BYTES = 1 << 16
MAX_NOT_TEXT_SHARE = 0.3
# At most this share of a UTF-16 sample's 2-byte units may have a 00 byte on the side other than ASCII's: a NUL
# character, or a character such as U+0100 (`_check_utf16_without_mark`).
_UTF16_OTHER_SIDE_ZEROS = 0.05
# The longest line read (in characters): a line is read whole, and memory must not grow with the input (a file of
# text without newlines). A sentence is far shorter; a whole book on one line still fits (Moby-Dick: 1.2 M).
MAX_LINE_CHARACTERS = 1 << 24
# Errors of damaged gzip data (gzip.BadGzipFile is an OSError).
_GZIP_ERRORS = (EOFError, zlib.error, gzip.BadGzipFile)
# Why the input must be a regular file.
_READ_TWICE = (
    "elmo-embed reads its input more than once (to count its words before the run, and again to --resume), which"
    " only a regular file gives: save the text to a file first (... > in.txt) and pass that file"
)
_FILE_TYPES = {
    stat.S_ISCHR: "a character device",
    stat.S_ISBLK: "a block device",
    stat.S_ISFIFO: "a pipe",
    stat.S_ISSOCK: "a socket",
}
# A converter for CESU-8 and Java's modified UTF-8 (whose NUL is C0 80): iconv knows neither.
_CESU8_TO_UTF8 = (
    "python3 -c \"import sys; b = sys.stdin.buffer.read().replace(b'\\xc0\\x80', b'\\0');"
    " sys.stdout.buffer.write(b.decode('utf-8', 'surrogatepass').encode('utf-16', 'surrogatepass')"
    ".decode('utf-16', 'replace').encode())\""
)


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


def check_input(path: str | Path) -> None:
    """Refuse, in one line naming what it is, an input that elmo-embed cannot read: standard input ("-"), a missing
    file, a folder, a pipe or a device (`/dev/null`), a file that cannot be opened, or one that is not UTF-8
    text (`check_text`)."""
    if str(path) == "-":
        raise EmbedError(f"{path}: standard input: {_READ_TWICE}")
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        raise EmbedError(f"{path}: no such input file") from None
    except OSError as error:
        raise EmbedError(f"{path}: cannot read the input ({error.strerror})") from None
    if stat.S_ISDIR(mode):
        raise EmbedError(f"{path} is a folder, expected a text file")
    if not stat.S_ISREG(mode):
        kind = next((name for is_kind, name in _FILE_TYPES.items() if is_kind(mode)), "a special file")
        raise EmbedError(f"{path}: {kind}, not a regular file: {_READ_TWICE}")
    check_text(path)


def check_text(path: str | Path) -> None:
    """Refuse `path` (one line naming what is wrong and the way on) unless its first `SAMPLE_BYTES` look like UTF-8
    text: not binary, and not in another encoding."""
    try:
        with open_input(path) as file:
            compressed = isinstance(file, gzip.GzipFile)
            sample = file.read(SAMPLE_BYTES)
    except _GZIP_ERRORS as error:
        raise EmbedError(f"{path}: damaged gzip data ({first_line(error)})") from None
    except OSError as error:
        raise EmbedError(f"{path}: cannot read the input ({error.strerror})") from None
    _check_byte_order_mark(path, sample, compressed)
    _check_utf16_without_mark(path, sample, compressed)
    # A multi-byte character cut by the end of the sample is left out.
    text = codecs.getincrementaldecoder("utf-8")("surrogateescape").decode(sample, final=len(sample) < SAMPLE_BYTES)
    _check_not_binary(path, sample, text)
    _check_utf8(path, sample, text, compressed)


def _check_byte_order_mark(path: str | Path, sample: bytes, compressed: bool) -> None:
    """Refuse text whose byte order mark names UTF-16 or UTF-32."""
    for mark, (encoding, byte_order) in _OTHER_BYTE_ORDER_MARKS.items():
        if sample.startswith(mark):
            converter = f"iconv -f {encoding.lower()} -t utf-8"
            raise EmbedError(
                f"{path}: {encoding} text (it starts with the {byte_order} byte order mark {mark.hex(' ').upper()}),"
                f" not UTF-8: convert it first: {_converted(path, compressed, converter)}"
            )


def _check_utf16_without_mark(path: str | Path, sample: bytes, compressed: bool) -> None:
    """Refuse UTF-16 text without a byte order mark, which would look binary: mostly ASCII (or Latin-1) text puts a
    00 byte in every other place. Taken as UTF-16 where at least half of the 2-byte units have 00 on the same side
    (the second byte: little-endian, the first: big-endian), at most `_UTF16_OTHER_SIDE_ZEROS` of them on the other
    side, and the sample decodes in that byte order as text (no more than `MAX_NOT_TEXT_SHARE` control
    characters)."""
    units = len(sample) // 2
    for encoding, zero_side, byte_order in (("UTF-16LE", 1, "little-endian"), ("UTF-16BE", 0, "big-endian")):
        zeros, other_zeros = sample[zero_side::2].count(0), sample[1 - zero_side :: 2].count(0)
        if not units or zeros < 0.5 * units or other_zeros > _UTF16_OTHER_SIDE_ZEROS * units:
            continue
        try:  # (a character cut by the end of the sample is left out)
            text = codecs.getincrementaldecoder(encoding.lower())().decode(sample, final=len(sample) < SAMPLE_BYTES)
        except UnicodeDecodeError:
            continue
        if len(_NOT_TEXT.findall(text)) > MAX_NOT_TEXT_SHARE * len(text):
            continue
        converter = f"iconv -f {encoding.lower()} -t utf-8"
        raise EmbedError(
            f"{path}: {byte_order} UTF-16 text without a byte order mark? ({zeros / units:.0%} of its 2-byte units"
            f" have a 00 byte {'second' if zero_side else 'first'}, as ASCII characters do in it), not UTF-8:"
            f" convert it first: {_converted(path, compressed, converter)}"
        )


def _check_not_binary(path: str | Path, sample: bytes, text: str) -> None:
    """Refuse a `sample` (decoded: `text`) of which more than `MAX_NOT_TEXT_SHARE` is not text."""
    not_text = len(_NOT_TEXT.findall(_ENCODED_SURROGATE.sub("", text)))  # CESU-8's surrogates: text, named below
    if sample and not_text > MAX_NOT_TEXT_SHARE * len(sample):
        where = f"its first {len(sample):,} bytes" if len(sample) == SAMPLE_BYTES else "its bytes"
        raise EmbedError(
            f"{path}: looks binary ({not_text / len(sample):.0%} of {where} are control characters or not UTF-8),"
            " not text; elmo-embed reads UTF-8 text, one sentence per line, plain or gzip-compressed"
        )


def _check_utf8(path: str | Path, sample: bytes, text: str, compressed: bool) -> None:
    """Refuse text in an encoding that its bytes tell from UTF-8: CESU-8 (surrogates encoded as UTF-8, and no
    4-byte character), Latin-1 or cp1252 (bytes that are not UTF-8, and no character beyond ASCII that is)."""
    surrogate = _ENCODED_SURROGATE.search(text)
    if surrogate and not _BEYOND_BMP.search(text):
        encoded = " ".join(f"{ord(byte) - 0xDC00:02X}" for byte in surrogate.group())
        raise EmbedError(
            f"{path}: not UTF-8 text: line {_line_number(text, surrogate.start()):,} holds a UTF-16 surrogate encoded"
            f" as UTF-8 ({encoded}), and its first {len(sample):,} bytes hold no UTF-8 character beyond U+FFFF: CESU-8"
            " or Java's modified UTF-8? elmo-embed reads UTF-8: convert it first:"
            f" {_converted(path, compressed, _CESU8_TO_UTF8)}"
        )
    bad = _ESCAPED_BYTE.search(text)
    if bad and not _UTF8_BEYOND_ASCII.search(text):
        encoding = "cp1252" if _CP1252_BYTE.search(text) else "latin1"
        raise EmbedError(
            f"{path}: not UTF-8 text: line {_line_number(text, bad.start()):,} holds the byte"
            f" 0x{ord(bad.group()) - 0xDC00:02X}, and its first {len(sample):,} bytes hold no UTF-8 character beyond"
            " ASCII: another encoding (Latin-1, cp1252, ...)? elmo-embed reads UTF-8: convert it first, e.g."
            f" {_converted(path, compressed, f'iconv -f {encoding} -t utf-8')}"
        )


def _line_number(text: str, position: int) -> int:
    """The 1-based number of the line of `text` that holds `position`, as `read_lines` counts lines."""
    return len(_LINE_END.findall(text, 0, position)) + 1


def _converted(path: str | Path, compressed: bool, converter: str) -> str:
    """The shell command that writes the input `path` through `converter` (a filter from stdin to stdout) as
    PATH.utf8 (PATH without its .gz for a gzip-compressed input), for elmo-embed to read."""
    source = shlex.quote(str(path))
    target = shlex.quote(f"{str(path).removesuffix('.gz') if compressed else path}.utf8")
    if compressed:
        return f"gunzip -c {source} | {converter} > {target}"
    return f"{converter} < {source} > {target}"


def content_sha256(path: str | Path) -> str:
    """The sha256 of the file `path` as stored (compressed or not), read in blocks."""
    with open(path, "rb") as file:
        return hashlib.file_digest(file, "sha256").hexdigest()


def read_lines(path: str | Path) -> Iterator[Line]:
    """Every line of `path` (plain or gzip-compressed), in order, as AllenNLP's `elmo` command splits and strips them.

    Lines end at "\\n", "\\r\\n" or "\\r" (Python's universal newlines, as AllenNLP read its input). A UTF-8 byte
    order mark at the start of the file is dropped. A line that is not valid UTF-8 is still yielded, with its
    invalid bytes decoded as U+FFFD, so that every line keeps its index. A line of over `MAX_LINE_CHARACTERS` is
    refused (an EmbedError naming it), read no further than that.
    """
    index = -1
    try:
        with io.TextIOWrapper(open_input(path), encoding="utf-8-sig", errors="surrogateescape") as file:
            lines = iter(lambda: file.readline(MAX_LINE_CHARACTERS + 1), "")
            for index, line in enumerate(lines):
                if len(line) > MAX_LINE_CHARACTERS and not line.endswith("\n"):
                    raise EmbedError(
                        f"{path}: line {index + 1:,} holds over {MAX_LINE_CHARACTERS:,} characters: a line is read"
                        " whole, and is meant to hold a sentence; split the text into lines"
                    )
                replaced = _ESCAPED_BYTE.search(line) is not None
                if replaced:
                    line = line.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
                yield Line(index, line.strip(), replaced)
    except _GZIP_ERRORS as error:
        raise EmbedError(f"{path}: damaged gzip data after line {index + 1:,} ({first_line(error)})") from None
