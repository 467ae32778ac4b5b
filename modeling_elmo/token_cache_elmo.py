"""`TokenVectorCache`: the token layer's vectors of the words already seen, kept from one batch to the next so that the
character CNN runs once per distinct word of a whole run, as AllenNLP's `vocab_to_cache` and bilm-tf's
`dump_token_embeddings` did, bounded by a number of words (least recently used out first).
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from .word_slots_elmo import DEFAULT_CACHED_WORDS, WordSlots

__all__ = ["DEFAULT_CACHED_WORDS", "TokenVectorCache"]


class TokenVectorCache:
    """Token vectors by word, at most `max_words` of them: `max_words x projection_dim x 4` bytes in float32 (half in
    bfloat16 or float16), held on the model's device, allocated as the words come.

    Pass it to [`ElmoModel`]'s `forward` (`token_cache=`): the character encoder then encodes only the words it does
    not hold, in eval mode without gradients (a model in training, or under autograd, does not consult it). A word is
    its row of character ids (and its word id, for models with a word embedding), packed to integers, as bytes.

    A cache holds the vectors of one model's weights in one dtype on one device: a new set of weights needs a new
    cache. Its vectors are those the encoder gives the word in any batch, bit for bit, where the encoder's vectors do
    not depend on the batch: on CPUs (`ElmoCharacterEncoder._encode` computes a multiple of 16 rows for that; only
    products of 8 columns or fewer, narrower than any model's, round a row by its place), as
    tests/model/test_token_cache.py checks. On GPUs that is not checked: elmo-embed uses no cache there.
    """

    def __init__(self, max_words: int = DEFAULT_CACHED_WORDS) -> None:
        self.max_words = max_words
        self._slots = WordSlots(max_words)  # which row of `_vectors` holds each word (raises for max_words < 1)
        self._vectors: torch.Tensor | None = None

    def __len__(self) -> int:
        return len(self._slots)

    def vectors(
        self, words: torch.Tensor, encode: Callable[[torch.Tensor], torch.Tensor], dtype: torch.dtype
    ) -> torch.Tensor:
        """The vectors `(N, projection_dim)` of `N` distinct `words` (integer rows `(N, K)`): the cached ones from
        the cache, the others from `encode(index)` (the index of those rows of `words`, on their device), which
        the cache keeps then, in place of the least recently used where it is full."""
        self._check_holds(dtype, words.device)
        keys = [row.tobytes() for row in words.cpu().numpy()]
        held, slots, missing = self._slots.find(keys)
        if held and not missing:
            return self._vectors[slots]
        encoded = encode(torch.tensor(missing, dtype=torch.long, device=words.device))
        vectors = encoded.new_empty(len(keys), encoded.shape[1])
        vectors[missing] = encoded
        if held:
            vectors[held] = self._vectors[slots]
        self._keep([keys[index] for index in missing], encoded)
        return vectors

    def _check_holds(self, dtype: torch.dtype, device: torch.device) -> None:
        if self._vectors is not None and (self._vectors.dtype, self._vectors.device) != (dtype, device):
            raise ValueError(
                f"this TokenVectorCache holds {self._vectors.dtype} vectors on {self._vectors.device}, not {dtype} on"
                f" {device}: a cache serves one model in one dtype on one device; make a new one"
            )

    def _keep(self, keys: list[bytes], encoded: torch.Tensor) -> None:
        """Keep the vectors `encoded` of the new words `keys` (at most the last `max_words` of them), in the rows
        `WordSlots.take` gives them."""
        dropped, slots = self._slots.take(keys)
        if not slots:
            return
        held = 0 if self._vectors is None else self._vectors.shape[0]
        rows = self._slots.grown(held)
        if rows > held:
            # A tensor outside inference mode: the next batch may update it in place under `torch.no_grad` alone.
            with torch.inference_mode(False):
                grown = encoded.new_empty(rows, encoded.shape[1])
            if self._vectors is not None:
                grown[:held] = self._vectors
            self._vectors = grown
        self._vectors[slots] = encoded[dropped:]
