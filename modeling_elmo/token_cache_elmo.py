"""`TokenVectorCache`: the token layer's vectors of the words already seen, kept from one batch to the next so that the
character CNN runs once per distinct word of a whole run, as AllenNLP's `vocab_to_cache` and bilm-tf's
`dump_token_embeddings` did, bounded by a number of words (least recently used out first: `WordSlots`).

`WordSlots` keeps which row holds each word for both runtimes' caches: this one, and the ONNX graphs'
(`elmo_transformers.serving.token_graph`), which must not import torch. So this module imports torch only where a
`TokenVectorCache` works. (One file rather than two: transformers 5.4, the floor, copies a remote-code model's direct
relative imports alone, and modeling_elmo.py imports this one.)
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import torch

__all__ = ["DEFAULT_CACHED_WORDS", "TokenVectorCache", "WordSlots"]

# 2**16 words hold most of a corpus' tokens (Zipf): 32 MiB for the bundled model (projection_dim 128, float32),
# 128 MiB at the original size (512).
DEFAULT_CACHED_WORDS = 1 << 16


class WordSlots:
    """The rows 0..len - 1 of a cache's storage (at most `max_words` rows), one per word held: a word is a key (its
    row of character ids, as bytes). The cache stores the vectors; this keeps which row is whose and which word
    goes first when a new one needs a row (the least recently used)."""

    def __init__(self, max_words: int = DEFAULT_CACHED_WORDS) -> None:
        if type(max_words) is not int or max_words < 1:
            raise ValueError(f"a token-vector cache holds at least 1 word, got max_words={max_words!r}")
        self.max_words = max_words
        self._slots: OrderedDict[bytes, int] = OrderedDict()  # word -> its row, oldest use first

    def __len__(self) -> int:
        return len(self._slots)

    def find(self, keys: list[bytes]) -> tuple[list[int], list[int], list[int]]:
        """Of distinct `keys`: the indices of those held, their rows (each now the most recently used), and the
        indices of those not held."""
        held = [index for index, key in enumerate(keys) if key in self._slots]
        missing = [index for index, key in enumerate(keys) if key not in self._slots]
        for index in held:
            self._slots.move_to_end(keys[index])
        return held, [self._slots[keys[index]] for index in held], missing

    def take(self, keys: list[bytes]) -> tuple[int, list[int]]:
        """Rows for new distinct `keys` (none held): the last `max_words` of them get one each, in the rows of the
        least recently used words where all rows are taken. Returns how many of the first keys got none, and the
        rows of the others, in order; the rows in use are 0..len - 1 after it as before."""
        dropped = max(len(keys) - self.max_words, 0)
        slots = []
        for key in keys[dropped:]:
            slot = len(self._slots) if len(self._slots) < self.max_words else self._slots.popitem(last=False)[1]
            self._slots[key] = slot
            slots.append(slot)
        return dropped, slots

    def grown(self, held: int) -> int:
        """How many rows storage of `held` rows grows to so as to hold every row in use: double, up to
        `max_words`, so that a run's storage is allocated as its words come, a few times in all."""
        return held if len(self._slots) <= held else min(max(len(self._slots), 2 * held), self.max_words)


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
        encoded = encode(words.new_tensor(missing).long())
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
            import torch  # (here, not above: `WordSlots` serves the graph path, which has no torch)

            # A tensor outside inference mode: the next batch may update it in place under `torch.no_grad` alone.
            with torch.inference_mode(False):
                grown = encoded.new_empty(rows, encoded.shape[1])
            if self._vectors is not None:
                grown[:held] = self._vectors
            self._vectors = grown
        self._vectors[slots] = encoded[dropped:]
