"""ELMo's vocabularies: the character ids of a word (the rule), and the special words of bilm-tf's word vocabulary.

A word is one row of `max_characters_per_token` character ids: `[bow, *body, eow, pad, ...]` (`framed_char_ids`).
Its body is, for bilm-tf and AllenNLP, its UTF-8 bytes, each id the byte + 1 (0 means "no word here"), cut after
`max_characters_per_token - 2` bytes (a multi-byte character may be cut); for ELMoForManyLangs, its first
`max_characters_per_token - 2` code points, each looked up in a character vocabulary. The sentence-marker words
`<S>` and `</S>` have one character of their own as their body instead.

Each rule is written once, for one word (`word_to_char_ids`, `word_to_code_point_ids`); the batched forms
(`words_to_char_ids`, `words_to_code_point_ids`) give the same rows for many words at once with numpy: the same
encoding and lookup of a character, rows framed by `framed_char_ids`, the marker words' rows made by it too.
tests/model/test_vocabulary.py holds each batched form equal to its rule on awkward words.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence

import numpy as np

from .configuration_elmo import BILM_TF_CHAR_IDS

__all__ = [
    "BILM_TF_SPECIAL_WORDS",
    "BILM_TF_SPECIAL_WORD_IDS",
    "BOS_WORD",
    "EOS_WORD",
    "UNK_WORD",
    "framed_char_ids",
    "word_to_char_ids",
    "word_to_code_point_ids",
    "words_to_char_ids",
    "words_to_code_point_ids",
]

BOS_WORD, EOS_WORD, UNK_WORD = "<S>", "</S>", "<UNK>"
# bilm-tf's word vocabularies (the softmax's rows) start with these three words, ids 0, 1, 2.
BILM_TF_SPECIAL_WORDS = (BOS_WORD, EOS_WORD, UNK_WORD)
BILM_TF_SPECIAL_WORD_IDS = tuple(range(len(BILM_TF_SPECIAL_WORDS)))


def framed_char_ids(
    body: Sequence[int], special_char_ids: Mapping[str, int], max_characters_per_token: int
) -> list[int]:
    """The `max_characters_per_token` character ids of one word: `[bow, *body, eow, pad, ...]` with the ids of
    `special_char_ids` (`bow`, `eow`, `pad`); `body` (at most `max_characters_per_token - 2` ids) is the word's
    characters, or the `bos`/`eos` character alone for a sentence marker."""
    ids = [special_char_ids["bow"], *body, special_char_ids["eow"]]
    return ids + [special_char_ids["pad"]] * (max_characters_per_token - len(ids))


def _marker_char_id(word: str, special_char_ids: Mapping[str, int]) -> int | None:
    """The character that stands for a sentence marker word (`<S>`, `</S>`) between its frame; None for other words."""
    if word in (BOS_WORD, EOS_WORD):
        return special_char_ids["bos" if word == BOS_WORD else "eos"]
    return None


# A word's bytes as bilm-tf reads them ("ignore": a lone surrogate has none); a byte's id is the byte + 1, so that 0
# is "no word here".
_ENCODING, _ERRORS = "utf-8", "ignore"
_BYTE_ID_SHIFT = 1


def word_to_char_ids(word: str, max_characters_per_token: int = 50) -> list[int]:
    """Character ids of one word, exactly as bilm-tf and AllenNLP compute them.

    UTF-8 bytes truncated to `max_characters_per_token - 2` (a multi-byte character may be cut), between
    begin- and end-of-word marks, padded, every id shifted by +1 so that 0 means "no word here".
    "<S>" and "</S>" are the sentence-marker words; "" is a valid word of no bytes.
    """
    marker = _marker_char_id(word, BILM_TF_CHAR_IDS)
    if marker is not None:
        body = [marker]
    else:
        body = [byte + _BYTE_ID_SHIFT for byte in word.encode(_ENCODING, _ERRORS)[: max_characters_per_token - 2]]
    return framed_char_ids(body, BILM_TF_CHAR_IDS, max_characters_per_token)


def word_to_code_point_ids(
    word: str, char_vocab: Mapping[str, int], special_char_ids: Mapping[str, int], max_characters_per_token: int
) -> list[int]:
    """Character ids of one word as ELMoForManyLangs computes them: its first `max_characters_per_token - 2` code
    points looked up in `char_vocab` (`special_char_ids["oov"]` for one it lacks), framed by `special_char_ids`."""
    marker = _marker_char_id(word, special_char_ids)
    if marker is not None:
        body = [marker]
    else:
        body = [char_vocab.get(char, special_char_ids["oov"]) for char in word[: max_characters_per_token - 2]]
    return framed_char_ids(body, special_char_ids, max_characters_per_token)


def words_to_char_ids(words: Sequence[str], max_characters_per_token: int = 50) -> np.ndarray:
    """`word_to_char_ids` of every word of `words`: (words, max_characters_per_token) int64, computed together."""
    width = max_characters_per_token - 2
    encoded = [word.encode(_ENCODING, _ERRORS) for word in words]
    sizes = np.fromiter(map(len, encoded), dtype=np.intp, count=len(encoded))
    data = np.frombuffer(b"".join(encoded), dtype=np.uint8)
    body = _leading_units(data, sizes, width) + np.uint16(_BYTE_ID_SHIFT)  # small integers: less memory to write
    ids = _framed(body, np.minimum(sizes, width), BILM_TF_CHAR_IDS)
    return _with_markers(ids, words, BILM_TF_CHAR_IDS)


def words_to_code_point_ids(
    words: Sequence[str],
    char_vocab: Mapping[str, int],
    special_char_ids: Mapping[str, int],
    max_characters_per_token: int,
) -> np.ndarray:
    """`word_to_code_point_ids` of every word of `words`: (words, max_characters_per_token) int64, each distinct
    code point looked up once."""
    width = max_characters_per_token - 2
    sizes = np.fromiter(map(len, words), dtype=np.intp, count=len(words))
    # surrogatepass: a lone surrogate is a code point of its own, as when the str is indexed
    points = np.frombuffer("".join(words).encode("utf-32-le", "surrogatepass"), dtype="<u4")
    code_points = _leading_units(points, sizes, width)
    distinct, positions = np.unique(code_points, return_inverse=True)
    oov = special_char_ids["oov"]
    ids = np.array([char_vocab.get(chr(point), oov) for point in distinct.tolist()], np.int64)
    body = ids[positions].reshape(code_points.shape)
    return _with_markers(_framed(body, np.minimum(sizes, width), special_char_ids), words, special_char_ids)


def _leading_units(units: np.ndarray, sizes: np.ndarray, width: int) -> np.ndarray:
    """The first `width` units (bytes or code points) of each word: (words, width).

    `units` holds the units of all the words end to end, `sizes` how many each word has (words,). Past a word's
    end a row holds what follows it (the next words, then zeros), for `_framed` to mask.
    """
    padded = np.concatenate((units, np.zeros(width, units.dtype)))
    # A read-only view of the window of `width` units at every position; indexing it copies one row per word.
    step = padded.strides[0]
    windows = np.lib.stride_tricks.as_strided(padded, (len(units) + 1, width), (step, step), writeable=False)
    return windows[np.cumsum(sizes) - sizes]


def _framed(body: np.ndarray, lengths: np.ndarray, special_char_ids: Mapping[str, int]) -> np.ndarray:
    """`framed_char_ids` of each row of `body` (words, width) cut to its `lengths` (words,): (words, width + 2)."""
    special = special_char_ids
    frames, slots = _frames(body.shape[1], special["bow"], special["eow"], special["pad"])
    ids = frames[lengths]  # one row gather per table instead of building each row
    np.copyto(ids[:, 1:-1], body, where=slots[lengths])
    return ids


@functools.lru_cache(maxsize=8)
def _frames(width: int, bow: int, eow: int, pad: int) -> tuple[np.ndarray, np.ndarray]:
    """For each word length 0..width: its row of `framed_char_ids` (width + 1, width + 2) int64, and where the
    word's ids go in it, (width + 1, width) bool (read-only: shared by every call)."""
    special = {"bow": bow, "eow": eow, "pad": pad}
    frames = np.array([framed_char_ids([pad] * length, special, width + 2) for length in range(width + 1)], np.int64)
    slots = np.arange(width) < np.arange(width + 1)[:, None]
    frames.flags.writeable = slots.flags.writeable = False
    return frames, slots


def _with_markers(ids: np.ndarray, words: Sequence[str], special_char_ids: Mapping[str, int]) -> np.ndarray:
    """`ids` (words, chars) with the rows of the sentence-marker words `<S>` and `</S>` made theirs."""
    for marker in (BOS_WORD, EOS_WORD):
        if marker in words:  # scans in C: a marker is rare, and looking at each word in Python is not
            row = framed_char_ids([_marker_char_id(marker, special_char_ids)], special_char_ids, ids.shape[1])
            index = words.index(marker)
            while True:
                ids[index] = row
                try:
                    index = words.index(marker, index + 1)
                except ValueError:
                    break
    return ids
