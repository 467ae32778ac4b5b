"""simple_elmo 0.9.2's `ElmoModel` (ltgoslo/simple_elmo, `simple_elmo/elmo_helpers.py`), computed by this
package's model: change `from simple_elmo import ElmoModel` to `from elmo_transformers.compat.simple_elmo import
ElmoModel` and the rest of the code stays.

```python
model = ElmoModel()
model.load("209.zip")  # an NLPL archive or its folder, in any of its layouts (converted on load)
vectors = model.get_elmo_vectors(sentences, layers="average")  # (sentences, longest, 2 * projection_dim)
```

The numbers are simple_elmo's (on TensorFlow, bilm-tf's graph), to about 1e-6, including what its graph does
that a user may not expect, because code written against it has its numbers:

- the LSTM state is carried from batch to batch (row k of a batch continues row k of the one before, as bilm-tf
  ran), from zeros at the start of each call; with `warmup=True` (the default) the first batch is run once first,
  so every sentence of the first `max_batch_size` starts from the state that batch left;
- a sentence shorter than the longest of its batch gets, at the positions up to that length, the token layer of an
  all-padding word (bilm-tf does not mask its token layer): non-zero for `layers="average"` and in layer 0 of
  `layers="all"`, zero for `"top"`; past the batch's longest sentence the output is zero;
- `get_elmo_vector_average` averages those positions too, and for `layers="all"` reshapes (not transposes) the
  `(layers, words)` axes, as simple_elmo does.

What differs (docs/migration.md): `session=` is refused (there is no TensorFlow session), nothing is logged at INFO
and the root logger is left alone, and bad input is one line (a `ValueError` naming it) where simple_elmo raised
`SystemExit`, a `ValueError` from `max()` or an `UnboundLocalError`.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch

from .converted_models import check_sentences, load_converted, word_layers
from .simple_elmo_substitutes import elmo_substitutes, read_vocabulary

__all__ = ["LAYER_CHOICES", "ElmoModel", "divide_chunks", "tokenize"]

LAYER_CHOICES = ("average", "top", "all")
_TOKEN_PATTERN = re.compile(r"(?u)\w+")
logger = logging.getLogger(__name__)


def tokenize(string: str, limit: int | None = None) -> list[str]:
    """The words of `string` as simple_elmo's examples split text (`examples/wsd_eval.py`): every run of word
    characters (`\\w+`, Unicode), the first `limit` of them (all with None). Punctuation is dropped."""
    if not isinstance(string, str):
        raise ValueError(f"tokenize takes a string, got {type(string).__name__}")
    return _TOKEN_PATTERN.findall(string)[:limit]


def divide_chunks(data: Sequence[Any], n: int) -> Iterator[Sequence[Any]]:
    """`data` in consecutive slices of `n` items (the last may be shorter), as simple_elmo batches."""
    for start in range(0, len(data), n):
        yield data[start : start + n]


class ElmoModel:
    """simple_elmo's `ElmoModel`: `load`, then `get_elmo_vectors`, `get_elmo_vector_average` (with
    `load(..., full=True)` too: `model` is then the language model, `ElmoForBidirectionalLM`, whose biLM gives the
    vectors).

    Attributes set by `load`, as simple_elmo's: `batch_size` (`max_batch_size`), `max_chars`, `vector_size`
    (`2 * projection_dim`), `n_layers` (biLSTM layers + 1); and `model`, `tokenizer` (this package's).
    """

    def __init__(self) -> None:
        self.batch_size: int | None = None
        self.max_chars: int | None = None
        self.vector_size: int | None = None
        self.n_layers: int | None = None
        self.model: torch.nn.Module | None = None
        self.tokenizer = None
        self.vocab: list[str] | None = None
        self._bilm = None
        self._padding_word: np.ndarray | None = None

    def load(self, directory: str | Path, max_batch_size: int = 32, limit: int | None = 100, full: bool = False) -> str:
        """Load (and convert) the model of an NLPL archive or its unzipped folder, in any layout (bilm-tf
        `model.hdf5` or other `*.hdf5` with `options.json`; a bilm-tf checkpoint; an ELMoForManyLangs model).
        `max_batch_size`: sentences per batch. `limit`: accepted and unused (simple_elmo cached that many
        vocabulary words' character ids; the ids are computed the same either way). `full`: load the language model
        (a checkpoint's softmax) as `self.model`, an `ElmoForBidirectionalLM`."""
        if isinstance(max_batch_size, bool) or not isinstance(max_batch_size, int) or max_batch_size < 1:
            raise ValueError(f"max_batch_size must be a positive integer, got {max_batch_size!r}")
        if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 0):
            raise ValueError(f"limit must be a non-negative integer or None, got {limit!r}")
        converted = load_converted(directory, language_model=bool(full))
        self.model, self.tokenizer = converted.model, converted.tokenizer
        self.vocab = None if converted.vocabulary_lines is None else read_vocabulary(converted.vocabulary_lines)
        self._bilm = getattr(self.model, "elmo", self.model)  # a language model's biLM gives the vectors
        config = self._bilm.config
        self.batch_size, self.max_chars = max_batch_size, config.max_characters_per_token
        self.vector_size, self.n_layers = 2 * config.projection_dim, config.num_hidden_layers + 1
        self._padding_word = self._token_layer_of_padding()
        logger.info("Loaded %s: %d layers of %d dimensions", directory, self.n_layers, self.vector_size)
        return "The model is now loaded."

    def get_elmo_vectors(
        self, texts: Sequence[Sequence[str]], warmup: bool = True, layers: str = "average", session: Any = None
    ) -> np.ndarray:
        """Every word's vector, float64: `(sentences, longest sentence, vector_size)`, or with `layers="all"`
        `(sentences, n_layers, longest sentence, vector_size)`. `layers`: "average" (the mean of all layers),
        "top" (the top biLSTM layer) or "all". See the module docstring for the state and the padding."""
        sentences = self._check_call(texts, layers, session)
        longest = max(len(sentence) for sentence in sentences)
        shape = (len(sentences), self.n_layers) if layers == "all" else (len(sentences),)
        vectors = np.zeros((*shape, longest, self.vector_size))
        first = 0
        for batch in self._batches(sentences, warmup, layers):
            words = batch.shape[-2]
            vectors[first : first + len(batch), ..., :words, :] = batch
            first += len(batch)
        return vectors

    def get_elmo_vector_average(
        self, texts: Sequence[Sequence[str]], warmup: bool = True, layers: str = "average", session: Any = None
    ) -> np.ndarray:
        """One vector per sentence, float64: the mean of its batch's positions (its words, then the padding up to
        the batch's longest sentence), divided by its L2 norm: `(sentences, vector_size)`, or with `layers="all"`
        `(sentences, n_layers, vector_size)` (the `(layers, words)` axes reshaped, as simple_elmo does). A sentence
        without words is refused: simple_elmo divides by a zero norm (NaN) for "top"."""
        sentences = self._check_call(texts, layers, session)
        for index, sentence in enumerate(sentences):
            if not sentence:
                raise ValueError(f"texts[{index}] has no words: an empty sentence has no average vector")
        averages = []
        for batch in self._batches(sentences, warmup, layers):
            if layers == "all":  # simple_elmo's reshape of (batch, layers, words, dim) to (batch, words, layers, dim)
                batch = batch.reshape(len(batch), batch.shape[2], self.n_layers, self.vector_size)
            for sentence in batch.astype(np.float64):
                mean = sentence.sum(axis=0) / sentence.shape[0]
                averages.append(mean / np.linalg.norm(mean))
        return np.stack(averages)

    def get_elmo_substitutes(
        self, data: Sequence[str], topn: int = 3, nodelimiters: bool = True
    ) -> list[list[dict[str, Any]]]:
        """simple_elmo's lexical substitutes (a model loaded with `full=True`): for the sentences (strings, split at
        whitespace) its packing reports, in its order, per word `{"word", "forward": {"candidates",
        "candidate_words", "logp"}, "backward": {...}}`, each direction's `topn` highest logits after one neighbour
        (see `compat/simple_elmo_substitutes.py` and docs/substitutes.md). Needs at least `max_batch_size`
        sentences, as simple_elmo does."""
        if self.vocab is None:
            raise ValueError("get_elmo_substitutes needs the language model: load(PATH, full=True) a checkpoint")
        if isinstance(data, str) or not all(isinstance(sentence, str) for sentence in data):
            raise ValueError("data must be a list of sentences, each a string of words separated by whitespace")
        if len(data) < self.batch_size:
            raise ValueError(
                f"get_elmo_substitutes needs at least max_batch_size ({self.batch_size}) sentences, got {len(data)}"
            )
        if isinstance(topn, bool) or not isinstance(topn, int) or not 1 <= topn <= len(self.vocab):
            raise ValueError(f"topn must lie in 1..{len(self.vocab)} (the vocabulary's size), got {topn!r}")
        return elmo_substitutes(
            self.model, self.tokenizer, self.vocab, data, rows=self.batch_size, topn=topn, nodelimiters=nodelimiters
        )

    def _check_call(self, texts: Any, layers: str, session: Any) -> list[list[str]]:
        if self.model is None:
            raise ValueError("no model is loaded: call load(PATH) first")
        if session is not None:
            raise ValueError("session= is a TensorFlow session: this model runs on torch and takes none")
        if layers not in LAYER_CHOICES:
            raise ValueError(f"layers must be one of {', '.join(LAYER_CHOICES)}, got {layers!r}")
        sentences = check_sentences(texts, "texts")
        if not sentences:
            raise ValueError("texts is empty: pass at least one sentence (a list of words)")
        return sentences

    def _batches(self, sentences: list[list[str]], warmup: bool, layers: str) -> Iterator[np.ndarray]:
        """Each batch of `max_batch_size` sentences as simple_elmo's graph gives it (float32): `(batch, words,
        vector_size)`, `(batch, n_layers, words, vector_size)` for "all", `words` its longest sentence; the state
        carried from batch to batch in `max_batch_size` rows, after the first batch once more with `warmup`."""
        config = self._bilm.config
        rows = (2, config.num_hidden_layers, self.batch_size)
        state = (torch.zeros(*rows, config.projection_dim), torch.zeros(*rows, config.cell_size))
        if warmup:
            self._run(sentences[: self.batch_size], state)
        for batch in divide_chunks(sentences, self.batch_size):
            layered = self._run(batch, state)
            if layers == "all":
                yield layered
            elif layers == "top":
                yield layered[:, -1]
            else:
                yield layered.mean(axis=1)

    def _run(self, batch: list[list[str]], state: tuple[torch.Tensor, torch.Tensor]) -> np.ndarray:
        """The layers of `batch` from the first rows of `state`, which then hold the state after them; the
        positions past a sentence's words hold the padding word's token layer, as bilm-tf's output does."""
        h, c = state
        rows = len(batch)
        layered, (final_h, final_c) = word_layers(self._bilm, self.tokenizer, batch, (h[:, :, :rows], c[:, :, :rows]))
        h[:, :, :rows], c[:, :, :rows] = final_h, final_c
        for row, sentence in enumerate(batch):
            layered[row, 0, len(sentence) :] = self._padding_word
        return layered

    def _token_layer_of_padding(self) -> np.ndarray:
        """`[e; e]`, e the token layer of a word of padding characters only (id 0 everywhere), which bilm-tf's
        token layer gives the positions past a sentence's end."""
        config = self._bilm.config
        char_ids = torch.zeros(1, config.max_characters_per_token, dtype=torch.long)
        word_ids = torch.zeros(1, dtype=torch.long) if config.word_embedding_dim else None
        with torch.no_grad():
            token = self._bilm.char_encoder(char_ids, word_ids)[0].numpy()
        return np.concatenate([token, token])
