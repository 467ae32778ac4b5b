"""Words that have broken, or could break, a character-id path: markers and look-alikes, spaces and control
characters, a lone surrogate, cuts at 48 bytes or code points inside a multi-byte character, grapheme clusters."""

__all__ = ["AWKWARD_WORDS", "ENGLAND"]

ENGLAND = "\U0001f3f4\U000e0067\U000e0062\U000e0065\U000e006e\U000e0067\U000e007f"
AWKWARD_WORDS = [
    "",
    "<S>",
    "</S>",
    "<s>",  # not a sentence marker: its bytes
    "<S>x",
    " ",
    "\t",
    "New York",
    "naïve",
    "日本語",
    "\x00",  # a byte 0 inside a word is id 1, not padding
    "\u200b",
    "\ud800",  # a lone surrogate: no UTF-8 bytes ("ignore"), one code point
    "a" * 47 + "é",  # 49 bytes: the cut at 48 falls inside "é"
    "a" + "😀" * 12,  # 49 bytes: the cut keeps 3 of the last emoji's 4 bytes
    "😀" * 12,  # exactly 48 bytes
    "😀" * 13,
    "x" * 100,
    ENGLAND,  # a tag sequence: 7 code points, 28 bytes
    "x" * 45 + ENGLAND,  # 73 bytes, 52 code points: both cuts fall inside the flag
    "\u0645\u06cc\u200c\u062e\u0648\u0627\u0647\u0645",  # a zero-width non-joiner inside a Persian word
    "\U0001f468\u200d\U0001f469\u200d\U0001f467",  # a family: emoji joined by zero-width joiners
]
