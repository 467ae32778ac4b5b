"""One pass of an `elmo-embed` run over its input (`EmbeddingPass`): the lines are read and counted window by window,
each window is sorted by length into batches (those of an uninterrupted run, so that a resumed run computes each line
as it would have been computed), and this process's batches are embedded and written into `OUT.partial`; the others'
are only counted (`sharding.BatchShare`). With the plan's `overlap` reading, the model and writing run at once
(`stages.run_stages`); the file is the same either way.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
from tqdm.auto import tqdm

from .batching import Piece, batch_groups, bucketed_batches
from .lines import read_lines
from .overflow import refuse_overflow
from .runner import PendingVectors, PreparedBatch
from .segment_store import SegmentStore
from .sharding import BatchShare
from .stages import run_stages
from .summary import EmbedSummary

if TYPE_CHECKING:
    from .plan import RunPlan

__all__ = ["MAX_WARNINGS", "EmbeddingPass"]

# Lines with invalid UTF-8 get a warning each, up to this many; the summary counts them all.
MAX_WARNINGS = 10


@dataclass
class _EmptyLine:
    """A line of no words, written as a dataset of 0 words in its place in the stream."""

    line: int
    words: list[str]


@dataclass
class _OtherProcessBatch:
    """A batch that another process embeds: the main process counts its `words` in the progress bar."""

    words: int


@dataclass
class _Batch:
    """Pieces of lines embedded together: `words` holds each of their lines' words, `vectors` the model's output
    once the batch has run (`prepared` is the tokenizer's batch until then)."""

    pieces: list[Piece]
    words: dict[int, list[str]]
    prepared: PreparedBatch | None
    vectors: PendingVectors | None = None


@dataclass
class EmbeddingPass:
    """One pass over the input, as the run's `plan` says: lines are read, counted (`summary`), and embedded window by
    window into `file`. With --tokenize the tokenizer splits the lines into words, written with each line's dataset.

    Under `accelerate launch` every process reads the whole input and forms the same batches, and embeds its `share`
    of them (`BatchShare`); the main process, 0, also writes the empty lines."""

    plan: RunPlan
    file: SegmentStore
    summary: EmbedSummary
    share: BatchShare = field(init=False)
    # The lines stored by an earlier run, read once at the start: only the writing stage touches the file after.
    finished: set[int] = field(default_factory=set)

    def __post_init__(self) -> None:
        self.share = BatchShare(self.plan.processes.process_index, self.plan.processes.num_processes)

    def embed_lines(self) -> dict[str, str] | None:
        """Embed every line not yet in the file; returns "sentence_to_index" (None unless the plan
        `keeps_sentences`)."""
        sentence_to_index: dict[str, str] | None = {} if self.plan.keeps_sentences else None
        self.finished = self.file.finished_lines()
        bar = {
            "desc": "elmo-embed",
            "unit": "word",
            "unit_scale": True,
            "disable": None if self.share.process == 0 else True,
        }
        with tqdm(**bar) as progress:
            run_stages(
                self._work(sentence_to_index),
                self._run_model,
                lambda item: self._write(item, progress),
                overlap=self.plan.overlap,
            )
        replaced = self.summary.replaced.total
        if replaced > MAX_WARNINGS:
            tqdm.write(f"elmo-embed: warning: {replaced:,} lines are not valid UTF-8", file=sys.stderr)
        return sentence_to_index

    def _work(self, sentence_to_index: dict[str, str] | None) -> Iterator[_EmptyLine | _Batch | _OtherProcessBatch]:
        """Read and count the lines; give the empty lines and the batches (tokenized) of the others to write, in
        the order they are to be written, window by window. The windows and batches are those of an uninterrupted
        run, finished lines included, so that a resumed run computes each line as it would have been computed."""
        options, summary = self.plan.options, self.summary
        split_words, max_words, limits = self.plan.split_words, options.max_words, self.plan.limits
        window: list[tuple[int, list[str]]] = []
        window_words = 0
        for line in read_lines(options.input):
            words = split_words(line.text)
            summary.lines += 1
            summary.words += len(words)
            if sentence_to_index is not None:
                sentence_to_index[line.text] = str(line.index)
            if line.replaced:
                self._warn_replaced(line.index)
            if not words:
                summary.empty.add(line.index)
            if len(words) > max_words:
                summary.split.add(line.index)
            if line.index in self.finished:
                summary.resumed_lines += 1
            if not words:
                if line.index not in self.finished and self.share.process == 0:
                    yield _EmptyLine(line.index, words)
            else:
                window.append((line.index, words))
                window_words += len(words)
                if len(window) >= max(limits.window_lines, options.batch_size) or window_words >= limits.window_words:
                    yield from self._batches(window)
                    window, window_words = [], 0
        yield from self._batches(window)

    def _warn_replaced(self, index: int) -> None:
        self.summary.replaced.add(index)
        if self.summary.replaced.total <= MAX_WARNINGS:
            tqdm.write(
                f"elmo-embed: warning: line {index + 1} (dataset {index}) is not valid UTF-8:"
                " its bad bytes are embedded as U+FFFD",
                file=sys.stderr,
            )

    def _batches(self, window: list[tuple[int, list[str]]]) -> Iterator[_Batch | _OtherProcessBatch]:
        """The (line index, words) pairs of one window in batches of similar length, tokenized; the batches of
        finished lines only are left out, and those of other processes are only counted (by the main process)."""
        line_words = dict(window)
        options, owner = self.plan.options, self.share.window_owners()
        batches = list(bucketed_batches(window, batch_size=options.batch_size, max_words=options.max_words))
        groups = batch_groups(batches)
        for pieces, group in zip(batches, groups, strict=True):
            if all(piece.line in self.finished for piece in pieces):
                continue
            if owner(group) != self.share.process:
                if self.share.process == 0:
                    yield _OtherProcessBatch(sum(len(piece.words) for piece in pieces))
                continue
            words = {piece.line: line_words[piece.line] for piece in pieces}
            yield _Batch(pieces, words, self.plan.embedder.prepare([piece.words for piece in pieces]))

    def _run_model(self, item: _EmptyLine | _Batch | _OtherProcessBatch) -> _EmptyLine | _Batch | _OtherProcessBatch:
        if isinstance(item, _Batch) and item.prepared is not None:
            item.vectors = self.plan.embedder.run(item.prepared)
            item.prepared = None  # its memory (pinned on a GPU) can go
        return item

    def _write(self, item: _EmptyLine | _Batch | _OtherProcessBatch, progress: tqdm) -> None:
        """Write an empty line's dataset, or the vectors of a batch's pieces but those of finished lines (computed
        with them, as in the uninterrupted run); a batch is flushed and counted, another process's only counted."""
        if isinstance(item, _OtherProcessBatch):
            self.summary.embedded_words += item.words
            progress.update(item.words)
            return
        if isinstance(item, _EmptyLine):
            self._write_piece(item.line, 0, np.zeros(self.plan.embedder.shape(0), dtype=np.float32), item.words)
            return
        assert item.vectors is not None
        for piece, vectors in zip(item.pieces, item.vectors.result(), strict=True):
            if piece.line not in self.finished:
                self._write_piece(piece.line, piece.start, vectors, item.words[piece.line])
        self.file.end_batch()
        words = sum(len(piece.words) for piece in item.pieces)
        self.summary.embedded_words += words
        progress.update(words)

    def _write_piece(self, line: int, start: int, vectors: np.ndarray, words: list[str]) -> None:
        """Write the vectors of words `start`... of line `line`, whose words are `words`; refuse a NaN or an
        infinity (the weights are finite: `require_model_folder`), which the model computed by overflowing."""
        refuse_overflow(line, vectors, self.plan.embedder.compute_dtype)
        self.file.write(line, start, vectors, len(words), tokens=words if self.plan.options.tokenize else None)
