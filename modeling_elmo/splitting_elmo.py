"""ELMo's word splitter: raw text -> words, PTB-like, never inside a character as the reader sees it (a grapheme
cluster), with the invisible characters of text taken out (see `split_words`)."""

from __future__ import annotations

import itertools
import re
import unicodedata
from collections.abc import Iterable

from .vocabulary_elmo import BOS_WORD, EOS_WORD

__all__ = ["split_words"]


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
