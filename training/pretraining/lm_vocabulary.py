"""The word vocabulary of the biLM's softmax, in bilm-tf's file format: one word per line, ids in line order."""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterable
from pathlib import Path

from elmo_transformers.common.errors import DataFileError
from elmo_transformers.common.vocabulary_file import read_vocabulary
from modeling_elmo.text_elmo import BILM_TF_SPECIAL_WORDS, UNK_WORD

__all__ = ["LmVocabulary"]


class LmVocabulary:
    """Words <-> softmax row ids. Words outside the vocabulary map to `<UNK>`."""

    def __init__(self, words: Iterable[str], *, source: str = "vocabulary") -> None:
        self.words = list(words)
        self.ids: dict[str, int] = {}
        for index, word in enumerate(self.words):
            if not word or any(char.isspace() for char in word):
                raise DataFileError(f"{source}, line {index + 1}: {word!r} is not a word (empty or with whitespace)")
            if word in self.ids:
                raise DataFileError(f"{source}, line {index + 1}: {word!r} repeats line {self.ids[word] + 1}")
            self.ids[word] = index
        missing = [word for word in BILM_TF_SPECIAL_WORDS if word not in self.ids]
        if missing:
            raise DataFileError(
                f"{source} lacks the special words {', '.join(missing)}: a bilm-tf vocabulary holds <S>, </S> and "
                "<UNK> (build one with `python -m elmo_transformers.training.build_vocab`)"
            )
        self.unk_id = self.ids[UNK_WORD]

    @classmethod
    def from_file(cls, path: str | os.PathLike) -> LmVocabulary:
        """The words of a vocabulary file, one per line (a blank line is refused, as every line is a softmax row);
        `DataFileError` names the file and line."""
        return cls(read_vocabulary(path, error=DataFileError), source=str(path))

    @classmethod
    def from_counts(cls, counts: Counter[str], *, min_count: int = 1, max_size: int | None = None) -> LmVocabulary:
        """`<S>`, `</S>`, `<UNK>`, then the words seen at least `min_count` times, most frequent first (ties in
        alphabetical order, so the file is reproducible), at most `max_size` lines in all."""
        ranked = sorted(
            (item for item in counts.items() if item[1] >= min_count and item[0] not in BILM_TF_SPECIAL_WORDS),
            key=lambda item: (-item[1], item[0]),
        )
        words = [word for word, _ in ranked]
        if max_size is not None:
            words = words[: max(0, max_size - len(BILM_TF_SPECIAL_WORDS))]
        return cls([*BILM_TF_SPECIAL_WORDS, *words])

    def __len__(self) -> int:
        return len(self.words)

    def __contains__(self, word: str) -> bool:
        return word in self.ids

    def word_id(self, word: str) -> int:
        return self.ids.get(word, self.unk_id)

    def save(self, path: str | os.PathLike) -> None:
        Path(path).write_text("".join(f"{word}\n" for word in self.words), encoding="utf-8")
