"""What an `elmo-embed` run did (`EmbedSummary`), counted as it reads the lines and printed at the end: the lines
and words, the lines that were empty, not UTF-8 or split (`LineSet`: how many, and the first of them), and the
rate."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from elmo_transformers.common.atomic_output import partial_path

__all__ = ["LISTED_LINES", "EmbedSummary", "LineSet"]

# The summary names at most this many lines of each kind.
LISTED_LINES = 20


@dataclass
class LineSet:
    """How many lines have some property (`total`), and the indices of the first `LISTED_LINES` of them."""

    total: int = 0
    first: list[int] = field(default_factory=list)

    def add(self, index: int) -> None:
        self.total += 1
        if len(self.first) < LISTED_LINES:
            self.first.append(index)

    def describe(self) -> str:
        """E.g. "2 (datasets 4, 17)"."""
        if not self.total:
            return "0"
        more = f", and {self.total - len(self.first):,} more" if self.total > len(self.first) else ""
        return f"{self.total:,} (datasets {', '.join(map(str, self.first))}{more})"


@dataclass
class EmbedSummary:
    """What a run did. `layout` says what each line became; `words` counts every line's words; `embedded_words`
    those this run computed."""

    layout: str
    lines: int = 0
    words: int = 0
    embedded_words: int = 0
    resumed_lines: int = 0
    empty: LineSet = field(default_factory=LineSet)
    replaced: LineSet = field(default_factory=LineSet)
    split: LineSet = field(default_factory=LineSet)
    seconds: float = 0.0

    def describe(self, output: Path, max_words: int) -> str:
        """The summary printed at the end of a run."""
        rate = self.embedded_words / self.seconds if self.seconds else 0.0
        lines = [
            f"Wrote {output}: {self.lines:,} lines, {self.words:,} words, {self.layout}",
            f"  empty lines (written with 0 words): {self.empty.describe()}",
            f"  lines with invalid UTF-8 (embedded with U+FFFD for the bad bytes): {self.replaced.describe()}",
            f"  lines over --max-words {max_words} (embedded in pieces, concatenated): {self.split.describe()}",
        ]
        if self.resumed_lines:
            lines.append(f"  resumed: {self.resumed_lines:,} lines were already in {partial_path(output).name}")
        lines.append(f"  {self.embedded_words:,} words embedded in {self.seconds:.1f} s: {rate:,.0f} words/s")
        return "\n".join(lines)
