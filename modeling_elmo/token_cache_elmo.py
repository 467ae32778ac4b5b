"""`TokenVectorCache`: the token layer's vectors of the words already seen, kept from one batch to the next so that the
character CNN runs once per distinct word of a whole run, as AllenNLP's `vocab_to_cache` and bilm-tf's
`dump_token_embeddings` did, bounded by a number of words (least recently used out first).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable

import torch

__all__ = ["DEFAULT_CACHED_WORDS", "TokenVectorCache"]

# 2**16 words hold most of a corpus' tokens (Zipf): 32 MiB for the bundled model (projection_dim 128, float32),
# 128 MiB at the original size (512).
DEFAULT_CACHED_WORDS = 1 << 16


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
        if max_words < 1:
            raise ValueError(f"a TokenVectorCache holds at least 1 word, got max_words={max_words}")
        self.max_words = max_words
        self._slots: OrderedDict[bytes, int] = OrderedDict()  # word -> its row of `_vectors`, oldest use first
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
        held = [index for index, key in enumerate(keys) if key in self._slots]
        missing = [index for index, key in enumerate(keys) if key not in self._slots]
        slots = [self._slots[keys[index]] for index in held]
        for index in held:
            self._slots.move_to_end(keys[index])
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
        of the least recently used words where the cache is full: its rows in use are always 0..len - 1."""
        dropped = max(len(keys) - self.max_words, 0)
        keys, encoded = keys[dropped:], encoded[dropped:]
        if not keys:
            return
        self._reserve(min(len(self._slots) + len(keys), self.max_words), encoded)
        slots = []
        for key in keys:
            slot = len(self._slots) if len(self._slots) < self.max_words else self._slots.popitem(last=False)[1]
            self._slots[key] = slot
            slots.append(slot)
        self._vectors[slots] = encoded

    def _reserve(self, rows: int, like: torch.Tensor) -> None:
        """Room for `rows` vectors like `like`'s: the storage doubles as the words come, up to `max_words`."""
        held = 0 if self._vectors is None else self._vectors.shape[0]
        if rows <= held:
            return
        # A tensor outside inference mode: the next batch may update it in place under `torch.no_grad` alone.
        with torch.inference_mode(False):
            grown = like.new_empty(min(max(rows, 2 * held), self.max_words), like.shape[1])
        if self._vectors is not None:
            grown[:held] = self._vectors
        self._vectors = grown
