"""Cut sentences into pieces of bounded length and group pieces of similar length into batches."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

__all__ = ["Piece", "batch_groups", "bucketed_batches"]


@dataclass(frozen=True)
class Piece:
    """Words `start` to `start + len(words)` of the line `line` (0-based), embedded as a sentence of their own."""

    line: int
    start: int
    words: Sequence[str]


def bucketed_batches(
    sentences: Sequence[tuple[int, Sequence[str]]], *, batch_size: int, max_words: int
) -> Iterator[list[Piece]]:
    """Batches of at most `batch_size` pieces, each piece at most `max_words` words, similar lengths together.

    `sentences` holds (line index, words) pairs of non-empty lines. A line longer than `max_words` becomes
    consecutive pieces of `max_words` words (the last one shorter). The pieces are sorted by length, so each
    batch pads its pieces to nearly the same length.
    """
    pieces = [
        Piece(line, start, words[start : start + max_words])
        for line, words in sentences
        for start in range(0, len(words), max_words)
    ]
    pieces.sort(key=lambda piece: (len(piece.words), piece.line, piece.start))
    for first in range(0, len(pieces), batch_size):
        yield pieces[first : first + batch_size]


def batch_groups(batches: Sequence[Sequence[Piece]]) -> list[int]:
    """For each batch, the index of the first batch of its group: batches that hold pieces of one line (a line cut
    into pieces) are in one group, directly or through others, so that one process writes the whole line."""
    parent = list(range(len(batches)))

    def first(index: int) -> int:
        while parent[index] != index:
            parent[index] = index = parent[parent[index]]
        return index

    batch_of_line: dict[int, int] = {}
    for index, pieces in enumerate(batches):
        for piece in pieces:
            one, other = first(batch_of_line.setdefault(piece.line, index)), first(index)
            parent[max(one, other)] = min(one, other)  # a group's root is its first batch
    return [first(index) for index in range(len(batches))]
