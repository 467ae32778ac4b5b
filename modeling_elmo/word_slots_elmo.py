"""`WordSlots`: which row of a token-vector cache holds each word, at most a number of words, least recently used out
first. Python alone (no torch, no numpy), so that both runtimes keep their caches by the same rule: PyTorch's
`TokenVectorCache` (token_cache_elmo.py) and the ONNX graphs' (`elmo_transformers.serving.graph_embedder`, which
must not import torch).
"""

from __future__ import annotations

from collections import OrderedDict

__all__ = ["DEFAULT_CACHED_WORDS", "WordSlots"]

# 2**16 words hold most of a corpus' tokens (Zipf): 32 MiB for the bundled model (projection_dim 128, float32),
# 128 MiB at the original size (512).
DEFAULT_CACHED_WORDS = 1 << 16


class WordSlots:
    """The rows 0..len - 1 of a cache's storage (at most `max_words` rows), one per word held: a word is a key (its
    row of character ids, as bytes). The cache stores the vectors; this keeps which row is whose and which word
    goes first when a new one needs a row (the least recently used)."""

    def __init__(self, max_words: int = DEFAULT_CACHED_WORDS) -> None:
        if type(max_words) is not int or max_words < 1:
            raise ValueError(f"a token-vector cache holds at least 1 word, got max_words={max_words!r}")
        self.max_words = max_words
        self._slots: OrderedDict[bytes, int] = OrderedDict()  # word -> its row, oldest use first

    def __len__(self) -> int:
        return len(self._slots)

    def find(self, keys: list[bytes]) -> tuple[list[int], list[int], list[int]]:
        """Of distinct `keys`: the indices of those held, their rows (each now the most recently used), and the
        indices of those not held."""
        held = [index for index, key in enumerate(keys) if key in self._slots]
        missing = [index for index, key in enumerate(keys) if key not in self._slots]
        for index in held:
            self._slots.move_to_end(keys[index])
        return held, [self._slots[keys[index]] for index in held], missing

    def take(self, keys: list[bytes]) -> tuple[int, list[int]]:
        """Rows for new distinct `keys` (none held): the last `max_words` of them get one each, in the rows of the
        least recently used words where all rows are taken. Returns how many of the first keys got none, and the
        rows of the others, in order; the rows in use are 0..len - 1 after it as before."""
        dropped = max(len(keys) - self.max_words, 0)
        slots = []
        for key in keys[dropped:]:
            slot = len(self._slots) if len(self._slots) < self.max_words else self._slots.popitem(last=False)[1]
            self._slots[key] = slot
            slots.append(slot)
        return dropped, slots

    def grown(self, held: int) -> int:
        """How many rows storage of `held` rows grows to so as to hold every row in use: double, up to
        `max_words`, so that a run's storage is allocated as its words come, a few times in all."""
        return held if len(self._slots) <= held else min(max(len(self._slots), 2 * held), self.max_words)
