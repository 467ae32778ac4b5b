"""ElmoTokenizer: character ids, word splitting, padding, truncation, collators, save/load."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from transformers import AutoTokenizer, DataCollatorForTokenClassification, DataCollatorWithPadding

from modeling_elmo import ElmoTokenizer, split_words, word_to_char_ids

BOW, EOW, PAD = 259, 260, 261


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
    ],
)
def test_raw_text_is_never_split_inside_a_character(text: str, words: list[str]) -> None:
    """--tokenize cut "e\\u0301cole" into e, the accent and "cole", and an emoji family into its people and the
    invisible joiners: each became a "word" with vectors of its own."""
    assert split_words(text) == words
