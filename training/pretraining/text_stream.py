"""Sentences from sharded text files, one shard in memory at a time, with a position that can be saved.

The corpus is bilm-tf's: plain UTF-8 files, one sentence per line, words separated by whitespace. Shards are
visited in a shuffled order each epoch and each shard's sentences are shuffled (both seeded by `seed` and
the epoch), as bilm-tf did; with several processes each takes every `world_size`-th sentence of a shard.
"""

from __future__ import annotations

import glob
import logging
import os
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from elmo_transformers.common.errors import DataFileError

__all__ = ["CorpusReport", "SentenceStream", "expand_files", "read_sentences"]

logger = logging.getLogger(__name__)


def expand_files(patterns: str | list[str], *, option: str) -> list[Path]:
    """The sorted files matching a glob pattern (or several); none is an error that names `option`."""
    patterns = [patterns] if isinstance(patterns, str) else list(patterns)
    files = sorted({Path(name) for pattern in patterns for name in glob.glob(os.path.expanduser(pattern))})
    files = [path for path in files if path.is_file()]
    if not files:
        raise DataFileError(f"{option} {' '.join(patterns)} matches no file")
    return files


@dataclass
class CorpusReport:
    """What reading skipped: empty lines and lines that are not UTF-8 (the first few named by file and line)."""

    sentences: int = 0
    words: int = 0
    empty_lines: int = 0
    undecodable_lines: int = 0
    examples: list[str] = field(default_factory=list)

    @property
    def target_words(self) -> int:
        """Words a language model predicts over this text: every word and each sentence's `</S>`."""
        return self.words + self.sentences

    def undecodable(self, path: Path, line: int) -> None:
        self.undecodable_lines += 1
        if len(self.examples) < 5:
            self.examples.append(f"{path}, line {line}")
            logger.warning("skipping %s, line %d: not UTF-8", path, line)

    def summary(self) -> str:
        text = f"{self.sentences:,} sentences, {self.words:,} words"
        if self.empty_lines:
            text += f"; {self.empty_lines:,} empty lines skipped"
        if self.undecodable_lines:
            text += f"; {self.undecodable_lines:,} lines not UTF-8 skipped ({', '.join(self.examples)}, ...)"
        return text


def read_sentences(path: Path, report: CorpusReport | None = None) -> list[list[str]]:
    """The non-empty lines of one file, split into words; undecodable and empty lines are counted and skipped."""
    report = report if report is not None else CorpusReport()
    sentences = []
    try:
        with open(path, "rb") as file:
            for number, raw in enumerate(file, start=1):
                try:
                    words = raw.decode("utf-8").split()
                except UnicodeDecodeError:
                    report.undecodable(path, number)
                    continue
                if not words:
                    report.empty_lines += 1
                    continue
                sentences.append(words)
                report.sentences += 1
                report.words += len(words)
    except OSError as error:
        raise DataFileError(f"cannot read {path}: {error}") from None
    return sentences


class SentenceStream:
    """Sentences (lists of words) of `files`, shuffled as described above.

    `loop=True` (training) restarts with the next epoch after the last shard, forever; otherwise the stream
    ends (`next_sentence()` returns None). The position (`state_dict()`) is the epoch, the shard and the
    sentence within it; `load_state_dict()` returns to it by re-reading and re-shuffling that one shard.
    """

    def __init__(
        self,
        files: list[Path],
        *,
        seed: int = 0,
        shuffle: bool = True,
        loop: bool = True,
        rank: int = 0,
        world_size: int = 1,
    ) -> None:
        self.files = list(files)
        self.seed, self.shuffle, self.loop = seed, shuffle, loop
        self.rank, self.world_size = rank, world_size
        self.report = CorpusReport()
        self.epoch, self.shard_position, self.sentence_position = 0, 0, 0
        self._sentences: list[list[str]] | None = None
        self._visited_without_sentence = 0

    def state_dict(self) -> dict[str, Any]:
        return {"epoch": self.epoch, "shard_position": self.shard_position, "sentence_position": self.sentence_position}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.epoch, self.shard_position = state["epoch"], state["shard_position"]
        self.sentence_position = state["sentence_position"]
        self._sentences = None

    def next_sentence(self) -> list[str] | None:
        while True:
            if self._sentences is None:
                if self.shard_position == len(self.files):
                    if not self.loop:
                        return None
                    self.epoch, self.shard_position = self.epoch + 1, 0
                self._sentences = self._load_shard()
            if self.sentence_position < len(self._sentences):
                self.sentence_position += 1
                self._visited_without_sentence = 0
                return self._sentences[self.sentence_position - 1]
            self._sentences, self.shard_position, self.sentence_position = None, self.shard_position + 1, 0
            self._visited_without_sentence += 1
            if self._visited_without_sentence > len(self.files):
                where = f" for process {self.rank} of {self.world_size}" if self.world_size > 1 else ""
                raise DataFileError(
                    f"no sentences{where} in {', '.join(map(str, self.files))} ({self.report.summary()})"
                )

    def _load_shard(self) -> list[list[str]]:
        order = list(range(len(self.files)))
        if self.shuffle:
            random.Random(f"{self.seed}/{self.epoch}").shuffle(order)
        path = self.files[order[self.shard_position]]
        sentences = read_sentences(path, self.report)
        if self.shuffle:
            random.Random(f"{self.seed}/{self.epoch}/{path.name}").shuffle(sentences)
        return sentences[self.rank :: self.world_size]
