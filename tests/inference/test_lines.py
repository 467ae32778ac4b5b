"""`inference/lines.py`'s rules on their own: which inputs `check_input` refuses, and with which one line (binary
data, UTF-16 and UTF-32 with or without a byte order mark, CESU-8, Latin-1 and cp1252, damaged gzip data, a file
that is not regular), and how `read_lines` splits, strips and repairs lines. `tests/inference/test_embed.py` runs
the whole command for one refusal of each kind (nothing written, the one line printed)."""

from __future__ import annotations

import gzip
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from elmo_transformers.common.errors import EmbedError
from elmo_transformers.inference.lines import MAX_LINE_CHARACTERS, SAMPLE_BYTES, Line, check_input, read_lines


def _refusal(source: Path) -> str:
    """The one line `check_input` refuses `source` with, after "PATH: "."""
    with pytest.raises(EmbedError) as refused:
        check_input(source)
    message = str(refused.value)
    assert "\n" not in message and message.startswith(f"{source}: "), message
    return message.removeprefix(f"{source}: ")


def _random_bytes(size: int) -> bytes:
    return np.random.default_rng(0).integers(0, 256, size, dtype=np.uint8).tobytes()


@pytest.mark.parametrize(
    ("content", "share"),
    [
        (_random_bytes(100_000), "of its first 65,536 bytes are control characters or not UTF-8"),
        (gzip.compress(_random_bytes(1000)), "of its bytes are control characters or not UTF-8"),
        # Many 00 bytes, but on both sides of the 2-byte units: no UTF-16.
        (np.arange(5000, dtype="<u4").tobytes(), "of its bytes are control characters or not UTF-8"),
    ],
    ids=["binary", "gzip-compressed binary", "32-bit integers"],
)
def test_binary_input_is_refused(content: bytes, share: str, tmp_path: Path) -> None:
    source = tmp_path / "in.bin"
    source.write_bytes(content)
    refusal = _refusal(source)
    assert refusal.startswith("looks binary (") and share in refusal
    assert refusal.endswith("not text; elmo-embed reads UTF-8 text, one sentence per line, plain or gzip-compressed")


def _encoded_input(tmp_path: Path, data: bytes, compressed: bool, encoding: str) -> tuple[Path, str]:
    """`data` written as the input (gzip-compressed or not), and the command the refusal gives to convert it from
    `encoding` (iconv's name)."""
    source = tmp_path / ("in.txt.gz" if compressed else "in.txt")
    source.write_bytes(gzip.compress(data) if compressed else data)
    converter = f"iconv -f {encoding} -t utf-8"
    command = (
        f"gunzip -c {source} | {converter} > {tmp_path}/in.txt.utf8"
        if compressed
        else f"{converter} < {source} > {source}.utf8"
    )
    return source, command


@pytest.mark.parametrize(
    ("encoding", "byte_order", "side"), [("utf-16le", "little", "second"), ("utf-16be", "big", "first")]
)
@pytest.mark.parametrize("compressed", [False, True], ids=["plain", "gzip"])
def test_utf16_without_a_byte_order_mark_is_named(
    encoding: str, byte_order: str, side: str, compressed: bool, tmp_path: Path
) -> None:
    """It was "looks binary (50% of its bytes are control characters ...)": every other byte of ASCII is 00. Named
    UTF-16 with the command that converts it; a few characters beyond Latin-1 (a 00-free unit) do not hide it."""
    content = "The cat sat on the mat .\nnaïve café, Größe 日本語 😀\n" * 3
    data = content.encode(encoding)
    source, command = _encoded_input(tmp_path, data, compressed, encoding)
    share = f"{sum(1 for character in content.encode('utf-16-le')[1::2] if character == 0) / (len(data) // 2):.0%}"
    assert _refusal(source) == (
        f"{byte_order}-endian UTF-16 text without a byte order mark? ({share} of its 2-byte units have a 00 byte"
        f" {side}, as ASCII characters do in it), not UTF-8: convert it first: {command}"
    )
    if shutil.which("iconv"):  # the advice works
        subprocess.run(command, shell=True, check=True)
        assert (tmp_path / "in.txt.utf8").read_text(encoding="utf-8") == content


@pytest.mark.parametrize(
    ("encoding", "name", "byte_order", "mark"),
    [
        ("utf-16", "UTF-16", "little-endian", "FF FE"),  # Python writes the machine's (x86, ARM: little) order
        ("utf-16-be", "UTF-16", "big-endian", "FE FF"),
        ("utf-32", "UTF-32", "little-endian", "FF FE 00 00"),  # starts with UTF-16's little-endian mark
        ("utf-32-be", "UTF-32", "big-endian", "00 00 FE FF"),
    ],
)
@pytest.mark.parametrize("compressed", [False, True], ids=["plain", "gzip"])
def test_utf16_and_utf32_are_named_with_the_way_to_convert(
    encoding: str, name: str, byte_order: str, mark: str, compressed: bool, tmp_path: Path
) -> None:
    """UTF-16 with a byte order mark (what Windows' Notepad and PowerShell write) was "looks binary"."""
    content = ("\ufeff" if encoding.endswith("-be") else "") + "The cat sat on the mat .\nnaïve 😀\n"
    source, command = _encoded_input(tmp_path, content.encode(encoding), compressed, name.lower())
    assert _refusal(source) == (
        f"{name} text (it starts with the {byte_order} byte order mark {mark}), not UTF-8: convert it first: {command}"
    )
    if shutil.which("iconv"):  # the advice works: the converted file is the text, in UTF-8
        subprocess.run(command, shell=True, check=True)
        assert (tmp_path / "in.txt.utf8").read_text(encoding="utf-8") == content.removeprefix("\ufeff")


@pytest.mark.parametrize(
    ("text", "line"),
    [
        (b"The cat sat .\n\xe9t\xe9 chaud\n", 2),  # the bad byte starts a line
        (b"\xe9t\xe9 chaud et sec\n", 1),  # ... the first
        (b"one\rtwo\r\xe9t\xe9\r", 3),  # lines ended by a lone CR, as read_lines ends them
        (b"one\r\n\r\n\xe9t\xe9\r\n", 3),  # CRLF is one line end
    ],
    ids=["starts a line", "starts the file", "CR", "CRLF"],
)
def test_the_latin1_refusal_names_the_line_of_the_byte(text: bytes, line: int, tmp_path: Path) -> None:
    source = tmp_path / "in.txt"
    source.write_bytes(text)
    refusal = _refusal(source)
    assert refusal.startswith(f"not UTF-8 text: line {line} holds the byte 0xE9, and its first {len(text)} bytes")
    assert refusal.endswith(f"convert it first, e.g. iconv -f latin1 -t utf-8 < {source} > {source}.utf8")


def test_cp1252_is_told_from_latin1(tmp_path: Path) -> None:
    """Bytes 0x80-0x9F are curly quotes and dashes in cp1252 but control characters in Latin-1: converted as
    Latin-1 they would be invisible controls, not the quotes."""
    source = tmp_path / "in.txt"
    source.write_bytes("He said \u201cno\u201d \u2013 twice.\n".encode("cp1252"))
    refusal = _refusal(source)
    assert refusal.startswith("not UTF-8 text: line 1 holds the byte 0x93,")
    assert refusal.endswith(f"e.g. iconv -f cp1252 -t utf-8 < {source} > {source}.utf8")


def _cesu8(text: str) -> bytes:
    """`text` in CESU-8: each character beyond U+FFFF as its two UTF-16 surrogates, each encoded as UTF-8."""
    units = text.encode("utf-16-be")
    surrogates = "".join(chr(int.from_bytes(units[index : index + 2], "big")) for index in range(0, len(units), 2))
    return surrogates.encode("utf-8", "surrogatepass")


def test_cesu8_is_named_with_the_way_to_convert(tmp_path: Path) -> None:
    """CESU-8 (Java's modified UTF-8 too) was taken for Latin-1, whose conversion turns each emoji into six letters
    of mojibake. A text of emoji only would score as binary: its surrogates count as text."""
    content = "The cat sat .\n" + "😀🎉 " * 10 + "\nnaïve \U0001f600 café\n"
    source = tmp_path / "in.txt"
    source.write_bytes(_cesu8(content) + b"a NUL: \xc0\x80.\n")  # modified UTF-8's NUL
    refusal = _refusal(source)
    assert refusal.startswith(
        "not UTF-8 text: line 2 holds a UTF-16 surrogate encoded as UTF-8 (ED A0 BD), and its first"
        f" {source.stat().st_size} bytes hold no UTF-8 character beyond U+FFFF: CESU-8 or Java's modified UTF-8?"
        " elmo-embed reads UTF-8: convert it first: python3 -c "
    )
    command = refusal.split("convert it first: ")[1]
    assert command.endswith(f" < {source} > {source}.utf8")
    subprocess.run(command.replace("python3", shlex.quote(sys.executable), 1), shell=True, check=True)
    assert (tmp_path / "in.txt.utf8").read_text(encoding="utf-8") == content + "a NUL: \x00.\n"


def test_utf8_with_a_cesu8_line_is_read_with_its_bad_bytes_replaced(tmp_path: Path) -> None:
    """A UTF-8 file that holds 4-byte characters is UTF-8 with a damaged line: read, its bad bytes as U+FFFD."""
    damaged = tmp_path / "damaged.txt"
    damaged.write_bytes("naïve \U0001f600\n".encode() + _cesu8("\U0001f600\n"))
    check_input(damaged)
    assert list(read_lines(damaged)) == [Line(0, "naïve \U0001f600", False), Line(1, "\ufffd" * 6, True)]


def test_a_character_cut_by_the_end_of_the_sample_is_utf8(tmp_path: Path) -> None:
    """The first 64 KB are judged; a character that they cut is not a bad byte. A file of ASCII whose first
    character beyond it straddles the edge is UTF-8; a Latin-1 byte just before the edge is not."""
    first = "The cat sat ."
    long_word = "x" * (SAMPLE_BYTES - 2 - len(first))  # a word over 48 bytes
    source = tmp_path / "in.txt"
    for character in ("é", "\u20ac", "😀"):  # 2, 3 and 4 bytes: the edge cuts each after its first byte
        source.write_text(f"{first}\n{long_word}{character} end\n", encoding="utf-8")
        assert source.read_bytes()[SAMPLE_BYTES - 1] == character.encode()[0]
        check_input(source)
        assert [line.text for line in read_lines(source)] == [first, f"{long_word}{character} end"]
    source.write_bytes(f"{first}\n{long_word[:-1]}".encode() + "é end\n".encode("latin-1"))  # not cut: judged
    assert _refusal(source).startswith("not UTF-8 text: line 2 holds the byte 0xE9")


def test_damaged_gzip_data_is_named_when_checked_and_when_read(tmp_path: Path) -> None:
    source = tmp_path / "in.txt.gz"
    source.write_bytes(gzip.compress(b"one\ntwo\n")[:-12])
    assert _refusal(source).startswith("damaged gzip data")
    long = tmp_path / "long.txt.gz"
    long.write_bytes(gzip.compress(b"a line of words\n" * 20_000)[:-12])  # the sample is whole; the end is not
    check_input(long)
    with pytest.raises(EmbedError, match=r"long\.txt\.gz: damaged gzip data after line 19,\d{3} \(") as refused:
        list(read_lines(long))  # (the lines read whole before the damage: the reader's buffers decide how many)
    assert "\n" not in str(refused.value)


def test_what_is_not_a_regular_file_is_refused_without_reading_it(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)  # opening it would wait for a writer
    assert _refusal(fifo).startswith("a pipe, not a regular file: elmo-embed reads its input more than once")
    assert _refusal(tmp_path / "missing.txt") == "no such input file"
    with pytest.raises(EmbedError, match=rf"^{tmp_path} is a folder, expected a text file$"):
        check_input(tmp_path)
    assert _refusal(Path("-")).startswith("standard input: elmo-embed reads its input more than once")
    if os.path.exists("/dev/null"):
        assert _refusal(Path("/dev/null")).startswith("a character device, not a regular file")


def test_lines_are_split_as_universal_newlines_stripped_and_numbered(tmp_path: Path) -> None:
    """As AllenNLP's `elmo` command read them: "\\n", "\\r\\n" and "\\r" end lines, a UTF-8 byte order mark is
    dropped, surrounding whitespace stripped, an empty line kept (its index names its dataset)."""
    source = tmp_path / "in.txt"
    source.write_bytes("\ufeff  The cat .\r\n\r\nsat\rnaïve \t\n\xa0end".encode())
    assert list(read_lines(source)) == [
        Line(0, "The cat .", False),
        Line(1, "", False),
        Line(2, "sat", False),
        Line(3, "naïve", False),
        Line(4, "end", False),
    ]
    compressed = tmp_path / "in.data"  # gzip is told by its first bytes, not by the name
    compressed.write_bytes(gzip.compress(source.read_bytes()))
    assert list(read_lines(compressed)) == list(read_lines(source))


def test_a_line_over_the_longest_is_refused_before_it_is_read_whole(tmp_path: Path) -> None:
    """A line is read whole: one of over `MAX_LINE_CHARACTERS` (a file of text without newlines) is refused, naming
    it, rather than filling memory. One of exactly that many, "\\r"-ended, is a line like any other."""
    longest = "é" * MAX_LINE_CHARACTERS
    source = tmp_path / "in.txt"
    source.write_text(f"first\r{longest}\rlast", encoding="utf-8")
    assert [line.text[:5] for line in read_lines(source)] == ["first", "ééééé", "last"]
    source.write_text(f"first\n{longest}é\nlast\n", encoding="utf-8")
    lines = read_lines(source)
    assert next(lines) == Line(0, "first", False)
    with pytest.raises(EmbedError, match=rf"^{source}: line 2 holds over {MAX_LINE_CHARACTERS:,} characters: a"):
        next(lines)
