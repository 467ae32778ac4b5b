"""The sentences every parity is measured on: a converted model against its source (`conversion`), a graph against
PyTorch and the int8 graph against the float32 one (`serving`)."""

from __future__ import annotations

__all__ = ["PARITY_SENTENCES"]

# Awkward on purpose: non-ASCII, a word over 48 bytes, an empty sentence, an empty-string word, mixed lengths.
PARITY_SENTENCES = [
    ["The", "naïve", "café", "owner", "said", "«", "bonjour", "»", "."],
    ["Größe", "日本語", "emoji🙂", "x" * 60, ""],
    [],
    ["A", "longer", "sentence", "with", "several", "ordinary", "words", "and", "numbers", "like", "3.14", "."],
]
