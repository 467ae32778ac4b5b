"""ELMo's text front end: raw text -> words -> one row of character ids per word, on numpy alone.

One self-contained file (the standard library and numpy; no torch, no transformers, no relative import), the one
home of the rules that turn text into ELMo's inputs, so that it can be copied alone beside an exported graph (an
ONNX folder, a Triton python-backend model) and a client needs nothing else:

- the word splitter (`split_words`): PTB-like, NFC, invisible characters out, never inside a grapheme cluster;
- the character-id rule (`word_to_char_ids`, batched `words_to_char_ids`): bilm-tf's and AllenNLP's UTF-8 bytes,
  and ELMoForManyLangs' code points (`word_to_code_point_ids`, `words_to_code_point_ids`);
- the sentence-marker words and their character ids (`BOS_WORD`, `EOS_WORD`, `BILM_TF_CHAR_IDS`);
- a bounded cache of the ids of the words met last (`WordCache`);
- `ElmoTextEncoder`: raw lines or words -> `input_ids` (batch, words, chars) and `attention_mask` (batch, words),
  exactly as `ElmoTokenizer` (tokenization_elmo.py, which calls this module) gives them.

The rules, stated for clients in other languages, are in docs/onnx.md ("The split rule"); the conformance file
text_elmo_conformance.json holds raw lines with their words, ids and mask, one case per rule.
"""

from __future__ import annotations

import functools
import itertools
import json
import re
import threading
import unicodedata
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path

import numpy as np

__all__ = [
    "BILM_TF_CHAR_IDS",
    "BILM_TF_SPECIAL_WORDS",
    "BILM_TF_SPECIAL_WORD_IDS",
    "BOS_WORD",
    "DEFAULT_WORD_CACHE_SIZE",
    "EOS_WORD",
    "UNK_WORD",
    "ElmoTextEncoder",
    "WordCache",
    "framed_char_ids",
    "split_words",
    "word_to_char_ids",
    "word_to_code_point_ids",
    "words_to_char_ids",
    "words_to_code_point_ids",
]

# ---------------------------------------------------------------------------------------------------------------
# The special words and characters
# ---------------------------------------------------------------------------------------------------------------

BOS_WORD, EOS_WORD, UNK_WORD = "<S>", "</S>", "<UNK>"
# bilm-tf's word vocabularies (the softmax's rows) start with these three words, ids 0, 1, 2.
BILM_TF_SPECIAL_WORDS = (BOS_WORD, EOS_WORD, UNK_WORD)
BILM_TF_SPECIAL_WORD_IDS = tuple(range(len(BILM_TF_SPECIAL_WORDS)))
# The character ids of bilm-tf and AllenNLP beyond a byte's (1-256: the byte + 1; 0 is "no word here"): the
# sentence markers' characters, the begin- and end-of-word marks and the padding after a word's end.
BILM_TF_CHAR_IDS = {"bos": 257, "eos": 258, "bow": 259, "eow": 260, "pad": 261}

# ---------------------------------------------------------------------------------------------------------------
# The word splitter
# ---------------------------------------------------------------------------------------------------------------

# Where Unicode has put marks, format characters and surrogates (their categories are read once, at import).
_PLANES = (range(0x30000), range(0xE0000, 0xE1000))


def _code_points(categories: Iterable[str]) -> dict[str, list[int]]:
    """The code points of each of Unicode's general `categories` ("Mn", "Cf", ...), ascending, found in one pass."""
    found: dict[str, list[int]] = {category: [] for category in categories}
    for code in itertools.chain(*_PLANES):
        codes = found.get(unicodedata.category(chr(code)))
        if codes is not None:
            codes.append(code)
    return found


_CODE_POINTS = _code_points(("Mn", "Mc", "Me", "Cf", "Cs"))  # the marks, the format characters, the surrogates
_MARKS = sorted((*_CODE_POINTS["Mn"], *_CODE_POINTS["Mc"], *_CODE_POINTS["Me"]))


def _ranges(codes: Iterable[int]) -> str:
    """The inside of a regular expression's character class of the code points `codes` (ascending), as ranges."""
    spans: list[list[int]] = []
    for code in codes:
        if spans and code == spans[-1][1] + 1:
            spans[-1][1] = code
        else:
            spans.append([code, code])
    return "".join(f"{re.escape(chr(first))}-{re.escape(chr(last))}" for first, last in spans)


# The zero-width non-joiner and joiner: kept where they join two characters of a word.
_JOINERS = "\u200c\u200d"


def _grapheme_extenders() -> str:
    """A character class of what extends the character before it into one grapheme cluster (Unicode's
    Grapheme_Cluster_Break Extend, SpacingMark and ZWJ, near enough): the combining marks (Mn, Mc, Me: accents,
    the vowel signs of Indic scripts, variation selectors, the keycap), the zero-width joiner and non-joiner, the
    emoji skin-tone modifiers and the tag characters of flag sequences. Python's `re` has no `\\X` and its `\\w`
    matches none of them, so that the pattern below attaches them to their base itself."""
    joiners, skin_tones, tags = map(ord, _JOINERS), range(0x1F3FB, 0x1F400), range(0xE0020, 0xE0080)
    return f"[{_ranges(sorted({*_MARKS, *joiners, *skin_tones, *tags}))}]"


# Control and format characters (Unicode's Cc and Cf) are invisible: --tokenize made words of them ("wo\x00rd" was
# three words, a right-to-left mark one of them). None is a word or part of one, but for the characters that join
# a grapheme cluster. Each goes where a reader of the text expects it:
# - a control character other than whitespace (NUL, ESC, DEL, the C1 controls) separates words, as whitespace
#   does: it stands in no written word (a field separator, a byte of damage), and the letters on either side are
#   the words they were before it came in; joined, they would make a word that nobody wrote;
# - the zero-width space separates words: marking a word boundary without a visible space is its job (Thai, Khmer,
#   Burmese and web text);
# - every other format character is dropped: the bidirectional marks, embeddings, overrides and isolates, the
#   soft hyphen, the word joiner, a byte order mark inside the text, the Arabic number signs, tag characters
#   outside a flag: they change how text is shown or broken across lines, not what it says ("wo\u200erd" reads
#   "word");
# - kept: a zero-width joiner or non-joiner between two characters of a word (an emoji sequence, the Persian
#   "\u0645\u06cc\u200c\u062e\u0648\u0627\u0647\u0645"), and the tag characters of an emoji tag sequence: the
#   black flag, a region's tag letters and the cancel tag (England's, Scotland's and Wales's flags, the tag
#   sequences Unicode recommends, UTS #51).
# A lone surrogate (Cs: half of a UTF-16 pair, which a Python str can hold and no UTF-8 text can) is no character:
# dropped as a format character is, as the id rule drops it from a given word (it has no UTF-8 bytes).
# A combining mark (Mn, Mc, Me: an accent, a variation selector, an enclosing keycap) with nothing before it in its
# word to combine with (at the start of the text, after whitespace, a control character or a zero-width space) is
# no word: --tokenize made a word of a lone U+0301 or U+FE0F between spaces.
# How: the word pattern starts no word at a control, a zero-width space, a joiner or a mark (findall skips them),
# text beyond ASCII loses what is dropped (`_INVISIBLE`) before NFC, and `split_words` strips a joiner that ends a
# word.
_NO_WORD = r"\s\x00-\x1f\x7f-\x9f\u200b"  # where no word is: whitespace, controls, the zero-width space
_TAG_SEQUENCE = "\U0001f3f4[\U000e0020-\U000e007e]+\U000e007f"
_DROPPED_CODES = (code for code in _CODE_POINTS["Cf"] if code not in (0x200B, *map(ord, _JOINERS)))
_DROPPED = f"[{_ranges(sorted((*_DROPPED_CODES, *_CODE_POINTS['Cs'])))}]"
_INVISIBLE = re.compile(f"({_TAG_SEQUENCE})|{_DROPPED}")  # replaced by group 1: a tag sequence is kept


def _word_pattern(extend: str, marks: str) -> re.Pattern:
    """PTB-like word splitting of raw text, tried left to right at each position, where each letter, word
    character, digit or other symbol is followed by `extend` (the marks that extend it, or "" for text without
    them); a symbol also takes the symbols that zero-width joiners attach to it (an emoji sequence: a family).
    A position where no word starts is skipped: a control character or a zero-width space separates words, and a
    joiner or one of `marks` (the ranges of a character class, "" for text without them) there is dropped."""
    letter, word, digits = rf"(?:[^\W\d_]{extend})", rf"(?:\w{extend})+", rf"(?:\d{extend})+"
    base = f"[^{_NO_WORD}{_JOINERS}{marks}]"
    symbol = rf"(?:{base}{extend}(?:(?<=\u200d){base}{extend})*)"
    return re.compile(
        rf"""
        (?:{letter}\.){{2,}}            # abbreviations with inner periods: U.S., e.g.
      | {digits}(?:[.,:/]{digits})*     # numbers: 3.14, 1,000, 10:30, 1/2
      | {word}(?=n't\b)                # "do" of "don't" (the clitic follows as its own word)
      | n't\b                          # negation clitic
      | '(?:s|re|ve|ll|d|m)\b          # clitics: 's 're 've 'll 'd 'm
      | {word}(?:-{word})*(?:'(?!(?:s|re|ve|ll|d|m)\b){word}(?:-{word})*)*  # words; inner hyphens, apostrophes
      | \.\.\.|--                      # ellipsis, dash
      | [\U0001F1E6-\U0001F1FF]{{2}}     # a flag: two regional indicators
      | {symbol}                       # any other symbol is a word of its own
        """,
        re.VERBOSE | re.IGNORECASE,
    )


_EXTEND = _grapheme_extenders()
_CLUSTER_WORD_PATTERN = _word_pattern(f"{_EXTEND}*", _ranges(_MARKS))
# Most text holds no mark, joiner or flag: the pattern without them splits it alike, 5-10 times faster.
_PLAIN_WORD_PATTERN = _word_pattern("", "")
_CLUSTERED = re.compile(f"{_EXTEND}|[\U0001f1e6-\U0001f1ff]")


def split_words(text: str) -> list[str]:
    """Split raw text into words, PTB-like (punctuation split off), never inside a character as the reader sees it.

    The text is first normalised to Unicode's NFC, so that a decomposed "e\\u0301cole" (as macOS file names and some
    web text hold it) is the same word, with the same character ids, as the precomposed "école". Whitespace
    separates words; inside a chunk, punctuation and symbols become words of their own, except inner hyphens and
    apostrophes ("bio-identical", "o'clock"), numbers ("3.14", "1,000"), abbreviations with inner periods ("U.S.")
    and the "..." and "--" marks. A grapheme cluster is never cut: combining marks stay with their letter, an emoji
    with its variation selector, skin tone or zero-width-joined sequence ("❤️", a family), a flag's two regional
    indicators together, England's flag (a tag sequence) whole. Clitics split as in the Penn Treebank: "don't" ->
    "do n't", "John's" -> "John 's". A literal "<S>"/"</S>" stays one word (the sentence marker's ids).

    No word holds, or is, an invisible character: a control character (NUL, ESC, ...) or a zero-width space
    separates words ("wo\\x00rd" is "wo", "rd"), and every other format character (Unicode's Cf: the
    bidirectional marks and controls, the soft hyphen, the word joiner, a byte order mark) and a lone surrogate are
    dropped ("wo\\u200erd" is "word"), but for a zero-width joiner or non-joiner inside a word and a flag's tag
    characters. A combining mark with nothing before it in its word to combine with is dropped ("a \\u0301 b" is
    "a", "b").

    >>> split_words("Don't panic: it's 3.14, not U.S. law...")
    ['Do', "n't", 'panic', ':', 'it', "'s", '3.14', ',', 'not', 'U.S.', 'law', '...']
    """
    pattern = _PLAIN_WORD_PATTERN
    if not text.isascii():  # (ASCII is NFC, without marks or format characters: the common case costs nothing)
        if not text.isprintable():  # (one pass in C: False wherever a control, format character or surrogate is)
            text = _INVISIBLE.sub(r"\1", text)  # before NFC composes: "e\u200e\u0301" is "é"
        text = unicodedata.normalize("NFC", text)
        pattern = _CLUSTER_WORD_PATTERN if _CLUSTERED.search(text) else _PLAIN_WORD_PATTERN
    words = []
    for chunk in text.split():
        if chunk in (BOS_WORD, EOS_WORD):
            words.append(chunk)
        else:
            words.extend(pattern.findall(chunk))
    if pattern is _CLUSTER_WORD_PATTERN:  # a joiner that ends a word joins nothing (the pattern took it as a mark)
        words = [word.rstrip(_JOINERS) for word in words]
    return words


# ---------------------------------------------------------------------------------------------------------------
# The character-id rule
# ---------------------------------------------------------------------------------------------------------------

# A word is one row of `max_characters_per_token` character ids: `[bow, *body, eow, pad, ...]` (`framed_char_ids`).
# Its body is, for bilm-tf and AllenNLP, its UTF-8 bytes, each id the byte + 1 (0 means "no word here"), cut after
# `max_characters_per_token - 2` bytes (a multi-byte character may be cut); for ELMoForManyLangs, its first
# `max_characters_per_token - 2` code points, each looked up in a character vocabulary. The sentence-marker words
# `<S>` and `</S>` have one character of their own as their body instead.
#
# Each rule is written once, for one word (`word_to_char_ids`, `word_to_code_point_ids`); the batched forms
# (`words_to_char_ids`, `words_to_code_point_ids`) give the same rows for many words at once with numpy: the same
# encoding and lookup of a character, rows framed by `framed_char_ids`, the marker words' rows made by it too.
# tests/model/test_vocabulary.py holds each batched form equal to its rule on awkward words.


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


# ---------------------------------------------------------------------------------------------------------------
# The word cache
# ---------------------------------------------------------------------------------------------------------------

# How many distinct words a tokenizer keeps the ids of (6.5 MB at 50 characters a word): real text repeats words.
DEFAULT_WORD_CACHE_SIZE = 16_384


class WordCache:
    """The ids of the words a tokenizer met last: one row of a table per word, row 0 for padding.

    Bounded: it holds at most `capacity` words between calls. When a call's new words would take it past that, it
    starts over with that call's words; one call with more distinct words than that has it to itself. A lock
    makes each look-up one step, so that threads sharing a tokenizer never read a row being rewritten. It pickles
    and copies as an empty cache: copies of a tokenizer, worker processes and `datasets` fingerprints do not
    carry, or depend on, the words it has seen.
    """

    def __init__(self, capacity: int, max_characters_per_token: int, with_word_ids: bool) -> None:
        if capacity < 1:
            raise ValueError(f"the word cache needs room for at least one word, got word_cache_size={capacity}")
        self.capacity = capacity
        self._arguments = (capacity, max_characters_per_token, with_word_ids)
        self._rows: dict[str, int] = {}
        self._char_ids = np.zeros((1, max_characters_per_token), dtype=np.int64)
        self._word_ids = np.zeros(1, dtype=np.int64) if with_word_ids else None
        self._lock = threading.Lock()

    def __reduce__(self) -> tuple[type, tuple[int, int, bool]]:
        return type(self), self._arguments

    def __len__(self) -> int:
        return len(self._rows)

    def gather(
        self,
        words: Sequence[str],
        layout: np.ndarray,
        encode: Callable[[list[str]], tuple[np.ndarray, np.ndarray | None]],
    ) -> tuple[np.ndarray, np.ndarray | None]:
        """The ids of `words` laid out at the True cells of `layout` (row-major), zeros elsewhere.

        `encode(new_words)` gives the character ids (new words, chars) and word ids (new words,) or None of the
        words not in the cache. Returns character ids of shape (*layout.shape, chars) and word ids of
        `layout`'s shape (None without a word vocabulary).
        """
        with self._lock:
            index = np.zeros(layout.shape, dtype=np.intp)
            index[layout] = self._rows_of(words, encode)
            ids = self._char_ids[index], None if self._word_ids is None else self._word_ids[index]
            if len(self._rows) > self.capacity:  # this call's words alone were more than the cache keeps
                self._forget_words()
            return ids

    def _rows_of(self, words: Sequence[str], encode: Callable) -> np.ndarray:
        rows = self._rows
        try:
            return np.fromiter(map(rows.__getitem__, words), dtype=np.intp, count=len(words))  # all cached
        except KeyError:
            pass
        new_words = list(set(words).difference(rows))  # C-level passes over the call's words, whatever the order
        if len(rows) + len(new_words) > self.capacity:  # full: start over with this call's words
            self._forget_words()
            new_words = list(set(words))
        first = len(rows) + 1
        self._store(first, *encode(new_words))
        # Registered only once their ids are stored: an interruption (Ctrl-C) leaves no word without its ids.
        rows.update(zip(new_words, range(first, first + len(new_words)), strict=True))
        return np.fromiter(map(rows.__getitem__, words), dtype=np.intp, count=len(words))

    def _forget_words(self) -> None:
        self._rows.clear()
        if len(self._char_ids) > self.capacity + 1:  # grown for one call beyond the bound: give the memory back
            self._char_ids = self._char_ids[: self.capacity + 1].copy()
            self._word_ids = None if self._word_ids is None else self._word_ids[: self.capacity + 1].copy()

    def _store(self, first: int, char_ids: np.ndarray, word_ids: np.ndarray | None) -> None:
        end = first + len(char_ids)
        if end > len(self._char_ids):  # grow by doubling, up to the capacity unless one call needs more
            size = max(end, min(2 * len(self._char_ids), self.capacity + 1))
            self._char_ids = _resized(self._char_ids, size)
            self._word_ids = None if self._word_ids is None else _resized(self._word_ids, size)
        self._char_ids[first:end] = char_ids
        if self._word_ids is not None:
            self._word_ids[first:end] = word_ids


def _resized(table: np.ndarray, rows: int) -> np.ndarray:
    grown = np.empty((rows, *table.shape[1:]), dtype=table.dtype)  # rows past the old ones: written before read
    grown[: len(table)] = table
    return grown


# ---------------------------------------------------------------------------------------------------------------
# The encoder: raw text, or words, to the model's inputs
# ---------------------------------------------------------------------------------------------------------------

_TOKENIZER_CONFIG, _MODEL_CONFIG, _CHAR_VOCAB = "tokenizer_config.json", "config.json", "char_vocab.json"
_STR_TYPE = frozenset((str,))


class ElmoTextEncoder:
    """Raw lines, or sentences of words, to ELMo's inputs with numpy alone, exactly as `ElmoTokenizer` gives them
    with `padding=True`: `input_ids` (batch, words, max_characters_per_token) int64, `attention_mask`
    (batch, words) int64. Sentences are padded on the right to the longest with rows of 0 ("no word") and mask 0;
    no `<S>`/`</S>` is added (the model adds them). The ids of the last `word_cache_size` distinct words met are
    kept (`WordCache`): a batch costs about one dictionary look-up per word. Threads may share one encoder.

    >>> encoder = ElmoTextEncoder()
    >>> encoder.split("It's 3.14.")
    ['It', "'s", '3.14', '.']
    >>> inputs = encoder.encode_text(["It's 3.14.", ""])
    >>> inputs["input_ids"].shape, inputs["attention_mask"].tolist()
    ((2, 4, 50), [[1, 1, 1, 1], [0, 0, 0, 0]])
    """

    def __init__(self, max_characters_per_token: int = 50, word_cache_size: int = DEFAULT_WORD_CACHE_SIZE) -> None:
        if isinstance(max_characters_per_token, bool) or not isinstance(max_characters_per_token, int):
            raise ValueError(f"max_characters_per_token must be an int, got {max_characters_per_token!r}")
        if max_characters_per_token < 3:
            raise ValueError(f"max_characters_per_token must be at least 3, got {max_characters_per_token}")
        self.max_characters_per_token = max_characters_per_token
        self._word_cache = WordCache(word_cache_size, max_characters_per_token, with_word_ids=False)

    @classmethod
    def from_folder(cls, folder: str | Path, word_cache_size: int = DEFAULT_WORD_CACHE_SIZE) -> ElmoTextEncoder:
        """The encoder of a saved model folder (or an exported one): its `max_characters_per_token`, from its
        tokenizer_config.json (config.json where it has none). A folder whose tokenizer reads code points through
        a char_vocab.json (ELMoForManyLangs) is refused: this front end writes bilm-tf's UTF-8 byte ids."""
        folder = Path(folder)
        if (folder / _CHAR_VOCAB).exists():
            raise ValueError(
                f"{folder / _CHAR_VOCAB}: this folder's tokenizer reads code points through a character vocabulary "
                "(ELMoForManyLangs); ElmoTextEncoder writes bilm-tf's UTF-8 byte ids: use its ElmoTokenizer"
            )
        for name in (_TOKENIZER_CONFIG, _MODEL_CONFIG):
            if (folder / name).is_file():
                settings = _read_json_object(folder / name)
                _check_padding_token(folder / name, settings)
                return cls(_max_characters_per_token(folder / name, settings), word_cache_size)
        raise ValueError(f"{folder}: neither {_TOKENIZER_CONFIG} nor {_MODEL_CONFIG} is there (not a model folder)")

    def split(self, text: str) -> list[str]:
        """The words of one raw line (`split_words`)."""
        return split_words(text)

    def encode_words(self, sentences: Sequence[Sequence[str]]) -> dict[str, np.ndarray]:
        """`input_ids` and `attention_mask` of sentences given as their words, each word kept exactly (an empty
        string or a word with spaces included), one position per word."""
        if isinstance(sentences, str) or any(isinstance(sentence, str) for sentence in sentences):
            raise TypeError("encode_words takes sentences as lists of words; for raw lines use encode_text")
        words = list(itertools.chain.from_iterable(sentences))
        if not (_STR_TYPE.issuperset(map(type, words)) or all(isinstance(word, str) for word in words)):
            kind = next(type(word).__name__ for word in words if not isinstance(word, str))
            raise TypeError(f"every word must be a str, got a {kind}")
        lengths = np.fromiter(map(len, sentences), dtype=np.int64, count=len(sentences))
        layout = np.arange(lengths.max(initial=0)) < lengths[:, None]  # (batch, words): True where a word is
        char_ids, _ = self._word_cache.gather(words, layout, self._new_word_ids)
        return {"input_ids": char_ids, "attention_mask": layout.astype(np.int64)}

    def encode_text(self, lines: Sequence[str]) -> dict[str, np.ndarray]:
        """`input_ids` and `attention_mask` of raw lines, one sentence each: `split`, then `encode_words`."""
        if isinstance(lines, str) or not all(isinstance(line, str) for line in lines):
            raise TypeError("encode_text takes a list of raw lines (str), one sentence each")
        return self.encode_words([split_words(line) for line in lines])

    def _new_word_ids(self, words: list[str]) -> tuple[np.ndarray, None]:
        return words_to_char_ids(words, self.max_characters_per_token), None


def _read_json_object(path: Path) -> dict:
    try:
        settings = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise ValueError(f"{path}: cannot be read as JSON ({error})") from None
    if not isinstance(settings, dict):
        raise ValueError(f"{path}: expected a JSON object, got a {type(settings).__name__}")
    return settings


def _max_characters_per_token(path: Path, settings: Mapping) -> int:
    value = settings.get("max_characters_per_token", 50)
    if isinstance(value, bool) or not isinstance(value, int) or value < 3:
        raise ValueError(f"{path}: max_characters_per_token must be an int of at least 3, got {value!r}")
    return value


def _check_padding_token(path: Path, settings: Mapping) -> None:
    """A padded position is a row of 0 ("no word"), as the tokenizer writes it with its own `<pad>` (id 0)."""
    token = settings.get("pad_token", "<pad>")
    content = token.get("content") if isinstance(token, dict) else token
    if content not in ("<pad>", None):
        raise ValueError(f"{path}: pad_token must be '<pad>' (id 0, a row of no word), got {content!r}")
