"""bilm-tf's batches: `batch_size` streams of sentences, cut into windows of `unroll_steps` words, no padding.

Each row of a batch is one stream. A sentence enters a stream as `<S> w1 ... wn </S>` (reversed for the
backward LM: `</S> wn ... w1 <S>`); the inputs are its words but the last, the targets the words one step
ahead, so `</S>` is only ever a target and the next sentence starts with `<S>` as input. A sentence that does
not fit continues in the same row of the next window, which is why the LSTM state of row k is carried into
row k of the next batch. A finite stream that runs dry leaves the rest of its row empty (`None`).
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import torch

from modeling_elmo.softmax_elmo import IGNORE_INDEX
from modeling_elmo.text_elmo import BOS_WORD, EOS_WORD

from .lm_vocabulary import LmVocabulary
from .text_stream import SentenceStream

__all__ = ["LmWindow", "WindowEncoder", "WindowPacker"]

# One window: per row, the input words and the target words (None past the end of a finished stream).
LmWindow = tuple[list[list[str | None]], list[list[str | None]]]


class WindowPacker:
    """Packs the sentences of `source` into windows of `(batch_size, unroll_steps)` words."""

    def __init__(self, source: SentenceStream, *, batch_size: int, unroll_steps: int, reverse: bool = False) -> None:
        self.source = source
        self.batch_size, self.unroll_steps, self.reverse = batch_size, unroll_steps, reverse
        self.rows: list[list[str]] = [[] for _ in range(batch_size)]  # what is left of each row's sentence
        self.finished = False

    def state_dict(self) -> dict[str, Any]:
        return {"rows": [list(row) for row in self.rows], "finished": self.finished, "source": self.source.state_dict()}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        if len(state["rows"]) != self.batch_size:
            raise ValueError(
                f"the saved data position has {len(state['rows'])} streams per process, this run {self.batch_size}: "
                "resume with the same per-device batch size"
            )
        self.rows = [list(row) for row in state["rows"]]
        self.finished = state["finished"]
        self.source.load_state_dict(state["source"])

    def next_window(self) -> LmWindow | None:
        """The next window, or None once every row of a finite source has run dry."""
        inputs = [[None] * self.unroll_steps for _ in range(self.batch_size)]
        targets = [[None] * self.unroll_steps for _ in range(self.batch_size)]
        filled = False
        for row in range(self.batch_size):
            step = 0
            while step < self.unroll_steps:
                if len(self.rows[row]) <= 1:  # only the previous sentence's </S> (already a target) is left
                    sentence = None if self.finished else self.source.next_sentence()
                    if sentence is None:
                        self.finished, self.rows[row] = True, []
                        break
                    self.rows[row] = self._marked(sentence)
                count = min(len(self.rows[row]) - 1, self.unroll_steps - step)
                inputs[row][step : step + count] = self.rows[row][:count]
                targets[row][step : step + count] = self.rows[row][1 : count + 1]
                self.rows[row] = self.rows[row][count:]
                step += count
                filled = True
        return (inputs, targets) if filled else None

    def _marked(self, sentence: list[str]) -> list[str]:
        if self.reverse:
            return [EOS_WORD, *reversed(sentence), BOS_WORD]
        return [BOS_WORD, *sentence, EOS_WORD]


class WindowEncoder:
    """Windows of words -> tensors: character ids `(batch, unroll, max_characters_per_token)` of the inputs
    (all zero where there is no word) and vocabulary ids `(batch, unroll)` of the targets (-100 where none)."""

    def __init__(self, tokenizer: Any, vocabulary: LmVocabulary) -> None:
        self.vocabulary = vocabulary
        self.width = tokenizer.max_characters_per_token
        self._char_ids = lru_cache(maxsize=1 << 18)(tokenizer.word_char_ids)

    def __call__(self, window: LmWindow) -> tuple[torch.Tensor, torch.Tensor]:
        inputs, targets = window
        empty = [0] * self.width
        char_ids = [[empty if word is None else self._char_ids(word) for word in row] for row in inputs]
        word_ids = [
            [IGNORE_INDEX if word is None else self.vocabulary.word_id(word) for word in row] for row in targets
        ]
        return torch.tensor(char_ids, dtype=torch.long), torch.tensor(word_ids, dtype=torch.long)
