"""`TokenVectorCache` (issue 52): the character CNN runs once per distinct word of a run, and every layer keeps the
bits it has without the cache, over batches that repeat words (awkward ones among them), with the bound held."""

from __future__ import annotations

import pytest
import torch
from awkward_words import AWKWARD_WORDS
from ragged_batches import BATCHES
from tiny_models import word_embedding_encoder

from modeling_elmo import DEFAULT_MODEL, ElmoConfig, ElmoModel, ElmoTokenizer, TokenVectorCache

# Batches that repeat one another's words: ragged ones (an empty sentence, an empty-string word, a word over 48
# bytes, non-ASCII), the awkward words, one sentence, then all of them again, more than fit a small cache.
RUN = [
    *BATCHES,
    [AWKWARD_WORDS[:12], AWKWARD_WORDS[12:], []],
    [["the", "naïve", "新しい", "cat", "x" * 60, ""]],
    [[word for batch in BATCHES for sentence in batch for word in sentence] + AWKWARD_WORDS, ["the"]],
    *BATCHES,
]


@pytest.fixture(scope="module", params=["tiny", "bundled"])
def model(request: pytest.FixtureRequest) -> ElmoModel:
    """A tiny random model, and the bundled one (its CNN's products are of the sizes the CPU rounds by)."""
    if request.param == "bundled":
        return ElmoModel.from_pretrained(DEFAULT_MODEL).eval()
    torch.manual_seed(0)
    config = ElmoConfig(
        char_embedding_dim=4,
        char_cnn_filters=[[1, 8], [2, 8], [3, 16]],
        num_highway_layers=2,
        projection_dim=16,
        cell_size=32,
    )
    return ElmoModel(config).eval()


@pytest.fixture(scope="module")
def fixture_model(fixture_model_folder) -> ElmoModel:
    """AllenNLP's test biLM, converted."""
    return ElmoModel.from_pretrained(fixture_model_folder).eval()


def _run(model: ElmoModel, cache: TokenVectorCache | None) -> list[torch.Tensor]:
    """Every layer of every batch of `RUN`, in inference mode as elmo-embed runs it."""
    tokenizer, layers = ElmoTokenizer(), []
    with torch.inference_mode():
        for batch in RUN:
            inputs = tokenizer(batch, is_split_into_words=True, padding=True, return_tensors="pt")
            layers += model(**inputs, output_hidden_states=True, token_cache=cache).hidden_states
    return layers


@pytest.mark.parametrize("max_words", [1, 7, 1 << 16])
def test_every_layer_has_the_bits_it_has_without_the_cache(model: ElmoModel, max_words: int) -> None:
    cache = TokenVectorCache(max_words)
    expected, actual = _run(model, None), _run(model, cache)
    assert len(actual) == len(expected)
    for index, (layer, without) in enumerate(zip(actual, expected, strict=True)):
        assert torch.equal(layer, without), f"layer {index % (model.config.num_hidden_layers + 1)}, #{index}"
    assert 0 < len(cache) <= max_words


@pytest.fixture
def encoded(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many words the character CNN encodes each time a cache asks it for the words it does not hold."""
    counts: list[int] = []
    vectors = TokenVectorCache.vectors

    def counted(self, words: torch.Tensor, encode, dtype: torch.dtype) -> torch.Tensor:
        def counted_encode(missing: torch.Tensor) -> torch.Tensor:
            counts.append(missing.shape[0])
            return encode(missing)

        return vectors(self, words, counted_encode, dtype)

    monkeypatch.setattr(TokenVectorCache, "vectors", counted)
    return counts


def test_the_cnn_encodes_only_the_words_the_cache_does_not_hold(model: ElmoModel, encoded: list[int]) -> None:
    """A batch of held and new words: the held ones are not encoded again, and get their vectors."""
    tokenizer, cache = ElmoTokenizer(), TokenVectorCache()
    first = tokenizer([["the", "cat", "naïve"]], is_split_into_words=True, return_tensors="pt")
    mixed = tokenizer([["the", "dog", "naïve", "", "x" * 60]], is_split_into_words=True, return_tensors="pt")
    with torch.inference_mode():
        model(**first, token_cache=cache)
        assert encoded == [5] and len(cache) == 5  # <S>, </S> and the three words
        with_cache = model(**mixed, token_cache=cache, output_hidden_states=True).hidden_states
        assert encoded == [5, 3] and len(cache) == 8  # "dog", "" and "x" * 60 only
        without = model(**mixed, output_hidden_states=True).hidden_states
    assert all(torch.equal(layer, other) for layer, other in zip(with_cache, without, strict=True))


def test_the_bound_holds_and_the_least_recently_used_go_first(model: ElmoModel, encoded: list[int]) -> None:
    tokenizer, cache = ElmoTokenizer(), TokenVectorCache(max_words=2)
    char_ids = tokenizer([["a", "b", "c", "d", "e"]], is_split_into_words=True, return_tensors="pt")["input_ids"][0]
    with torch.inference_mode():
        expected = model.char_encoder(char_ids)
        encoded.clear()
        # b goes out for c, as used before a (first in, first out would drop a); 3 new words keep the last 2.
        for rows, new in (([0, 1], 2), ([0], 0), ([2], 1), ([0], 0), ([1], 1), ([2, 3, 4], 3), ([3, 4], 0)):
            assert torch.equal(model.char_encoder(char_ids[rows], token_cache=cache), expected[rows])
            assert sum(encoded) == new and len(cache) <= 2 and cache._vectors.shape[0] <= 2, rows
            encoded.clear()
    assert len(cache) == 2


@pytest.mark.parametrize("mode", ["grad", "train"])
def test_training_and_autograd_do_not_use_the_cache(model: ElmoModel, mode: str) -> None:
    """Vectors that change as the weights train must not come from an earlier step's cache."""
    cache = TokenVectorCache()
    inputs = ElmoTokenizer()([["the", "cat"]], is_split_into_words=True, return_tensors="pt")
    model.train(mode == "train")
    try:
        with torch.set_grad_enabled(mode == "grad"):
            model(**inputs, token_cache=cache)
    finally:
        model.eval()
    assert len(cache) == 0


def test_the_cache_serves_no_grad_and_inference_mode_alike(model: ElmoModel) -> None:
    cache = TokenVectorCache()
    inputs = ElmoTokenizer()([["the", "cat"], ["a", "cat", "sat"]], is_split_into_words=True, padding=True)
    inputs = inputs.convert_to_tensors("pt")
    with torch.inference_mode():
        first = model(**inputs, token_cache=cache).last_hidden_state
    with torch.no_grad():
        again = model(**inputs, token_cache=cache).last_hidden_state
        assert torch.equal(model(**inputs, token_cache=TokenVectorCache()).last_hidden_state, first)
    assert torch.equal(again, first)


def test_an_empty_batch_with_a_cache(model: ElmoModel) -> None:
    cache = TokenVectorCache()
    with torch.inference_mode():
        output = model(**ElmoTokenizer()([], return_tensors="pt"), output_hidden_states=True, token_cache=cache)
    assert [layer.shape for layer in output.hidden_states] == [(0, 0, model.config.projection_dim * 2)] * 3
    assert len(cache) == 0


def test_a_cache_serves_one_dtype(model: ElmoModel) -> None:
    cache = TokenVectorCache()
    inputs = ElmoTokenizer()([["the"]], is_split_into_words=True, return_tensors="pt")
    with torch.inference_mode():
        model(**inputs, token_cache=cache)
        with pytest.raises(ValueError, match=r"holds torch\.float32 vectors on cpu, not torch\.float64"):
            model.double()(**inputs, token_cache=cache)
    model.float()


def test_a_cache_holds_at_least_one_word() -> None:
    with pytest.raises(ValueError, match="at least 1 word, got max_words=0"):
        TokenVectorCache(0)


def test_words_with_a_word_embedding_are_cached_by_word_id_too() -> None:
    """ELMoForManyLangs' models: the same characters with another word id are another word. (The CPU's products
    of 8 columns or fewer round a row by its place in the batch: a model's projection has more.)"""
    encoder, char_ids, word_ids = word_embedding_encoder(projection_dim=16)
    cache = TokenVectorCache()
    with torch.inference_mode():
        expected = encoder(char_ids, word_ids)
        assert torch.equal(encoder(char_ids[:1], word_ids[:1], cache), expected[:1]) and len(cache) == 1
        assert torch.equal(encoder(char_ids, word_ids, cache), expected) and len(cache) == 2
    assert not torch.equal(expected[0], expected[1])


@pytest.mark.parametrize("size", [17, 18, 33, 34, 37, 50, 59, 66, 117])
def test_a_words_vector_is_the_same_at_any_place_in_any_number_of_words(fixture_model: ElmoModel, size: int) -> None:
    """What a cache rests on: a word's token vector, bit for bit, among any other words. With the CNN's rows cut to
    the words' number (at least 16), a row in a tail of 1 or 2 past a multiple of 16 was rounded otherwise (these
    sizes, on AllenNLP's test biLM, whose projection has 16 columns: 4.8e-7), and two processes of elmo-embed,
    each with its cache, wrote other bits than one process."""
    words = [f"{AWKWARD_WORDS[index % len(AWKWARD_WORDS)]}{index}" for index in range(200)]
    char_ids = torch.tensor(ElmoTokenizer()([words], is_split_into_words=True)["input_ids"][0])
    with torch.no_grad():
        every = fixture_model.char_encoder(char_ids)
        for seed in range(8):
            chosen = torch.randperm(len(words), generator=torch.Generator().manual_seed(seed))[:size]
            assert torch.equal(fixture_model.char_encoder(char_ids[chosen]), every[chosen]), seed
