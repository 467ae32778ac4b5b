"""ElmoTokenizer's batched path: the ids of `word_to_char_ids` (and `word_char_ids`/`word_id` with vocabularies)
whatever its word cache holds (nothing, the batch's words, or past its bound), and a cache that no copy carries."""

from __future__ import annotations

import copy
import itertools
import json
import pickle
import random
import sys
import threading
from pathlib import Path

import elmoformanylangs.elmo
import pytest
import torch
from awkward_words import AWKWARD_WORDS
from datasets.fingerprint import Hasher

from modeling_elmo import ElmoTokenizer, text_elmo, word_to_char_ids


def _encode(tokenizer: ElmoTokenizer, batch: list[list[str]]) -> dict[str, torch.Tensor]:
    return tokenizer(batch, is_split_into_words=True, padding=True, return_tensors="pt")


def _reference_ids(tokenizer: ElmoTokenizer, batch: list[list[str]]) -> list[list[list[int]]]:
    """`word_char_ids` of every word, sentences padded with rows of zeros."""
    width = max((len(sentence) for sentence in batch), default=0)
    padding = [0] * tokenizer.max_characters_per_token
    return [[tokenizer.word_char_ids(word) for word in words] + [padding] * (width - len(words)) for words in batch]


def _shuffled(batch: list[list[str]], seed: int) -> list[list[str]]:
    rng = random.Random(seed)
    return [rng.sample(words, len(words)) for words in rng.sample(batch, len(batch))]


def test_word_char_ids_is_the_original_mapping() -> None:
    # The references below come from word_char_ids: in UTF-8 mode it is word_to_char_ids.
    tokenizer = ElmoTokenizer(max_characters_per_token=7)
    assert all(tokenizer.word_char_ids(word) == word_to_char_ids(word, 7) for word in AWKWARD_WORDS)


@pytest.mark.parametrize("max_characters_per_token", [50, 7])
def test_awkward_words_cold_then_warm(max_characters_per_token: int) -> None:
    tokenizer = ElmoTokenizer(max_characters_per_token=max_characters_per_token)
    first = [AWKWARD_WORDS[:2]]
    assert _encode(tokenizer, first)["input_ids"].tolist() == _reference_ids(tokenizer, first)
    batch = [AWKWARD_WORDS, AWKWARD_WORDS[::-3], [], ["naïve", "naïve", ""]]  # 2 cached words, the others new
    cold = _encode(tokenizer, batch)
    assert cold["input_ids"].tolist() == _reference_ids(tokenizer, batch)
    width = len(AWKWARD_WORDS)
    assert cold["attention_mask"].tolist() == [[1] * len(words) + [0] * (width - len(words)) for words in batch]
    assert len(tokenizer._text_encoder._word_cache) == len(AWKWARD_WORDS)  # the warm call below finds every word in it
    warm_batch = _shuffled(batch, seed=1)
    assert _encode(tokenizer, warm_batch)["input_ids"].tolist() == _reference_ids(tokenizer, warm_batch)


def test_lists_arrays_and_tensors_hold_the_same_ids() -> None:
    tokenizer = ElmoTokenizer()
    batch = [AWKWARD_WORDS[:5], AWKWARD_WORDS[5:], ["x"]]
    lists = tokenizer(batch, is_split_into_words=True)["input_ids"]
    assert lists == [[word_to_char_ids(word) for word in words] for words in batch]
    arrays = tokenizer(batch, is_split_into_words=True, padding=True, return_tensors="np")["input_ids"]
    assert arrays.tolist() == _reference_ids(tokenizer, batch)
    one_sentence = tokenizer(AWKWARD_WORDS, is_split_into_words=True)["input_ids"]
    assert one_sentence == [word_to_char_ids(word) for word in AWKWARD_WORDS]


def test_ids_stay_right_past_the_cache_bound() -> None:
    tokenizer = ElmoTokenizer(word_cache_size=4)
    vocabulary = AWKWARD_WORDS + [f"w{index}" for index in range(20)]
    rng = random.Random(0)
    for _ in range(60):  # small batches: the cache starts over again and again, keeping recent words
        batch = [rng.sample(vocabulary, rng.randint(0, 4)) for _ in range(rng.randint(1, 3))]
        assert _encode(tokenizer, batch)["input_ids"].tolist() == _reference_ids(tokenizer, batch)
        assert len(tokenizer._text_encoder._word_cache) <= 4
    everything = [vocabulary, vocabulary[::-1]]  # more distinct words than the bound in one batch
    assert _encode(tokenizer, everything)["input_ids"].tolist() == _reference_ids(tokenizer, everything)
    assert len(tokenizer._text_encoder._word_cache) == 0  # they were more than it keeps
    assert len(tokenizer._text_encoder._word_cache._char_ids) == 5  # nor does it keep the memory they took
    small = [["w1", "naïve"], ["w1"]]
    assert _encode(tokenizer, small)["input_ids"].tolist() == _reference_ids(tokenizer, small)
    assert len(tokenizer._text_encoder._word_cache) == 2
    _encode(tokenizer, [["w2", "w3"]])
    assert len(tokenizer._text_encoder._word_cache) == 4  # full
    restart = [["w4", "w1", "w5"]]
    assert _encode(tokenizer, restart)["input_ids"].tolist() == _reference_ids(tokenizer, restart)
    assert len(tokenizer._text_encoder._word_cache) == 3  # started over with the words of the call that found it full


def _many_langs_tokenizer(
    folder: Path, word_cache_size: int, max_characters_per_token: int = 10, extra_words: tuple[str, ...] = ()
) -> ElmoTokenizer:
    """A code-point tokenizer (ELMoForManyLangs) with a word vocabulary, as `elmo-convert elmoformanylangs`
    writes one: by default 10 characters a word, so its words are cut after 8 code points."""
    chars = {char: index + 7 for index, char in enumerate("abcdeé日😀 <>S/")}
    (folder / "char_vocab.json").write_text(json.dumps(chars, ensure_ascii=False), encoding="utf-8")
    words = {"<bos>": 1, "<eos>": 2, "<oov>": 3, "abc": 4, "ééééééé": 5, "abcdeabc": 6, "": 7, " ": 8}
    words.update((word, len(words) + 1) for word in extra_words)
    (folder / "word_vocab.json").write_text(json.dumps(words, ensure_ascii=False), encoding="utf-8")
    return ElmoTokenizer(
        char_vocab_file=str(folder / "char_vocab.json"),
        word_vocab_file=str(folder / "word_vocab.json"),
        max_characters_per_token=max_characters_per_token,
        special_char_ids={"bow": 1, "eow": 2, "bos": 3, "eos": 4, "pad": 5, "oov": 6},
        special_word_ids={"bos": 1, "eos": 2, "oov": 3},
        word_cache_size=word_cache_size,
    )


@pytest.mark.parametrize("word_cache_size", [1000, 3])
def test_code_points_and_word_ids_cold_warm_and_past_the_bound(tmp_path: Path, word_cache_size: int) -> None:
    tokenizer = _many_langs_tokenizer(tmp_path, word_cache_size)
    words = [*AWKWARD_WORDS, "abc", "abcdeabcXYZ", "ééééééé", "zzz", "日😀日"]
    batches = [[words, words[::-1][:7], []], _shuffled([words, ["abc", "zzz"]], seed=2), [["abc"], words[:2]]]
    for batch in batches:
        encoded = _encode(tokenizer, batch)
        assert encoded["input_ids"].tolist() == _reference_ids(tokenizer, batch)
        width = encoded["input_word_ids"].shape[1]
        expected = [[tokenizer.word_id(word) for word in words] + [0] * (width - len(words)) for words in batch]
        assert encoded["input_word_ids"].tolist() == expected
    assert tokenizer.word_char_ids("abcdeabcXYZ") == [1, 7, 8, 9, 10, 11, 7, 8, 9, 2]  # cut after 8 code points
    assert tokenizer.word_id("abcdeabcXYZ") == 6


def test_an_encoder_of_the_same_vocabularies_gives_the_tokenizers_arrays(tmp_path: Path) -> None:
    """The front end reads code points and word ids as the tokenizer does: they are one path (`padded_ids`)."""
    tokenizer = _many_langs_tokenizer(tmp_path, 1000)
    encoder = text_elmo.ElmoTextEncoder(
        tokenizer.max_characters_per_token,
        char_vocab=tokenizer.char_vocab,
        special_char_ids=tokenizer.special_char_ids,
        word_vocab=tokenizer.word_vocab,
        special_word_ids=tokenizer.special_word_ids,
    )
    batch = [[*AWKWARD_WORDS, "abcdeabcXYZ", "ééééééé"], [], ["abc", "<S>", "zzz"]]
    expected = tokenizer(batch, is_split_into_words=True, padding=True, return_tensors="np")
    encoded = encoder.encode_words(batch)
    assert encoded.keys() == {"input_ids", "attention_mask", "input_word_ids"}
    for key, value in encoded.items():
        assert value.dtype == expected[key].dtype and value.tolist() == expected[key].tolist(), key


def test_the_tokenizer_gets_its_ids_from_its_encoders_padded_ids(monkeypatch: pytest.MonkeyPatch) -> None:
    """One function turns words into padded ids (issue 51): the tokenizer hands its words to it."""
    calls = []
    padded_ids = text_elmo.ElmoTextEncoder.padded_ids

    def recorded(encoder: text_elmo.ElmoTextEncoder, sentences: list[list[str]], words: int = 0) -> tuple:
        calls.append((sentences, words))
        return padded_ids(encoder, sentences, words)

    monkeypatch.setattr(text_elmo.ElmoTextEncoder, "padded_ids", recorded)
    encoded = ElmoTokenizer()(["a b", "c"], padding="max_length", max_length=3)
    assert calls == [([["a", "b"], ["c"]], 3)]
    assert encoded["input_ids"] == [
        [word_to_char_ids(word) for word in words] + [[0] * 50] * (3 - len(words)) for words in (["a", "b"], ["c"])
    ]


def test_code_point_words_sharing_48_bytes_or_48_code_points(tmp_path: Path) -> None:
    """With 50 characters a word, ELMoForManyLangs cuts a word after 48 code points, not bytes (their
    `read_list`), and looks its word id up as cut. Words that share their first 48 bytes but not 48 code points
    keep ids of their own, cold and warm; words that share 48 code points get the same ids."""
    tokenizer = _many_langs_tokenizer(tmp_path, 1000, max_characters_per_token=50, extra_words=("a" * 48,))
    words = ["é" * 24 + "abc", "é" * 24 + "abd", "日" * 16 + "a", "日" * 16 + "b", "a" * 48 + "b", "a" * 48 + "c"]
    (cut,), _ = elmoformanylangs.elmo.read_list([words], max_chars=50)
    cut = cut[1:-1]  # without their <bos> and <eos>
    vocabulary, special = tokenizer.char_vocab, tokenizer.special_char_ids
    expected_chars = [
        [special["bow"], *(vocabulary[char] for char in word), special["eow"]] + [special["pad"]] * (48 - len(word))
        for word in cut
    ]
    expected_word_ids = [tokenizer.word_vocab.get(word, tokenizer.special_word_ids["oov"]) for word in cut]
    assert expected_word_ids[4:] == [tokenizer.word_vocab["a" * 48]] * 2
    for batch in ([words], [words], [[word] for word in words]):  # cold, warm, one word a sentence
        encoded = tokenizer(batch, is_split_into_words=True)
        assert list(itertools.chain(*encoded["input_ids"])) == expected_chars
        assert list(itertools.chain(*encoded["input_word_ids"])) == expected_word_ids


def test_threads_sharing_a_tokenizer_get_their_own_ids() -> None:
    # A cache of 4 words starts over on every call: a thread must never read rows another is rewriting.
    tokenizer = ElmoTokenizer(word_cache_size=4)
    start = threading.Barrier(4)
    failures = []

    def work(seed: int) -> None:
        rng = random.Random(seed)
        vocabulary = [f"{seed}-{index}" for index in range(40)] + AWKWARD_WORDS
        start.wait()
        for _ in range(500):
            batch = [rng.sample(vocabulary, 6), rng.sample(vocabulary, 3)]
            try:
                if _encode(tokenizer, batch)["input_ids"].tolist() != _reference_ids(tokenizer, batch):
                    failures.append(batch)
            except Exception as error:  # a row index past the end of a table another thread replaced
                failures.append(error)

    threads = [threading.Thread(target=work, args=(seed,)) for seed in range(4)]
    switch_interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # threads take turns every few bytecodes, so that a race shows within the test
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        sys.setswitchinterval(switch_interval)
    assert not failures


def test_the_cache_is_not_copied_saved_or_fingerprinted(tmp_path: Path) -> None:
    tokenizer = ElmoTokenizer()
    fingerprint = Hasher.hash(tokenizer)  # what `datasets` keys its cached .map() results on
    _encode(tokenizer, [["zyzzyva", "naïve"]])
    assert len(tokenizer._text_encoder._word_cache) == 2
    assert Hasher.hash(tokenizer) == fingerprint
    for duplicate in (copy.deepcopy(tokenizer), pickle.loads(pickle.dumps(tokenizer))):
        assert len(duplicate._text_encoder._word_cache) == 0
        assert _encode(duplicate, [["zyzzyva"]])["input_ids"].tolist() == [[word_to_char_ids("zyzzyva")]]
    tokenizer.save_pretrained(tmp_path)
    assert not any("zyzzyva" in path.read_text(encoding="utf-8") for path in tmp_path.iterdir())


def test_a_cache_without_room_is_refused() -> None:
    with pytest.raises(ValueError, match="word_cache_size=0"):
        ElmoTokenizer(word_cache_size=0)


def test_an_interrupted_conversion_leaves_no_half_written_words(monkeypatch: pytest.MonkeyPatch) -> None:
    tokenizer = ElmoTokenizer()
    _encode(tokenizer, [["naïve"]])

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    with monkeypatch.context() as patch:
        patch.setattr(text_elmo, "words_to_char_ids", interrupted)
        with pytest.raises(KeyboardInterrupt):
            _encode(tokenizer, [["naïve", "zyzzyva"]])
    batch = [["zyzzyva", "naïve"]]
    assert _encode(tokenizer, batch)["input_ids"].tolist() == _reference_ids(tokenizer, batch)


def test_padding_rows_hold_the_pad_token_id() -> None:
    tokenizer = ElmoTokenizer()
    tokenizer.pad_token = "<0x41>"  # byte 0x41, id 66
    padded = _encode(tokenizer, [["a", "b"], ["c"]])["input_ids"]
    assert padded[1, 1].tolist() == [66] * 50
    assert padded[0].tolist() == [word_to_char_ids("a"), word_to_char_ids("b")]
