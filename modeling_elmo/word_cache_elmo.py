"""The character ids (and word ids) of the words a tokenizer met last: a bounded table that threads can share."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence

import numpy as np

__all__ = ["DEFAULT_WORD_CACHE_SIZE", "WordCache"]

# How many distinct words a tokenizer keeps the ids of (6.5 MB at 50 characters a word): real text repeats words.
DEFAULT_WORD_CACHE_SIZE = 16_384


class WordCache:
    """The ids of the words a tokenizer met last: one row of a table per word, row 0 for padding.

    Bounded: it holds at most `capacity` words between calls. When a call's new words would take it past that, it
    starts over with that call's words; one call with more distinct words than that has it to itself. A lock
    makes each look-up one step, so that threads sharing a tokenizer never read a row being rewritten. It pickles
    and copies as an empty cache: copies of a tokenizer, worker processes and `datasets` fingerprints do not
    carry, or depend on, the words it has seen.
    """

    def __init__(self, capacity: int, max_characters_per_token: int, with_word_ids: bool) -> None:
        if capacity < 1:
            raise ValueError(f"the word cache needs room for at least one word, got word_cache_size={capacity}")
        self.capacity = capacity
        self._arguments = (capacity, max_characters_per_token, with_word_ids)
        self._rows: dict[str, int] = {}
        self._char_ids = np.zeros((1, max_characters_per_token), dtype=np.int64)
        self._word_ids = np.zeros(1, dtype=np.int64) if with_word_ids else None
        self._lock = threading.Lock()

    def __reduce__(self) -> tuple[type, tuple[int, int, bool]]:
        return type(self), self._arguments

    def __len__(self) -> int:
        return len(self._rows)

    def gather(
        self,
        words: Sequence[str],
        layout: np.ndarray,
        encode: Callable[[list[str]], tuple[np.ndarray, np.ndarray | None]],
    ) -> tuple[np.ndarray, np.ndarray | None]:
        """The ids of `words` laid out at the True cells of `layout` (row-major), zeros elsewhere.

        `encode(new_words)` gives the character ids (new words, chars) and word ids (new words,) or None of the
        words not in the cache. Returns character ids of shape (*layout.shape, chars) and word ids of
        `layout`'s shape (None without a word vocabulary).
        """
        with self._lock:
            index = np.zeros(layout.shape, dtype=np.intp)
            index[layout] = self._rows_of(words, encode)
            ids = self._char_ids[index], None if self._word_ids is None else self._word_ids[index]
            if len(self._rows) > self.capacity:  # this call's words alone were more than the cache keeps
                self._forget_words()
            return ids

    def _rows_of(self, words: Sequence[str], encode: Callable) -> np.ndarray:
        rows = self._rows
        try:
            return np.fromiter(map(rows.__getitem__, words), dtype=np.intp, count=len(words))  # all cached
        except KeyError:
            pass
        new_words = list(set(words).difference(rows))  # C-level passes over the call's words, whatever the order
        if len(rows) + len(new_words) > self.capacity:  # full: start over with this call's words
            self._forget_words()
            new_words = list(set(words))
        first = len(rows) + 1
        self._store(first, *encode(new_words))
        # Registered only once their ids are stored: an interruption (Ctrl-C) leaves no word without its ids.
        rows.update(zip(new_words, range(first, first + len(new_words)), strict=True))
        return np.fromiter(map(rows.__getitem__, words), dtype=np.intp, count=len(words))

    def _forget_words(self) -> None:
        self._rows.clear()
        if len(self._char_ids) > self.capacity + 1:  # grown for one call beyond the bound: give the memory back
            self._char_ids = self._char_ids[: self.capacity + 1].copy()
            self._word_ids = None if self._word_ids is None else self._word_ids[: self.capacity + 1].copy()

    def _store(self, first: int, char_ids: np.ndarray, word_ids: np.ndarray | None) -> None:
        end = first + len(char_ids)
        if end > len(self._char_ids):  # grow by doubling, up to the capacity unless one call needs more
            size = max(end, min(2 * len(self._char_ids), self.capacity + 1))
            self._char_ids = _resized(self._char_ids, size)
            self._word_ids = None if self._word_ids is None else _resized(self._word_ids, size)
        self._char_ids[first:end] = char_ids
        if self._word_ids is not None:
            self._word_ids[first:end] = word_ids


def _resized(table: np.ndarray, rows: int) -> np.ndarray:
    grown = np.empty((rows, *table.shape[1:]), dtype=table.dtype)  # rows past the old ones: written before read
    grown[: len(table)] = table
    return grown
