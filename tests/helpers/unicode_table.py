"""The Unicode property table of the text front end (modeling_elmo/text_elmo.py): the character classes its split
rule reads, as Unicode 14.0 (Python 3.11's `unicodedata`) gives them, written once into the front end itself (one
self-contained file, copied alone beside an exported graph), so that its words are the same on every Python the
package admits, whatever Unicode version that Python's `unicodedata`, `re` and `str` methods follow.

tests/model/test_unicode_table.py checks that the committed block is this generator's output where the running
Python's Unicode is 14.0. To write it again (only under a Python whose `unicodedata.unidata_version` is 14.0.0),
from the repository root:

    python tests/helpers/unicode_table.py
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import sys
import tempfile
import unicodedata
from collections.abc import Callable, Iterable
from pathlib import Path

__all__ = [
    "FRONT_END_FILE",
    "UNICODE_VERSION",
    "split_digest",
    "table_block",
    "write_through_rename",
    "written_front_end",
]

UNICODE_VERSION = "14.0.0"
FRONT_END_FILE = Path(__file__).resolve().parents[2] / "modeling_elmo" / "text_elmo.py"
_BEGIN = "# BEGIN the Unicode property table"
_END = "# END the Unicode property table"
_BLOCK = re.compile(f"^{re.escape(_BEGIN)}.*?^{re.escape(_END)}[^\n]*\n", re.DOTALL | re.MULTILINE)

# (the table's name, what it holds, which code points)
_CLASSES: list[tuple[str, str, Callable[[str], bool]]] = [
    (
        "_LETTERS",
        "str.isalnum() but not str.isdecimal(): letters (L*) and numerals (No, Nl, ...)",
        lambda c: c.isalnum() and not c.isdecimal(),
    ),
    ("_DIGITS", "str.isdecimal(): the decimal digits (Nd)", str.isdecimal),
    ("_SPACES", "str.isspace(): white space", str.isspace),
    ("_MARKS", "the combining marks (Mn, Mc, Me)", lambda c: unicodedata.category(c) in ("Mn", "Mc", "Me")),
    ("_FORMATS", "the format characters (Cf)", lambda c: unicodedata.category(c) == "Cf"),
    ("_UNASSIGNED", "the unassigned code points (Cn)", lambda c: unicodedata.category(c) == "Cn"),
]


# Each code point is split in these contexts: inside a word, after a symbol (where a mark would attach to it),
# between digits, and after a symbol in a line with a combining mark (the pattern of grapheme clusters).
_CONTEXTS = ("a{c}b", "({c}x", "1{c}2", "x\u0301({c}")
# The planes where Unicode has put characters, or plans to (planes 4 to 13 hold none in any version to date;
# planes 15 and 16 are private use, unassigned in none).
_PLANES = (range(0x40000), range(0xE0000, 0xF0000))


def split_digest(split: Callable[[str], list[str]], step: int = 64) -> str:
    """SHA-256 of the words `split` gives for each code point of `_PLANES` in each of `_CONTEXTS`, the contexts of
    `step` consecutive code points making one line (a space between them). The same digest on two Pythons is the
    same words for those code points on both (tests/model/test_unicode_table.py holds the front end to the digest
    Python 3.11 gives)."""
    digest = hashlib.sha256()
    for context in _CONTEXTS:
        for plane in _PLANES:
            for start in range(plane.start, plane.stop, step):
                line = " ".join(context.format(c=chr(code)) for code in range(start, start + step))
                digest.update(json.dumps(split(line)).encode("ascii"))
    return digest.hexdigest()


def _ranges(codes: Iterable[int]) -> str:
    """`codes` (ascending) as comma-separated hexadecimal ranges: "41-5a,aa,b5"."""
    spans: list[list[int]] = []
    for code in codes:
        if spans and code == spans[-1][1] + 1:
            spans[-1][1] = code
        else:
            spans.append([code, code])
    return ",".join(f"{first:x}" if first == last else f"{first:x}-{last:x}" for first, last in spans)


def _lines_of(ranges: str, width: int) -> list[str]:
    """`ranges` cut after commas into pieces of at most `width` characters (each piece but the last ends in one)."""
    pieces = [""]
    for item in ranges.split(","):
        if pieces[-1] and len(pieces[-1]) + len(item) + 1 > width:
            pieces.append("")
        pieces[-1] += item + ","
    pieces[-1] = pieces[-1].rstrip(",")
    return pieces


def table_block() -> str:
    """The generated block of text_elmo.py: one str of ranges per class, from the running Python's `unicodedata`."""
    if unicodedata.unidata_version != UNICODE_VERSION:
        raise SystemExit(
            f"the table is Unicode {UNICODE_VERSION}'s; this Python's unicodedata is {unicodedata.unidata_version}: "
            "run the generator under Python 3.11"
        )
    characters = [chr(code) for code in range(sys.maxunicode + 1)]
    lines = [
        f"{_BEGIN} (Unicode {UNICODE_VERSION}), written by tests/helpers/unicode_table.py: do not edit by hand.",
        "# Each class is a str of comma-separated hexadecimal ranges of code points, ascending.",
        f'UNICODE_VERSION = "{UNICODE_VERSION}"',
    ]
    for name, about, holds in _CLASSES:
        ranges = _ranges(code for code, character in enumerate(characters) if holds(character))
        chunks = _lines_of(ranges, width=110)
        lines.append(f"# {about}")
        if len(chunks) == 1:
            lines.append(f'{name} = "{chunks[0]}"')
        else:
            lines.extend((f"{name} = (", *(f'    "{chunk}"' for chunk in chunks), ")"))
    lines.append(_END)
    return "\n".join(lines) + "\n"


def written_front_end() -> str:
    """text_elmo.py's text with its table block written again."""
    text = FRONT_END_FILE.read_text(encoding="utf-8")
    if len(_BLOCK.findall(text)) != 1:
        raise SystemExit(f"{FRONT_END_FILE}: expected one block from {_BEGIN!r} to {_END!r}")
    return _BLOCK.sub(lambda _: table_block(), text)


def write_through_rename(path: Path, text: str, encoding: str) -> None:
    """`text` into `path` through a temporary file beside it and a rename: a reader never sees half a file."""
    descriptor, temporary = tempfile.mkstemp(dir=path.parent, suffix=".partial")
    with os.fdopen(descriptor, "w", encoding=encoding) as file:
        file.write(text)
    os.replace(temporary, path)


def main() -> None:
    """Write the table into text_elmo.py (through a temporary file and a rename)."""
    write_through_rename(FRONT_END_FILE, written_front_end(), "utf-8")
    print(f"wrote the Unicode {UNICODE_VERSION} table into {FRONT_END_FILE}")


if __name__ == "__main__":
    main()
