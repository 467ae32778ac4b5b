"""The character-id rule of `text_elmo`: each batched form gives, for every word, the row its one-word rule
gives, on awkward words (unicode, cuts at 48 bytes or code points, empty words, bilm-tf's marker words), and the
one-word rule is bilm-tf's."""

from __future__ import annotations

import pytest
from awkward_words import AWKWARD_WORDS

from modeling_elmo.text_elmo import (
    BILM_TF_CHAR_IDS,
    BILM_TF_SPECIAL_WORD_IDS,
    BILM_TF_SPECIAL_WORDS,
    word_to_char_ids,
    word_to_code_point_ids,
    words_to_char_ids,
    words_to_code_point_ids,
)

# ELMoForManyLangs' framing ids, and a character vocabulary that lacks most of the awkward words' characters
MANY_LANGS_SPECIAL = {"bow": 1, "eow": 2, "bos": 3, "eos": 4, "pad": 5, "oov": 6}
CHAR_VOCAB = {char: index + 7 for index, char in enumerate("abcdeé日😀 <>S/xa\x00\ud800")}
# every awkward word, repeated and in another order: a batch's words need not be distinct
WORDS = [*AWKWARD_WORDS, *AWKWARD_WORDS[::-1], "abc", "é" * 60]


@pytest.mark.parametrize("max_characters_per_token", [50, 7, 3])
def test_bilm_tf_batched_ids_are_the_rule_for_every_word(max_characters_per_token: int) -> None:
    batched = words_to_char_ids(WORDS, max_characters_per_token)
    assert batched.shape == (len(WORDS), max_characters_per_token) and batched.dtype.name == "int64"
    assert batched.tolist() == [word_to_char_ids(word, max_characters_per_token) for word in WORDS]
    assert words_to_char_ids([], max_characters_per_token).shape == (0, max_characters_per_token)


@pytest.mark.parametrize("max_characters_per_token", [50, 7, 3])
def test_code_point_batched_ids_are_the_rule_for_every_word(max_characters_per_token: int) -> None:
    batched = words_to_code_point_ids(WORDS, CHAR_VOCAB, MANY_LANGS_SPECIAL, max_characters_per_token)
    expected = [
        word_to_code_point_ids(word, CHAR_VOCAB, MANY_LANGS_SPECIAL, max_characters_per_token) for word in WORDS
    ]
    assert batched.tolist() == expected


def test_the_rule_is_bilm_tfs() -> None:
    bow, eow, pad = BILM_TF_CHAR_IDS["bow"], BILM_TF_CHAR_IDS["eow"], BILM_TF_CHAR_IDS["pad"]
    assert word_to_char_ids("") == [bow, eow] + [pad] * 48
    assert word_to_char_ids("<S>") == [bow, BILM_TF_CHAR_IDS["bos"], eow] + [pad] * 47
    assert word_to_char_ids("a" * 47 + "é") == [bow, *[ord("a") + 1] * 47, 0xC3 + 1, eow]  # cut inside "é"
    assert word_to_code_point_ids("é" * 60, CHAR_VOCAB, MANY_LANGS_SPECIAL, 50) == [1, *[CHAR_VOCAB["é"]] * 48, 2]
    assert word_to_code_point_ids("</S>", CHAR_VOCAB, MANY_LANGS_SPECIAL, 5) == [1, 4, 2, 5, 5]
    assert dict(zip(BILM_TF_SPECIAL_WORDS, BILM_TF_SPECIAL_WORD_IDS, strict=True)) == {"<S>": 0, "</S>": 1, "<UNK>": 2}
