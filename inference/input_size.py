"""The size of `elmo-embed`'s input as the run will store it (`InputSize`): counted in one pass before the run, for
the line count that a failure's advice gives and, with the space check, the disk space the output takes at its
peak."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from tqdm.auto import tqdm

from .lines import read_lines
from .runner import BatchEmbedder
from .storage import Storage

__all__ = ["LINE_BYTES", "LINE_INDEX_BYTES", "InputSize"]

# The space check's estimate of an hdf5 dataset's own bytes (its header: ~390 measured), and of a line's entry in
# sentence_to_index beyond its text (quotes, the index, separators).
LINE_BYTES = 400
LINE_INDEX_BYTES = 12


@dataclass
class InputSize:
    """What the output's size depends on: the input's lines and words (split as the run splits them), the bytes of
    their texts (sentence_to_index) and, with `words_json`, of their words as each dataset's attribute "words"."""

    lines: int = 0
    words: int = 0
    text_bytes: int = 0
    words_json_bytes: int = 0

    @classmethod
    def of(
        cls,
        input_file: Path,
        split_words: Callable[[str], list[str]] | None,
        *,
        words_json: bool,
        progress: bool = True,
    ) -> InputSize:
        """The size of `input_file`; its lines alone when `split_words` is None. `progress` shows a bar."""
        size = cls()
        counted = "lines" if split_words is None else "words"
        bar = {"desc": f"elmo-embed: counting {counted}", "unit": "line", "disable": None if progress else True}
        for line in tqdm(read_lines(input_file), **bar):
            size.lines += 1
            if split_words is None:
                continue
            words = split_words(line.text)
            size.words += len(words)
            size.text_bytes += len(line.text.encode()) + LINE_INDEX_BYTES
            if words_json:
                size.words_json_bytes += len(json.dumps(words))
        return size

    def output_bytes(self, embedder: BatchEmbedder, storage: Storage, *, keep_sentences: bool) -> int:
        """The disk space the run takes at its peak, the end of the merge: the segments and the merged file.
        Compressed vectors are counted uncompressed: how much a filter saves is only known once they are written."""
        stored = self.words * int(np.prod(embedder.shape(1))) * storage.itemsize
        stored += self.lines * LINE_BYTES + self.words_json_bytes
        return 2 * stored + (self.text_bytes if keep_sentences else 0)
