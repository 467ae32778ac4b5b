"""ELMo's tokenizer: text -> words -> one row of 50 character ids per word.

ELMo has no word vocabulary: each word is its UTF-8 bytes between begin-of-word and end-of-word marks,
as the original bilm-tf/AllenNLP character mapping defines it. The "vocabulary" of this tokenizer is
therefore the 262 character symbols, so `pad_token_id` is 0, the id of "no character / no word".
ELMoForManyLangs models instead read code points through a character vocabulary, plus word ids for their
word embedding: the same tokenizer with `char_vocab.json` (and `word_vocab.json`) does that.
"""

from __future__ import annotations

import functools
import itertools
import json
import os
import re
import threading
import unicodedata
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import torch
from transformers import BatchEncoding, PreTrainedTokenizer
from transformers.tokenization_utils_base import PaddingStrategy, TruncationStrategy

from .configuration_elmo import BILM_TF_CHAR_IDS, framed_char_ids

__all__ = ["ElmoTokenizer", "pad_sentences", "split_words", "word_to_char_ids"]

BOS_WORD, EOS_WORD = "<S>", "</S>"


# Where Unicode has put marks and format characters (their categories are read once, when the module is imported).
_PLANES = (range(0x30000), range(0xE0000, 0xE1000))


def _code_points(categories: Iterable[str]) -> dict[str, list[int]]:
    """The code points of each of Unicode's general `categories` ("Mn", "Cf", ...), ascending, found in one pass."""
    found: dict[str, list[int]] = {category: [] for category in categories}
    for code in itertools.chain(*_PLANES):
        codes = found.get(unicodedata.category(chr(code)))
        if codes is not None:
            codes.append(code)
    return found


_CODE_POINTS = _code_points(("Mn", "Mc", "Me", "Cf"))  # the marks, the format characters


def _character_class(codes: Iterable[int]) -> str:
    """A regular expression's character class of the code points `codes` (ascending), as ranges."""
    spans: list[list[int]] = []
    for code in codes:
        if spans and code == spans[-1][1] + 1:
            spans[-1][1] = code
        else:
            spans.append([code, code])
    return "[" + "".join(f"{re.escape(chr(first))}-{re.escape(chr(last))}" for first, last in spans) + "]"


# The zero-width non-joiner and joiner: kept where they join two characters of a word.
_JOINERS = "\u200c\u200d"


def _grapheme_extenders() -> str:
    """A character class of what extends the character before it into one grapheme cluster (Unicode's
    Grapheme_Cluster_Break Extend, SpacingMark and ZWJ, near enough): the combining marks (Mn, Mc, Me: accents,
    the vowel signs of Indic scripts, variation selectors, the keycap), the zero-width joiner and non-joiner, the
    emoji skin-tone modifiers and the tag characters of flag sequences. Python's `re` has no `\\X` and its `\\w`
    matches none of them, so that the pattern below attaches them to their base itself."""
    joiners, skin_tones, tags = map(ord, _JOINERS), range(0x1F3FB, 0x1F400), range(0xE0020, 0xE0080)
    marks = (*_CODE_POINTS["Mn"], *_CODE_POINTS["Mc"], *_CODE_POINTS["Me"])
    return _character_class(sorted({*marks, *joiners, *skin_tones, *tags}))


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
# How: the word pattern starts no word at a control or zero-width space (`_NO_WORD`: findall skips them), text
# beyond ASCII loses what is dropped (`_INVISIBLE`) before NFC, and `split_words` strips a joiner that ends a word.
_NO_WORD = r"\s\x00-\x1f\x7f-\x9f\u200b"  # where no word is: whitespace, controls, the zero-width space
_TAG_SEQUENCE = "\U0001f3f4[\U000e0020-\U000e007e]+\U000e007f"
_DROPPED = _character_class(code for code in _CODE_POINTS["Cf"] if code not in (0x200B, *map(ord, _JOINERS)))
_INVISIBLE = re.compile(f"({_TAG_SEQUENCE})|{_DROPPED}")  # replaced by group 1: a tag sequence is kept


def _word_pattern(extend: str) -> re.Pattern:
    """PTB-like word splitting of raw text, tried left to right at each position, where each letter, word
    character, digit or other symbol is followed by `extend` (the marks that extend it, or "" for text without
    them); a symbol also takes the symbols that zero-width joiners attach to it (an emoji sequence: a family).
    A position where no word starts is skipped: a control character or a zero-width space separates words."""
    letter, word, digits = rf"(?:[^\W\d_]{extend})", rf"(?:\w{extend})+", rf"(?:\d{extend})+"
    base = f"[^{_NO_WORD}{_JOINERS}]"  # a joiner joins, it does not start a word
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
_CLUSTER_WORD_PATTERN = _word_pattern(f"{_EXTEND}*")
# Most text holds no mark, joiner or flag: the pattern without them splits it alike, 5-10 times faster.
_PLAIN_WORD_PATTERN = _word_pattern("")
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
    "do n't", "John's" -> "John 's". A literal "<S>"/"</S>" stays one word.

    No word holds, or is, an invisible character: a control character (NUL, ESC, ...) or a zero-width space
    separates words ("wo\\x00rd" is "wo", "rd"), and every other format character (Unicode's Cf: the
    bidirectional marks and controls, the soft hyphen, the word joiner, a byte order mark) is dropped
    ("wo\\u200erd" is "word"), but for a zero-width joiner or non-joiner inside a word and a flag's tag characters.

    >>> split_words("Don't panic: it's 3.14, not U.S. law...")
    ['Do', "n't", 'panic', ':', 'it', "'s", '3.14', ',', 'not', 'U.S.', 'law', '...']
    """
    pattern = _PLAIN_WORD_PATTERN
    if not text.isascii():  # (ASCII is NFC, without marks or format characters: the common case costs nothing)
        if not text.isprintable():  # (one pass in C: False wherever a control or format character is)
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
        body = [byte + 1 for byte in word.encode("utf-8", "ignore")[: max_characters_per_token - 2]]
    return framed_char_ids(body, BILM_TF_CHAR_IDS, max_characters_per_token)


def _marker_char_id(word: str, special_char_ids: Mapping[str, int]) -> int | None:
    """The character that stands for a sentence marker word (`<S>`, `</S>`) between its frame; None for other words."""
    if word in (BOS_WORD, EOS_WORD):
        return special_char_ids["bos" if word == BOS_WORD else "eos"]
    return None


_SPECIAL_SYMBOLS = {
    "bos": BOS_WORD,
    "eos": EOS_WORD,
    "bow": "<bow>",
    "eow": "<eow>",
    "pad": "<char_pad>",
    "oov": "<oov>",
}


# How many distinct words a tokenizer keeps the ids of (6.5 MB at 50 characters a word): real text repeats words.
DEFAULT_WORD_CACHE_SIZE = 16_384


@functools.lru_cache(maxsize=8)
def _frames(width: int, bow: int, eow: int, pad: int) -> tuple[np.ndarray, np.ndarray]:
    """For each word length 0..width: the row `[bow, (length slots), eow, pad...]` (width + 1, width + 2) int64,
    and where the word's ids go in it, (width + 1, width) bool (read-only: shared by every call)."""
    lengths = np.arange(width + 1)
    frames = np.full((width + 1, width + 2), pad, dtype=np.int64)
    frames[:, 0] = bow
    frames[lengths, lengths + 1] = eow
    slots = np.arange(width) < lengths[:, None]
    frames.flags.writeable = slots.flags.writeable = False
    return frames, slots


def _framed_char_ids(body: np.ndarray, lengths: np.ndarray, bow: int, eow: int, pad: int) -> np.ndarray:
    """Rows of `[bow, *body[:length], eow, pad...]`: (words, width + 2) int64 from body ids (words, width)."""
    frames, slots = _frames(body.shape[1], bow, eow, pad)
    ids = frames[lengths]  # one row gather per table instead of building each row
    np.copyto(ids[:, 1:-1], body, where=slots[lengths])
    return ids


def _leading_units(units: np.ndarray, sizes: np.ndarray, width: int) -> np.ndarray:
    """The first `width` units (bytes or code points) of each word: (words, width).

    `units` holds the units of all the words end to end, `sizes` how many each word has (words,). Past a word's
    end a row holds what follows it (the next words, then zeros), for `_framed_char_ids` to mask.
    """
    padded = np.concatenate((units, np.zeros(width, units.dtype)))
    # A read-only view of the window of `width` units at every position; indexing it copies one row per word.
    step = padded.strides[0]
    windows = np.lib.stride_tricks.as_strided(padded, (len(units) + 1, width), (step, step), writeable=False)
    return windows[np.cumsum(sizes) - sizes]


def _utf8_char_ids(words: Sequence[str], max_characters_per_token: int) -> np.ndarray:
    """`word_to_char_ids` of many words at once: (words, max_characters_per_token) int64 (no sentence markers)."""
    width = max_characters_per_token - 2
    encoded = [word.encode("utf-8", "ignore") for word in words]
    sizes = np.fromiter(map(len, encoded), dtype=np.intp, count=len(encoded))
    data = np.frombuffer(b"".join(encoded), dtype=np.uint8)
    body = _leading_units(data, sizes, width) + np.uint16(1)  # small integers: less memory to write than int64
    special = BILM_TF_CHAR_IDS
    return _framed_char_ids(body, np.minimum(sizes, width), special["bow"], special["eow"], special["pad"])


def _code_point_units(words: Sequence[str], width: int) -> tuple[np.ndarray, np.ndarray]:
    """The first `width` code points of each word, (words, width) uint32 (see `_leading_units`), and how many
    of them are the word's (words,)."""
    sizes = np.fromiter(map(len, words), dtype=np.intp, count=len(words))
    # surrogatepass: a lone surrogate is a code point of its own, as when the str is indexed
    points = np.frombuffer("".join(words).encode("utf-32-le", "surrogatepass"), dtype="<u4")
    return _leading_units(points, sizes, width), np.minimum(sizes, width)


class _WordCache:
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


def _read_json_vocabulary(path: str | None) -> dict[str, int] | None:
    if path is None:
        return None
    with open(path, encoding="utf-8") as file:
        return json.load(file)


class ElmoTokenizer(PreTrainedTokenizer):
    r"""Turns text into ELMo character ids: `input_ids` of shape (batch, words, max_characters_per_token).

    - Raw text is split into words by [`split_words`] (PTB-like). With `is_split_into_words=True` every given
      word is kept exactly, one output position per word (empty strings and words with spaces included).
    - `attention_mask` has shape (batch, words). Padding is on the right: whole rows of id 0.
    - `max_length`, `truncation` and `padding` count words. The `<S>`/`</S>` sentence markers are not
      added here: [`ElmoModel`] adds and removes them, so outputs align 1:1 with the input words.

    By default a word is its UTF-8 bytes (bilm-tf/AllenNLP). With `char_vocab_file` (a JSON object from
    character to model id) a word is its first `max_characters_per_token - 2` code points, unknown ones
    mapped to `special_char_ids["oov"]` (ELMoForManyLangs); `special_char_ids` gives the ids of the framing
    characters (`bow`, `eow`, `bos`, `eos`, `pad`, `oov`). With `word_vocab_file` the tokenizer also returns
    `input_word_ids` (batch, words), unknown words mapped to `special_word_ids["oov"]`.

    The ids of the last `word_cache_size` distinct words met are kept (a cache of each instance, never saved or
    copied), and new words are converted together with numpy: a batch costs about one dictionary look-up per word.
    """

    vocab_files_names = {"char_vocab_file": "char_vocab.json", "word_vocab_file": "word_vocab.json"}
    model_input_names = ["input_ids", "attention_mask"]
    padding_side = "right"
    truncation_side = "right"

    def __init__(
        self,
        char_vocab_file: str | None = None,
        word_vocab_file: str | None = None,
        *,
        max_characters_per_token: int = 50,
        special_char_ids: dict[str, int] | None = None,
        special_word_ids: dict[str, int] | None = None,
        pad_token: str = "<pad>",
        bos_token: str = BOS_WORD,
        eos_token: str = EOS_WORD,
        word_cache_size: int = DEFAULT_WORD_CACHE_SIZE,
        **kwargs,
    ) -> None:
        if max_characters_per_token < 3:
            raise ValueError(f"max_characters_per_token must be at least 3, got {max_characters_per_token}")
        self.max_characters_per_token = max_characters_per_token
        self.char_vocab = _read_json_vocabulary(char_vocab_file)
        self.word_vocab = _read_json_vocabulary(word_vocab_file)
        self.special_char_ids = dict(special_char_ids or BILM_TF_CHAR_IDS)
        self.special_word_ids = dict(special_word_ids or {})
        if self.char_vocab is not None and set(self.special_char_ids) != set(_SPECIAL_SYMBOLS):
            raise ValueError(f"a character vocabulary needs special_char_ids for {sorted(_SPECIAL_SYMBOLS)}")
        if self.word_vocab is not None and set(self.special_word_ids) != {"bos", "eos", "oov"}:
            raise ValueError("a word vocabulary needs special_word_ids for 'bos', 'eos' and 'oov'")
        if self.word_vocab is not None:
            self.model_input_names = [*self.model_input_names, "input_word_ids"]
        symbols = {f"<0x{byte:02X}>": byte + 1 for byte in range(256)} if self.char_vocab is None else self.char_vocab
        specials = {_SPECIAL_SYMBOLS[name]: char_id for name, char_id in self.special_char_ids.items()}
        self._vocab = {"<pad>": 0, **symbols, **specials}
        self._ids_to_symbols = {index: symbol for symbol, index in self._vocab.items()}
        self._word_cache = _WordCache(word_cache_size, max_characters_per_token, self.word_vocab is not None)
        kwargs.setdefault("model_max_length", 1_000_000)
        super().__init__(
            max_characters_per_token=max_characters_per_token,
            special_char_ids=special_char_ids,
            special_word_ids=special_word_ids,
            pad_token=pad_token,
            bos_token=bos_token,
            eos_token=eos_token,
            **kwargs,
        )

    # The character vocabulary, for pad_token_id and friends.
    @property
    def vocab_size(self) -> int:
        return len(self._vocab)

    def get_vocab(self) -> dict[str, int]:
        return dict(self._vocab)

    def _convert_token_to_id(self, token: str) -> int:
        return self._vocab[token]

    def _convert_id_to_token(self, index: int) -> str:
        return self._ids_to_symbols[index]

    def save_vocabulary(self, save_directory: str, filename_prefix: str | None = None) -> tuple[str, ...]:
        """Write the character and word vocabularies, where there are any (the UTF-8 mapping is fixed)."""
        written = []
        for vocabulary, name in ((self.char_vocab, "char_vocab_file"), (self.word_vocab, "word_vocab_file")):
            if vocabulary is not None:
                path = os.path.join(save_directory, (filename_prefix or "") + self.vocab_files_names[name])
                with open(path, "w", encoding="utf-8") as file:
                    json.dump(vocabulary, file, ensure_ascii=False, indent=0)
                written.append(path)
        return tuple(written)

    def word_char_ids(self, word: str) -> list[int]:
        """The `max_characters_per_token` character ids of one word."""
        if self.char_vocab is None:
            return word_to_char_ids(word, self.max_characters_per_token)
        special = self.special_char_ids
        marker = _marker_char_id(word, special)
        if marker is not None:
            body = [marker]
        else:
            body = [self.char_vocab.get(char, special["oov"]) for char in word[: self.max_characters_per_token - 2]]
        return framed_char_ids(body, special, self.max_characters_per_token)

    def _new_word_ids(self, words: list[str]) -> tuple[np.ndarray, np.ndarray | None]:
        """`word_char_ids` (words, chars) and `word_id` (words,) of many distinct words at once, for the cache."""
        if self.char_vocab is None:
            char_ids = _utf8_char_ids(words, self.max_characters_per_token)
        else:
            char_ids = self._code_point_char_ids(words)
        for marker in (BOS_WORD, EOS_WORD):
            if marker in words:  # once at most: the words are distinct
                char_ids[words.index(marker)] = self.word_char_ids(marker)
        word_ids = None if self.word_vocab is None else np.array([self.word_id(word) for word in words], np.int64)
        return char_ids, word_ids

    def _code_point_char_ids(self, words: list[str]) -> np.ndarray:
        special = self.special_char_ids
        code_points, lengths = _code_point_units(words, self.max_characters_per_token - 2)
        distinct, positions = np.unique(code_points, return_inverse=True)
        ids = np.array([self.char_vocab.get(chr(point), special["oov"]) for point in distinct.tolist()], np.int64)
        body = ids[positions].reshape(code_points.shape)
        return _framed_char_ids(body, lengths, special["bow"], special["eow"], special["pad"])

    def word_id(self, word: str) -> int:
        """The word-embedding id of one word (looked up as cut to the characters the model sees)."""
        special = self.special_word_ids
        if word in (BOS_WORD, EOS_WORD):
            return special["bos"] if word == BOS_WORD else special["eos"]
        return self.word_vocab.get(word[: self.max_characters_per_token - 2], special["oov"])

    def _ids_to_word(self, char_ids: Sequence[int]) -> str | None:
        """Inverse of `word_char_ids` (bytes a truncation cut show as U+FFFD); None for a padding row."""
        ids = [char for char in char_ids if char > 0]
        if not ids:
            return None
        special = self.special_char_ids
        inner = ids[1 : ids.index(special["eow"])] if special["eow"] in ids[1:] else ids[1:]
        if inner == [special["bos"]]:
            return BOS_WORD
        if inner == [special["eos"]]:
            return EOS_WORD
        if self.char_vocab is None:
            return bytes(char - 1 for char in inner if char <= 256).decode("utf-8", "replace")
        return "".join(self._ids_to_symbols.get(char, "\ufffd") for char in inner)

    def tokenize(self, text: str, **kwargs) -> list[str]:
        """Split raw text into words (see [`split_words`])."""
        return split_words(text)

    def _encode_plus(
        self,
        text: str | Sequence[str] | Sequence[Sequence[str]],
        text_pair: Any = None,
        padding_strategy: PaddingStrategy = PaddingStrategy.DO_NOT_PAD,
        truncation_strategy: TruncationStrategy = TruncationStrategy.DO_NOT_TRUNCATE,
        max_length: int | None = None,
        is_split_into_words: bool = False,
        pad_to_multiple_of: int | None = None,
        padding_side: str | None = None,
        return_tensors: str | None = None,
        return_attention_mask: bool | None = None,
        return_length: bool = False,
        **kwargs,
    ) -> BatchEncoding:
        """The whole batch as arrays: each distinct word's ids from the word cache, placed with one look-up.

        An empty batch gives empty arrays: `input_ids` (0, 0, chars) and `attention_mask` (0, 0) as tensors,
        empty lists without `return_tensors`.
        """
        if text_pair is not None:
            raise ValueError("ElmoTokenizer encodes single sentences; sentence pairs (text_pair) are not supported")
        is_batched = isinstance(text, (list, tuple)) and (
            not is_split_into_words or (len(text) > 0 and not isinstance(text[0], str))
        )
        sentences = [self._words_of(sentence, is_split_into_words) for sentence in (text if is_batched else [text])]
        self._check_padding_side(padding_side)
        _check_max_length(max_length)
        if truncation_strategy != TruncationStrategy.DO_NOT_TRUNCATE and max_length is not None:
            sentences = [self._truncated(words, max_length) for words in sentences]
        lengths = np.fromiter(map(len, sentences), dtype=np.int64, count=len(sentences))
        padded = np.maximum(lengths, _padded_length(padding_strategy, lengths.tolist(), max_length, pad_to_multiple_of))
        if return_tensors is not None and len(set(padded.tolist())) > 1:
            raise ValueError(
                f"Sentences of different lengths {sorted(set(lengths.tolist()))} cannot form one tensor: "
                "pass padding=True"
            )
        layout = np.arange(padded.max(initial=0)) < lengths[:, None]  # (batch, words): True where a word is
        words = list(itertools.chain.from_iterable(sentences))
        char_ids, word_ids = self._word_cache.gather(words, layout, self._new_word_ids)
        if self.pad_token_id:  # the cache pads with zeros, the id of "<pad>"
            char_ids[~layout] = self.pad_token_id
        columns = {"input_ids": char_ids}
        if word_ids is not None:
            columns["input_word_ids"] = word_ids
        if return_length:
            columns["length"] = lengths
        if return_attention_mask or (return_attention_mask is None and "attention_mask" in self.model_input_names):
            columns["attention_mask"] = layout.astype(np.int64)
        return _batch_encoding(columns, padded, is_batched, return_tensors)

    def _truncated(self, words: list[str], max_length: int) -> list[str]:
        return words[:max_length] if self.truncation_side == "right" else words[max(len(words) - max_length, 0) :]

    def _check_padding_side(self, padding_side: str | None) -> None:
        if (padding_side or self.padding_side) != "right":
            raise ValueError("ELMo inputs must be padded on the right (the model adds </S> after the last word)")

    def _words_of(self, sentence: Any, is_split_into_words: bool) -> list[str]:
        if is_split_into_words:
            if isinstance(sentence, str) or not _are_strings(sentence):
                raise ValueError(
                    f"With is_split_into_words=True each sentence must be a list of strings, got {sentence!r:.80}"
                )
            return list(sentence)
        if not isinstance(sentence, str):
            raise ValueError(
                f"Expected a string (or lists of words with is_split_into_words=True), got {type(sentence).__name__}"
            )
        return split_words(sentence)

    def pad(
        self,
        encoded_inputs: Mapping[str, Any] | Sequence[Mapping[str, Any]],
        padding: bool | str | PaddingStrategy = True,
        max_length: int | None = None,
        pad_to_multiple_of: int | None = None,
        padding_side: str | None = None,
        return_attention_mask: bool | None = None,
        return_tensors: str | None = None,
        verbose: bool = True,
    ) -> BatchEncoding:
        """Pad a batch of encoded sentences (a list of dicts, or a dict of lists) to a common number of words.

        `input_ids` gain rows of zeros and `attention_mask` zeros, on the right. Other per-example entries
        (labels of sequence classification, lengths) pass through untouched; `return_tensors="pt"` or `"np"`
        converts everything.
        """
        if isinstance(encoded_inputs, Mapping):
            keys = list(encoded_inputs)
            if _is_one_sentence(encoded_inputs["input_ids"]):
                encoded_inputs = [encoded_inputs]
            else:
                encoded_inputs = [
                    dict(zip(keys, values, strict=True)) for values in zip(*encoded_inputs.values(), strict=True)
                ]
        examples = [dict(example) for example in encoded_inputs]
        if not examples:
            raise ValueError("pad() got an empty batch")
        if "input_ids" not in examples[0]:
            raise ValueError(f"pad() needs 'input_ids' in every example, got keys {sorted(examples[0])}")
        self._check_padding_side(padding_side)
        _check_max_length(max_length)
        ids = [_as_word_rows(example["input_ids"]) for example in examples]
        lengths = [len(rows) for rows in ids]
        target = _padded_length(padding, lengths, max_length, pad_to_multiple_of)
        if return_attention_mask is None:
            return_attention_mask = "attention_mask" in self.model_input_names
        for example, rows in zip(examples, ids, strict=True):
            example["input_ids"] = rows
        pad_row = [self.pad_token_id] * self.max_characters_per_token
        batch = pad_sentences(examples, target, pad_row, attention_mask=return_attention_mask)
        if return_tensors is not None and len(set(len(rows) for rows in batch["input_ids"])) > 1:
            raise ValueError(
                f"Sentences of different lengths {sorted(set(lengths))} cannot form one tensor: pass padding=True"
            )
        if return_tensors is not None and not batch["input_ids"][0]:
            # torch cannot infer the (words, chars) shape of a batch of empty sentences from nested lists.
            batch["input_ids"] = np.zeros((len(examples), 0, self.max_characters_per_token), dtype=np.int64)
        return BatchEncoding(batch, tensor_type=return_tensors)

    def decode(self, token_ids: Any, skip_special_tokens: bool = False, **kwargs) -> str | list[str]:
        """Words back from character ids: (words, chars) gives one string, (batch, words, chars) a list.

        Padding rows are dropped; `skip_special_tokens` also drops `<S>`/`</S>` words.
        """
        ids = np.asarray(token_ids.tolist() if isinstance(token_ids, torch.Tensor) else token_ids, dtype=np.int64)
        if ids.ndim == 3:
            return [self.decode(sentence, skip_special_tokens=skip_special_tokens) for sentence in ids]
        if ids.ndim != 2:
            raise ValueError(f"decode expects ids of shape (words, chars) or (batch, words, chars), got {ids.shape}")
        words = (self._ids_to_word(row) for row in ids.tolist())
        special = (BOS_WORD, EOS_WORD) if skip_special_tokens else ()
        return " ".join(word for word in words if word is not None and word not in special)

    def batch_decode(self, sequences: Any, skip_special_tokens: bool = False, **kwargs) -> list[str]:
        return [self.decode(sentence, skip_special_tokens=skip_special_tokens) for sentence in sequences]


_STR_TYPE = frozenset((str,))


def _are_strings(words: Iterable[Any]) -> bool:
    # The set of the words' types is built in C: a per-word isinstance took a third of a cached batch's time.
    # Subclasses of str pass too, through the slower test.
    return _STR_TYPE.issuperset(map(type, words)) or all(isinstance(word, str) for word in words)


def pad_sentences(
    examples: Sequence[Mapping[str, Any]], words: int, pad_row: list[int], *, attention_mask: bool = True
) -> dict[str, list]:
    """The columns of encoded sentences padded on the right to at least `words` words: `input_ids`
    (words, chars) rows gain `pad_row`s (the "no word" row, all 0 but for a tokenizer with its own `<pad>`),
    `attention_mask` (ones where absent; left out unless `attention_mask`) and `input_word_ids` zeros; any other
    column passes through. The one place a sentence's inputs to the model are padded (`ElmoTokenizer.pad`, and
    callers that pad stored encodings without a tokenizer)."""
    padded = []
    for example in examples:
        example = dict(example)
        rows = list(example["input_ids"])
        missing = max(words - len(rows), 0)
        if attention_mask:
            example["attention_mask"] = list(example.get("attention_mask", [1] * len(rows))) + [0] * missing
        if "input_word_ids" in example:
            example["input_word_ids"] = list(example["input_word_ids"]) + [0] * missing
        example["input_ids"] = rows + [pad_row] * missing
        padded.append(example)
    return {key: [example[key] for example in padded] for key in padded[0]} if padded else {}


def _batch_encoding(
    columns: dict[str, np.ndarray], lengths: np.ndarray, is_batched: bool, return_tensors: str | None
) -> BatchEncoding:
    """`columns` ((batch, words, ...) arrays, "length" (batch,)) as tensors of `return_tensors`, or as lists of
    each sentence's `lengths` words (without the batch axis for one sentence)."""
    if return_tensors is None:
        counts = lengths.tolist()
        lists = {
            key: value.tolist() if key == "length" else [row[:n] for row, n in zip(value.tolist(), counts, strict=True)]
            for key, value in columns.items()
        }
        return BatchEncoding(lists if is_batched else {key: value[0] for key, value in lists.items()})
    if return_tensors == "pt":  # the arrays are fresh: torch shares them instead of copying
        return BatchEncoding({key: torch.from_numpy(value) for key, value in columns.items()})
    return BatchEncoding(columns, tensor_type=return_tensors)


def _is_one_sentence(input_ids: Any) -> bool:
    """True for the ids of one sentence, (words, chars); False for a batch, (batch, words, chars)."""
    if isinstance(input_ids, torch.Tensor | np.ndarray):
        return input_ids.ndim == 2
    return len(input_ids) > 0 and len(input_ids[0]) > 0 and isinstance(input_ids[0][0], int)


def _as_word_rows(input_ids: Any) -> list[list[int]]:
    if isinstance(input_ids, torch.Tensor | np.ndarray):
        return input_ids.tolist()
    return [list(row) for row in input_ids]


def _check_max_length(max_length: int | None) -> None:
    # A negative count would slice words off the end (words[:-1]) instead of keeping that many.
    if max_length is not None and (not isinstance(max_length, int) or isinstance(max_length, bool) or max_length < 0):
        raise ValueError(f"max_length must be a number of words (an int >= 0) or None, got {max_length!r}")


def _padded_length(
    padding: bool | str | PaddingStrategy, lengths: Iterable[int], max_length: int | None, multiple: int | None
) -> int:
    lengths = list(lengths)
    strategy = PaddingStrategy(padding) if isinstance(padding, str) else padding
    if strategy is True:
        strategy = PaddingStrategy.LONGEST
    elif strategy is False:
        strategy = PaddingStrategy.DO_NOT_PAD
    if strategy == PaddingStrategy.DO_NOT_PAD:
        return 0
    if strategy == PaddingStrategy.MAX_LENGTH:
        if max_length is None:
            raise ValueError("padding='max_length' needs max_length (a number of words)")
        target = max_length
    else:
        target = max(lengths, default=0)
    if multiple:
        target = -(-target // multiple) * multiple
    return target
