"""The text front end splits text by Unicode 14.0's character classes on every Python the package admits: its table
(written into modeling_elmo/text_elmo.py by tests/helpers/unicode_table.py under Python 3.11) is the generator's
output, what the split still asks the running Python agrees with the table, and every code point splits as on
Python 3.11 (a digest of the words, computed there once and committed here)."""

from __future__ import annotations

import re
import sys
import unicodedata

import pytest
from unicode_table import FRONT_END_FILE, UNICODE_VERSION, split_digest, written_front_end

from modeling_elmo import text_elmo
from modeling_elmo.text_elmo import split_words

# `split_digest(split_words)` under Python 3.11 (Unicode 14.0); Python 3.12.1 and 3.13.0 gave the same.
PYTHON_3_11_DIGEST = "5330e188bc6d754b8599853029eba9e4c0579b3b9a8f8ac1386c0b525af79827"
CODE_POINTS = range(sys.maxunicode + 1)


def _codes(spans: list[tuple[int, int]]) -> set[int]:
    return {code for first, last in spans for code in range(first, last + 1)}


@pytest.mark.slow
@pytest.mark.skipif(unicodedata.unidata_version != UNICODE_VERSION, reason="the table is Unicode 14.0's")
def test_the_table_is_its_generators_output() -> None:
    assert text_elmo.UNICODE_VERSION == UNICODE_VERSION
    assert FRONT_END_FILE.read_text(encoding="utf-8") == written_front_end()


def test_the_white_space_of_str_split_is_the_tables() -> None:
    """The chunks come from `str.split()`, which reads the running Python's white space: the table's, everywhere."""
    assert {code for code in CODE_POINTS if chr(code).isspace()} == _codes(text_elmo._spans(text_elmo._SPACES))


def test_every_dropped_character_is_unprintable_to_this_python() -> None:
    """`str.isprintable()` is the shortcut past step 1 (dropping): False wherever a character to drop is."""
    assert not any(chr(code).isprintable() for code in _codes(text_elmo._DROPPED))


def test_the_clitics_letters_are_the_ascii_letters_and_the_long_s() -> None:
    """Case-insensitive matching reads the running Python's case tables: for the clitics' letters it gives the two
    ASCII cases and U+017F (the long s: Unicode's case folding makes it s), and nothing else, on every Python."""
    every_character = "".join(map(chr, CODE_POINTS))
    for letter in "ntsrevldm":
        found = set(re.findall(f"(?i:{letter})", every_character))
        assert found == {letter, letter.upper(), *("\u017f" if letter == "s" else "")}, letter


@pytest.mark.parametrize(
    ("line", "words"),
    [
        # U+0345 (a combining mark) folds to iota: case-insensitive classes made these three marks (NFC makes
        # U+1FBE U+03B9)
        (
            "(\u0399\u03b1\u03bd\u03bf\u03c5\u03ac\u03c1\u03b9\u03bf\u03c2 2020) \U0001f44d\U0001f3fd",
            ["(", "\u0399\u03b1\u03bd\u03bf\u03c5\u03ac\u03c1\u03b9\u03bf\u03c2", "2020", ")", "\U0001f44d\U0001f3fd"],
        ),
        ("x\u0301 (\u0399 (\u03b9 (\u1fbe", ["x\u0301", "(", "\u0399", "(", "\u03b9", "(", "\u03b9"]),
    ],
)
def test_greek_iota_is_a_letter_beside_a_combining_mark(line: str, words: list[str]) -> None:
    assert split_words(line) == words


@pytest.mark.parametrize(
    ("line", "words"),
    [
        # assigned since 14.0: a Kawi letter and a Nag Mundari digit are symbols (unassigned code points) ...
        ("a\U00011f04b \U0001e4f1\U0001e4f2", ["a", "\U00011f04", "b", "\U0001e4f1", "\U0001e4f2"]),
        # ... an Egyptian hieroglyph format control (Cf since 15.0) is no format character, so it stays ...
        ("a\U00013439b", ["a", "\U00013439", "b"]),
        # ... and a Kawi sign (a mark of class 9 since 15.0) is no mark: NFC neither moves an accent past it nor
        # composes across it
        ("a\U00011f42\u0301", ["a", "\U00011f42\u0301"]),
    ],
)
def test_characters_assigned_since_unicode_14_split_as_on_python_3_11(line: str, words: list[str]) -> None:
    assert split_words(line) == words


@pytest.mark.slow
def test_every_code_point_splits_as_on_python_3_11() -> None:
    assert split_digest(split_words) == PYTHON_3_11_DIGEST
