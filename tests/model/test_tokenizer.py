"""ElmoTokenizer: character ids, word splitting, padding, truncation, collators, save/load."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from awkward_words import ENGLAND
from transformers import AutoTokenizer, DataCollatorForTokenClassification, DataCollatorWithPadding

from modeling_elmo import ElmoTokenizer, split_words, text_elmo, word_to_char_ids

BOW, EOW, PAD = 259, 260, 261
SCOTLAND = "\U0001f3f4\U000e0067\U000e0062\U000e0073\U000e0063\U000e0074\U000e007f"


@pytest.fixture
def tokenizer() -> ElmoTokenizer:
    return ElmoTokenizer()


def test_character_ids_follow_the_original_mapping() -> None:
    assert word_to_char_ids("ab") == [BOW, 98, 99, EOW] + [PAD] * 46
    assert word_to_char_ids("") == [BOW, EOW] + [PAD] * 48
    assert word_to_char_ids("<S>") == [BOW, 257, EOW] + [PAD] * 47
    assert word_to_char_ids("</S>") == [BOW, 258, EOW] + [PAD] * 47
    # UTF-8 bytes, +1 each: "é" is 0xC3 0xA9.
    assert word_to_char_ids("é")[:4] == [BOW, 0xC3 + 1, 0xA9 + 1, EOW]


def test_long_words_are_cut_at_48_bytes_even_inside_a_character() -> None:
    word = "a" * 47 + "é"  # 49 bytes: the cut falls between the two bytes of "é"
    ids = word_to_char_ids(word)
    assert len(ids) == 50
    assert ids[1:48] == [ord("a") + 1] * 47
    assert ids[48] == 0xC3 + 1
    assert ids[49] == EOW


def test_raw_text_is_split_ptb_like() -> None:
    assert split_words("Don't panic: it's 3.14, not U.S. law...") == [
        "Do",
        "n't",
        "panic",
        ":",
        "it",
        "'s",
        "3.14",
        ",",
        "not",
        "U.S.",
        "law",
        "...",
    ]
    assert split_words("bio-identical (1,000) <S> naïve!") == ["bio-identical", "(", "1,000", ")", "<S>", "naïve", "!"]
    assert split_words("   ") == []


def test_pre_split_words_are_kept_exactly(tokenizer: ElmoTokenizer) -> None:
    words = ["", "New York", "<S>", "don't", "日本"]
    encoded = tokenizer(words, is_split_into_words=True)
    assert encoded["input_ids"] == [word_to_char_ids(word) for word in words]
    assert encoded["attention_mask"] == [1] * 5


def test_batch_padding_and_tensors(tokenizer: ElmoTokenizer) -> None:
    encoded = tokenizer(["a b c", "", "d"], padding=True, return_tensors="pt")
    assert encoded["input_ids"].shape == (3, 3, 50)
    assert encoded["attention_mask"].tolist() == [[1, 1, 1], [0, 0, 0], [1, 0, 0]]
    assert not encoded["input_ids"][1].any()
    assert not encoded["input_ids"][2, 1:].any()


def test_all_empty_batch_gives_zero_words(tokenizer: ElmoTokenizer) -> None:
    encoded = tokenizer([[], []], is_split_into_words=True, padding=True, return_tensors="pt")
    assert encoded["input_ids"].shape == (2, 0, 50)
    assert encoded["attention_mask"].shape == (2, 0)


def test_truncation_and_max_length_padding_count_words(tokenizer: ElmoTokenizer) -> None:
    encoded = tokenizer(["one two three four", "five"], truncation=True, max_length=2, padding="max_length")
    assert [len(ids) for ids in encoded["input_ids"]] == [2, 2]
    assert encoded["attention_mask"] == [[1, 1], [1, 0]]
    multiple = tokenizer(["a b c"], padding=True, pad_to_multiple_of=4, return_tensors="pt")
    assert multiple["input_ids"].shape == (1, 4, 50)


@pytest.mark.parametrize("max_length", [-1, "2"])
def test_a_max_length_that_is_no_word_count_is_refused(tokenizer: ElmoTokenizer, max_length: object) -> None:
    """-1 would cut the last word (words[:-1]) instead of keeping a number of words."""
    refusal = rf"max_length must be a number of words \(an int >= 0\) or None, got {max_length!r}"
    with pytest.raises(ValueError, match=refusal):
        tokenizer("one two three", truncation=True, max_length=max_length)
    with pytest.raises(ValueError, match=refusal):
        tokenizer.pad([tokenizer("one two")], padding="max_length", max_length=max_length)


def test_unpadded_ragged_batch_cannot_become_a_tensor(tokenizer: ElmoTokenizer) -> None:
    with pytest.raises(ValueError, match="padding=True"):
        tokenizer(["a b", "c"], return_tensors="pt")


def test_left_padding_is_refused(tokenizer: ElmoTokenizer) -> None:
    with pytest.raises(ValueError, match="right"):
        tokenizer(["a b", "c"], padding=True, padding_side="left")


def test_pairs_and_wrong_inputs_are_refused(tokenizer: ElmoTokenizer) -> None:
    with pytest.raises(ValueError, match="pairs"):
        tokenizer("a", text_pair="b")
    with pytest.raises(ValueError, match="list of strings"):
        tokenizer([["a", 3]], is_split_into_words=True)


def test_decode_round_trips_words(tokenizer: ElmoTokenizer) -> None:
    batch = tokenizer([["naïve", "", "<S>"], ["x"]], is_split_into_words=True, padding=True, return_tensors="pt")
    assert tokenizer.decode(batch["input_ids"]) == ["naïve  <S>", "x"]
    assert tokenizer.decode(batch["input_ids"][0], skip_special_tokens=True) == "naïve "
    assert tokenizer.batch_decode(batch["input_ids"]) == ["naïve  <S>", "x"]


def test_special_token_ids(tokenizer: ElmoTokenizer) -> None:
    assert tokenizer.pad_token_id == 0
    assert (tokenizer.bos_token_id, tokenizer.eos_token_id) == (257, 258)
    assert len(tokenizer) == 262


def test_save_and_load_round_trip(tokenizer: ElmoTokenizer, tmp_path: Path) -> None:
    custom = ElmoTokenizer(max_characters_per_token=20)
    custom.save_pretrained(tmp_path)
    import modeling_elmo  # noqa: F401  (registers AutoTokenizer)

    loaded = AutoTokenizer.from_pretrained(tmp_path)
    assert isinstance(loaded, ElmoTokenizer)
    assert loaded.max_characters_per_token == 20
    assert loaded("a long sentence")["input_ids"] == custom("a long sentence")["input_ids"]


def test_data_collator_with_padding(tokenizer: ElmoTokenizer) -> None:
    features = [dict(tokenizer("a b c"), label=1), dict(tokenizer("d"), label=0)]
    batch = DataCollatorWithPadding(tokenizer)(features)
    assert batch["input_ids"].shape == (2, 3, 50)
    assert batch["attention_mask"].tolist() == [[1, 1, 1], [1, 0, 0]]
    assert batch["labels"].tolist() == [1, 0]


def test_data_collator_for_token_classification(tokenizer: ElmoTokenizer) -> None:
    features = [dict(tokenizer("a b c"), labels=[1, 2, 3]), dict(tokenizer("d"), labels=[4])]
    batch = DataCollatorForTokenClassification(tokenizer)(features)
    assert batch["input_ids"].shape == (2, 3, 50)
    assert batch["labels"].tolist() == [[1, 2, 3], [4, -100, -100]]
    assert batch["labels"].dtype == torch.long


def test_empty_batch_gives_empty_arrays() -> None:
    # Hugging Face's own tokenizers fail on an empty batch (IndexError, or a complaint about pad()); an empty
    # batch of this one is what a batch of empty sentences is, with no rows.
    import modeling_elmo

    tokenizer = AutoTokenizer.from_pretrained(modeling_elmo.DEFAULT_MODEL)
    tensors = tokenizer([], padding=True, return_tensors="pt")
    assert tensors["input_ids"].shape == (0, 0, 50) and tensors["input_ids"].dtype == torch.long
    assert tensors["attention_mask"].shape == (0, 0) and tensors["attention_mask"].dtype == torch.long
    arrays = tokenizer([], is_split_into_words=True, return_tensors="np")
    assert arrays["input_ids"].shape == (1, 0, 50)  # with is_split_into_words, [] is one sentence of no words
    assert dict(tokenizer([])) == {"input_ids": [], "attention_mask": []}


def test_left_truncation_keeps_the_last_words(tokenizer: ElmoTokenizer) -> None:
    tokenizer.truncation_side = "left"
    batch = [["a", "b", "c"], ["d"]]
    cut = tokenizer(batch, is_split_into_words=True, truncation=True, max_length=2)["input_ids"]
    assert cut == [[word_to_char_ids("b"), word_to_char_ids("c")], [word_to_char_ids("d")]]
    whole = tokenizer(batch, is_split_into_words=True, truncation=True, max_length=5)["input_ids"]
    assert whole == [[word_to_char_ids(word) for word in words] for words in batch]


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("e\u0301cole, école", ["école", ",", "école"]),  # decomposed (NFC makes it the precomposed word), then not
        ("\U0001f468\u200d\U0001f469\u200d\U0001f467 family", ["\U0001f468\u200d\U0001f469\u200d\U0001f467", "family"]),
        ("\u2764\ufe0f!", ["\u2764\ufe0f", "!"]),  # an emoji and its variation selector
        ("\U0001f44d\U0001f3fd ok", ["\U0001f44d\U0001f3fd", "ok"]),  # a skin tone
        ("\U0001f1eb\U0001f1f7\U0001f1e9\U0001f1ea", ["\U0001f1eb\U0001f1f7", "\U0001f1e9\U0001f1ea"]),  # two flags
        ("1\ufe0f\u20e3 key", ["1\ufe0f\u20e3", "key"]),  # a keycap
        ("हिन्दी भाषा", ["हिन्दी", "भाषा"]),  # vowel signs and virama (Mc, Mn)
        (
            "\u0645\u06cc\u200c\u062e\u0648\u0627\u0647\u0645.",
            ["\u0645\u06cc\u200c\u062e\u0648\u0627\u0647\u0645", "."],
        ),  # ZWNJ in a Persian word
        ("o\u0308-ring don't", ["ö-ring", "do", "n't"]),
        (f"{ENGLAND} England", [ENGLAND, "England"]),  # a tag sequence: the black flag, tag letters, cancel tag
        (f"{ENGLAND}{SCOTLAND}!", [ENGLAND, SCOTLAND, "!"]),
    ],
)
def test_raw_text_is_never_split_inside_a_character(text: str, words: list[str]) -> None:
    """--tokenize cut "e\\u0301cole" into e, the accent and "cole", and an emoji family into its people and the
    invisible joiners: each became a "word" with vectors of its own."""
    assert split_words(text) == words


def test_raw_text_is_nfc_not_nfkc() -> None:
    """NFC composes what is one character (an accent, the Angstrom sign); the compatibility mappings of NFKC would
    change the words themselves: the ligature "\ufb01" is not "fi", full-width and superscript digits are not
    ASCII digits."""
    text = "\ufb01ne \uff11\uff12\uff13 x\u00b2 \u212b e\u0301"
    assert split_words(text) == ["\ufb01ne", "\uff11\uff12\uff13", "x\u00b2", "\u00c5", "\u00e9"]


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("wo\x00rd", ["wo", "rd"]),  # NUL and the other controls separate words
        ("a\x01b\x1bc\x7fd \x80e\x9ff", ["a", "b", "c", "d", "e", "f"]),  # C0, ESC, DEL, C1
        ("\x00", []),
        ("one\u200btwo\u200b", ["one", "two"]),  # a zero-width space is a word boundary
        ("wo\u200erd \u200fleft\u200e", ["word", "left"]),  # the bidirectional marks are dropped
        ("\u202eevil\u202c \u202aa\u202bb\u202dc\u202c", ["evil", "abc"]),  # embeddings, overrides
        ("\u2066x\u2067y\u2068z\u2069 \u061c!", ["xyz", "!"]),  # isolates, the Arabic letter mark
        ("soft\u00adware wo\u2060rd \ufeffBOM", ["software", "word", "BOM"]),  # soft hyphen, word joiner, BOM
        ("e\u200e\u0301cole", ["école"]),  # dropped before NFC composes
        ("\u200e\u200b\x00 \u200f", []),  # a line of invisible characters has no word
        ("\u200e<S>\u200e </S>\u200f", ["<S>", "</S>"]),  # a dropped mark leaves a sentence marker whole
        ("\u200dword\u200d \u200c!", ["word", "!"]),  # a joiner that joins nothing
        ("a\u200d.", ["a", "."]),
        ("hello\U000e0069\U000e0067\U000e007f", ["hello"]),  # tag characters outside a flag: hidden text
        ("\U000e0001\U000e0065\U000e006e hi", ["hi"]),  # a language tag
        ("a" * 30 + "\u200e" + "b" * 30 + "\x00" + "c" * 50, ["a" * 30 + "b" * 30, "c" * 50]),  # over 48 bytes
        ("", []),
    ],
)
def test_no_word_holds_an_invisible_character(text: str, words: list[str]) -> None:
    """--tokenize made words of the bidirectional marks, a zero-width space and NUL ("wo\\x00rd" was three)."""
    assert split_words(text) == words


def test_every_control_and_format_character_separates_words_or_is_dropped() -> None:
    """Each of Unicode's control (Cc) and format (Cf) characters, between letters: a separator (the controls and the
    zero-width space) or dropped (the others); the joiners only stay between two characters of a word."""
    control_codes = [*range(0x20), *range(0x7F, 0xA0)]  # Cc (the front end's Cf: Unicode 14.0's, on any Python)
    formats = [chr(code) for first, last in text_elmo._spans(text_elmo._FORMATS) for code in range(first, last + 1)]
    controls = [*map(chr, control_codes), *formats]
    assert len(controls) > 190
    for character in controls:
        if character in "\u200c\u200d":  # joiners: kept inside the word, dropped at its ends
            assert split_words(f"{character}wo{character}rd{character}") == [f"wo{character}rd"]
        elif character.isspace() or ord(character) in control_codes or character == "\u200b":
            assert split_words(f"{character}wo{character}rd{character}") == ["wo", "rd"], repr(character)
        else:
            assert split_words(f"{character}wo{character}rd{character}") == ["word"], repr(character)


def test_raw_text_with_invisible_characters_gets_the_ids_of_its_words() -> None:
    """The batched path (its word cache, the vectorised ids) and `word_to_char_ids` agree on the words that
    invisible characters leave, cold and warm, and the invisible characters themselves get no row."""
    tokenizer = ElmoTokenizer()
    family = "\U0001f468\u200d\U0001f469"
    text = f"\u200ewo\x00rd\u200b {ENGLAND}\u200e{'x' * 30}\u00ad{'y' * 30}{ENGLAND} \u200d{family}\u200d "
    words = ["wo", "rd", ENGLAND, "x" * 30 + "y" * 30, ENGLAND, family]  # a word over 48 bytes
    assert split_words(text) == words
    for _ in ("cold", "warm"):
        encoded = tokenizer([text, "", "\u200b\x00"], padding=True, return_tensors="pt")
        assert encoded["input_ids"][0].tolist() == [word_to_char_ids(word) for word in words]
        assert encoded["attention_mask"].tolist() == [[1] * 6, [0] * 6, [0] * 6]
