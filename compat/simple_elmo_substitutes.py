"""simple_elmo 0.9.2's `get_elmo_substitutes` (docs/substitutes.md#compared-with-simple_elmo says what its numbers
are): its input packing, which positions it reports and in which order, computed by this package's language model.

simple_elmo packs the sentences as bilm-tf's training reader does (`_get_batch` with one step per batch): each of
`batch_size` rows reads its own stream of sentences (`<S> w1 .. wn </S>` forwards, `</S> wn .. w1 <S>` backwards),
a row taking the next sentence once its current one is done; the first time a row finds no sentence left, the
whole step is dropped and reading stops, so the sentences still being read then are never reported. Every step
starts from the zero LSTM state, so a prediction depends on its input word alone. A sentence is reported when its
row's step reaches its end, in that order (not the input's).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import torch

from modeling_elmo import ElmoForBidirectionalLM, ElmoTokenizer
from modeling_elmo.text_elmo import BOS_WORD, EOS_WORD

__all__ = ["elmo_substitutes", "packed_steps", "read_vocabulary"]

_SKIPPED_LINE = "!!!MAXTERMID"  # a line bilm-tf's Vocabulary skips
_UNKNOWN = "<UNK>"
_DELIMITER_ROWS = [0, 1]  # the rows simple_elmo's nodelimiters sets to 0 (<S>, </S> in bilm-tf's vocabularies)


def read_vocabulary(lines: Sequence[str]) -> list[str]:
    """bilm-tf's Vocabulary: each stripped line is the word of its row (a `!!!MAXTERMID` line skipped)."""
    return [word for word in (line.strip() for line in lines) if word != _SKIPPED_LINE]


def packed_steps(sentences: Sequence[list[str]], rows: int) -> Iterator[list[tuple[str, str]]]:
    """Each step's `(input word, next word)` of every row, as bilm-tf's `_get_batch` with one step packs the
    marked `sentences` (lists of words, markers included); stops at the first step that finds none left."""
    remaining = iter(sentences)
    streams: list[list[str] | None] = [None] * rows
    while True:
        step = []
        for row in range(rows):
            if streams[row] is None or len(streams[row]) <= 1:
                streams[row] = next(remaining, None)
                if streams[row] is None:
                    return
            stream = streams[row]
            step.append((stream[0], stream[1]))
            streams[row] = stream[1:]
        yield step


class _StepLogits:
    """The logits `h W^T + b` of each language model after one word, from the zero state."""

    def __init__(self, model: ElmoForBidirectionalLM, tokenizer: ElmoTokenizer) -> None:
        self.model, self.tokenizer = model, tokenizer

    def __call__(self, forward_words: list[str], backward_words: list[str]) -> np.ndarray:
        """`(2, rows, vocab)` float32: the forward LM's after each of `forward_words`, the backward's after each of
        `backward_words`."""
        words = [[word] for word in forward_words + backward_words]
        char_ids = self.tokenizer(words, is_split_into_words=True, padding=True, return_tensors="pt")["input_ids"]
        elmo = self.model.elmo
        with torch.no_grad():
            tokens = elmo.char_encoder(char_ids[:, 0]).reshape(2, len(forward_words), 1, -1)
            outputs, _ = elmo.contextualize(tokens)
            top = outputs[-1][:, :, 0]
            return torch.nn.functional.linear(top, self.model.softmax.weight, self.model.softmax.bias).numpy()


def _candidates(logits: np.ndarray, words: list[str], topn: int) -> list[dict[str, Any]]:
    """Each row's `topn` highest logits, picked (and ordered) by `np.argpartition` as simple_elmo picks them."""
    indices = np.argpartition(logits, -topn)[:, -topn:]
    scores = np.round(np.take_along_axis(logits, indices, 1).astype(float), 4)
    return [
        {"candidates": row.tolist(), "candidate_words": [words[i] for i in row], "logp": score.tolist()}
        for row, score in zip(indices, scores, strict=True)
    ]


def _merged(forward: list[dict[str, Any]], backward: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One sentence's positions: the forward entries in order beside the backward ones reversed."""
    return [
        {"word": ahead["word"], "forward": _without_word(ahead), "backward": _without_word(behind)}
        for ahead, behind in zip(forward, reversed(backward), strict=True)
    ]


def _without_word(entry: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in entry.items() if key != "word"}


def elmo_substitutes(
    model: ElmoForBidirectionalLM,
    tokenizer: ElmoTokenizer,
    words: list[str],
    data: Sequence[str],
    *,
    rows: int,
    topn: int,
    nodelimiters: bool,
) -> list[list[dict[str, Any]]]:
    """simple_elmo's `get_elmo_substitutes(data, topn, nodelimiters)` with `rows` = its batch size: for each
    sentence reported (see the module docstring), per word `{"word", "forward": {"candidates", "candidate_words",
    "logp"}, "backward": {...}}`; `words` are the softmax's rows (`read_vocabulary`), and a word outside them is
    `<UNK>`."""
    known = set(words)
    step_logits = _StepLogits(model, tokenizer)
    forwards = [[BOS_WORD, *sentence.split(), EOS_WORD] for sentence in data]
    backwards = [list(reversed(sentence)) for sentence in forwards]
    # The streams run in step (each sentence has the same length both ways): one packing gives both.
    streams = [list(zip(ahead, behind, strict=True)) for ahead, behind in zip(forwards, backwards, strict=True)]
    reported, storage = [], [([], []) for _ in range(rows)]
    for step in packed_steps(streams, rows):
        logits = step_logits([now[0] for now, _ in step], [now[1] for now, _ in step])
        if nodelimiters:
            logits[:, :, _DELIMITER_ROWS] = 0
        ahead, behind = (_candidates(direction, words, topn) for direction in logits)
        for row, (_, (next_word, next_back_word)) in enumerate(step):
            next_word = next_word if next_word in known else _UNKNOWN
            next_back_word = next_back_word if next_back_word in known else _UNKNOWN
            if next_word == EOS_WORD and next_back_word == BOS_WORD:
                reported.append(_merged(*storage[row]))
                storage[row] = ([], [])
                continue
            storage[row][0].append({"word": next_word, **ahead[row]})
            storage[row][1].append({"word": next_back_word, **behind[row]})
    return reported
