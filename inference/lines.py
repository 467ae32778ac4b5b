"""Read the input one line at a time, without ever holding the whole file, and never failing on bad bytes."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Line", "read_lines"]

# Bytes that are not UTF-8 come out of the "surrogateescape" decoder as U+DC80..U+DCFF, which valid UTF-8 never
# decodes to.
_ESCAPED_BYTE = re.compile("[\udc80-\udcff]")


@dataclass(frozen=True)
class Line:
    """One input line: `index` (0-based) names its dataset, `text` is the line stripped of surrounding whitespace.

    `replaced` is True when the line was not valid UTF-8: each invalid byte sequence is then U+FFFD in `text`.
    """

    index: int
    text: str
    replaced: bool


def read_lines(path: str | Path) -> Iterator[Line]:
    """Every line of `path`, in order, as AllenNLP's `elmo` command splits and strips them.

    Lines end at "\\n", "\\r\\n" or "\\r" (Python's universal newlines, as AllenNLP read its input). A UTF-8 byte
    order mark at the start of the file is dropped. A line that is not valid UTF-8 is still yielded, with its
    invalid bytes decoded as U+FFFD, so that every line keeps its index.
    """
    with open(path, encoding="utf-8-sig", errors="surrogateescape") as file:
        for index, line in enumerate(file):
            replaced = _ESCAPED_BYTE.search(line) is not None
            if replaced:
                line = line.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
            yield Line(index, line.strip(), replaced)
