"""Lexical substitutes from the biLM (`ElmoForBidirectionalLM.substitutes`, `pipeline("elmo-substitutes")`): the
scores are the combination of the two LMs' softmaxes, computed here independently through the training graph's
windows; on held-out text the bundled model's substitutes find the original word more often than the unigram
baseline; the bundled model loads as a language model with its softmax; a folder without the softmax (a biLM, a task
head) or without `vocab.txt` is refused in one line, in the pipeline and as remote code."""

from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np
import pytest
import torch
from lm_substitutes import original_word_ranks, unigram_ranks
from safetensors.torch import load_file
from transformers import pipeline
from without_the_package import run_without_the_package

from modeling_elmo import (
    DEFAULT_MODEL,
    ElmoConfig,
    ElmoForBidirectionalLM,
    ElmoForTokenClassification,
    ElmoModel,
    ElmoTokenizer,
)
from modeling_elmo.substitutes_elmo import SUBSTITUTE_COMBINATIONS, non_finite_score_problem

VOCAB = 40
SPECIAL = (0, 1, 2)
HELDOUT = Path(__file__).with_name("data") / "heldout_sample.txt"
# Awkward on purpose: non-ASCII, a word over 48 bytes, an empty-string word, a one-word sentence, mixed lengths.
SENTENCES = [
    ["The", "naïve", "café", "owner", "said", "«", "bonjour", "»", "."],
    ["Größe", "日本語", "x" * 60, ""],
    ["Alone"],
    ["a", "b", "a", "b", "c"],
]


def _small_config() -> ElmoConfig:
    return ElmoConfig(
        cell_size=24, projection_dim=8, char_cnn_filters=[[1, 4], [2, 4]], num_highway_layers=1, vocab_size=VOCAB
    )


def _language_model() -> ElmoForBidirectionalLM:
    torch.manual_seed(0)
    model = ElmoForBidirectionalLM(_small_config()).eval()
    with torch.no_grad():
        model.softmax.weight.mul_(6.0)  # peaked distributions: a clear order among the top words
    return model


def _window_log_probabilities(
    model: ElmoForBidirectionalLM, words: list[str], state: tuple[torch.Tensor, torch.Tensor] | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """(words, vocab) log p_f and log p_b of every vocabulary word at every position of one sentence, through the
    training graph: the windows `<S> w1 .. wn` and `</S> wn .. w1`, one copy per vocabulary word labelled with it
    at every step (the loss of label c at step j is -log p(c) there), all starting from the one-row `state`."""
    tokenizer = ElmoTokenizer()
    windows = tokenizer([["<S>", *words], ["</S>", *reversed(words)]], is_split_into_words=True, return_tensors="pt")
    forward_window, backward_window = windows["input_ids"][:1], windows["input_ids"][1:]
    steps = len(words) + 1
    labels = torch.arange(VOCAB)[:, None].expand(VOCAB, steps)
    with torch.no_grad():
        output = model(
            input_ids=forward_window.expand(VOCAB, -1, -1),
            backward_input_ids=backward_window.expand(VOCAB, -1, -1),
            labels=labels,
            backward_labels=labels,
            state=None if state is None else tuple(part.expand(-1, -1, VOCAB, -1) for part in state),
        )
    forward = -output.forward_token_losses.reshape(VOCAB, steps).T.double()  # step j predicts word j
    backward = -output.backward_token_losses.reshape(VOCAB, steps).T.double()  # step j predicts word n - 1 - j
    return forward[: len(words)], backward[: len(words)].flip(0)


def _expected_probabilities(forward: torch.Tensor, backward: torch.Tensor, combination: str) -> torch.Tensor:
    """The combination, written out from the two softmaxes' probabilities in float64."""
    p_forward, p_backward = forward.exp(), backward.exp()
    ranks = torch.arange(VOCAB, dtype=torch.float64)
    zipf = torch.log((ranks + 2) / (ranks + 1)) / math.log(VOCAB + 1)
    unnormalised = {
        "product_over_prior": p_forward * p_backward / zipf,
        "product": p_forward * p_backward,
        "mean": (p_forward + p_backward) / 2,
        "forward": p_forward,
        "backward": p_backward,
    }[combination]
    unnormalised[:, list(SPECIAL)] = 0.0
    return unnormalised / unnormalised.sum(dim=-1, keepdim=True)


@pytest.mark.parametrize("combination", SUBSTITUTE_COMBINATIONS)
def test_scores_equal_the_combination_of_the_two_softmaxes(combination):
    model = _language_model()
    inputs = ElmoTokenizer()(SENTENCES, is_split_into_words=True, padding=True, return_tensors="pt")
    with torch.no_grad():
        output = model.substitutes(**inputs, top_k=5, combination=combination)
    for row, words in enumerate(SENTENCES):
        expected = _expected_probabilities(*_window_log_probabilities(model, words), combination)
        actual = output.log_probabilities[row, : len(words)].double().exp()
        assert torch.allclose(actual, expected, rtol=0, atol=2e-6), (combination, row)
        top = expected.topk(5, dim=-1)
        assert torch.equal(output.word_ids[row, : len(words)], top.indices)
        assert torch.allclose(output.scores[row, : len(words)].double(), top.values, rtol=0, atol=2e-6)
        assert not set(output.word_ids[row, : len(words)].flatten().tolist()) & set(SPECIAL)
    padding = inputs["attention_mask"] == 0
    assert not output.scores[padding].any() and not output.word_ids[padding].any()


def test_scores_start_from_the_given_state():
    model = _language_model()
    inputs = ElmoTokenizer()(SENTENCES, is_split_into_words=True, padding=True, return_tensors="pt")
    config, generator = model.config, torch.Generator().manual_seed(1)
    h = torch.randn(2, config.num_hidden_layers, len(SENTENCES), config.projection_dim, generator=generator)
    c = torch.randn(2, config.num_hidden_layers, len(SENTENCES), config.cell_size, generator=generator)
    with torch.no_grad():
        output = model.substitutes(**inputs, top_k=5, state=(h, c))
        from_zero = model.substitutes(**inputs, top_k=5)
    for row, words in enumerate(SENTENCES):
        state = (h[:, :, row : row + 1], c[:, :, row : row + 1])
        expected = _expected_probabilities(*_window_log_probabilities(model, words, state), "product")
        actual = output.log_probabilities[row, : len(words)].double().exp()
        assert torch.allclose(actual, expected, rtol=0, atol=2e-6), row
    assert not torch.allclose(output.log_probabilities, from_zero.log_probabilities, atol=1e-3)


def test_a_top_k_beyond_the_proposable_words_is_refused():
    model = _language_model()
    inputs = ElmoTokenizer()([["a", "b"]], is_split_into_words=True, return_tensors="pt")
    with pytest.raises(ValueError, match=r"top_k must lie in 1\.\.37"):
        model.substitutes(**inputs, top_k=VOCAB)
    with pytest.raises(ValueError, match="combination must be one of"):
        model.substitutes(**inputs, combination="sum")


@pytest.mark.parametrize("top_k", [True, 2.0, "2"])
def test_a_top_k_that_is_not_an_int_is_refused(top_k: object) -> None:
    """`top_k=True` reached torch as 1 (a bool is an int); 2.0 and "2" got torch's or Python's words."""
    model = _language_model()
    inputs = ElmoTokenizer()([["a", "b"]], is_split_into_words=True, return_tensors="pt")
    with pytest.raises(TypeError, match=rf"^top_k must be an int \(how many substitutes\), got {top_k!r}$"):
        model.substitutes(**inputs, top_k=top_k)


def test_the_bundled_model_loads_as_a_language_model_with_its_softmax():
    model, info = ElmoForBidirectionalLM.from_pretrained(DEFAULT_MODEL, output_loading_info=True)
    assert not any(info.values()), info  # no missing, unexpected or mismatched weights
    saved = load_file(Path(DEFAULT_MODEL) / "model.safetensors")
    assert torch.equal(model.softmax.weight, saved["softmax.weight"])
    assert torch.equal(model.softmax.bias, saved["softmax.bias"])
    vocabulary = (Path(DEFAULT_MODEL) / "vocab.txt").read_text(encoding="utf-8").splitlines()
    assert len(vocabulary) == model.config.vocab_size and vocabulary[:3] == ["<S>", "</S>", "<UNK>"]


@pytest.mark.slow
def test_substitutes_find_the_original_word_more_often_than_the_unigram_baseline_on_heldout_text():
    """The held-out sample is text of documents the bundled model never trained on (tests/model/data/README.md)."""
    model = ElmoForBidirectionalLM.from_pretrained(DEFAULT_MODEL).eval()
    tokenizer = ElmoTokenizer.from_pretrained(DEFAULT_MODEL)
    vocabulary = (Path(DEFAULT_MODEL) / "vocab.txt").read_text(encoding="utf-8").splitlines()
    word_ids = {word: index for index, word in enumerate(vocabulary) if index not in SPECIAL}
    sentences = [line.split() for line in HELDOUT.read_text(encoding="utf-8").splitlines() if line.split()]
    substitutes = original_word_ranks(model, tokenizer, sentences, word_ids, batch_size=32)["product"]
    baseline = unigram_ranks(sentences, word_ids)
    assert len(substitutes) == len(baseline) > 1000
    found, found_by_baseline = float((substitutes <= 10).double().mean()), float((baseline <= 10).double().mean())
    print(f"original word in the top 10: substitutes {found:.1%}, unigram baseline {found_by_baseline:.1%}")
    assert found > found_by_baseline + 0.02


def test_pipeline_gives_the_models_substitutes_as_fill_mask_does():
    substitutes = pipeline("elmo-substitutes", model=DEFAULT_MODEL)
    text = "The king sat upon his throne ."
    results = substitutes(text, position=1, top_k=4)
    assert [sorted(result) for result in results] == [["score", "sequence", "token", "token_str"]] * 4
    model = ElmoForBidirectionalLM.from_pretrained(DEFAULT_MODEL).eval()
    inputs = ElmoTokenizer.from_pretrained(DEFAULT_MODEL)(text, return_tensors="pt")
    with torch.no_grad():
        expected = model.substitutes(**inputs, top_k=4)
    vocabulary = (Path(DEFAULT_MODEL) / "vocab.txt").read_text(encoding="utf-8").splitlines()
    assert [result["token"] for result in results] == expected.word_ids[0, 1].tolist()
    assert [result["token_str"] for result in results] == [vocabulary[i] for i in expected.word_ids[0, 1].tolist()]
    assert [result["score"] for result in results] == pytest.approx(expected.scores[0, 1].tolist(), abs=1e-7)
    assert results[0]["sequence"] == f"The {results[0]['token_str']} sat upon his throne ."

    # A list of words goes in a list (a plain list is a batch of texts); without a position, every word's list.
    [every_word] = substitutes([["The", "king", "sat", "."]], top_k=2, combination="forward")
    assert len(every_word) == 4 and all(len(position) == 2 for position in every_word)
    assert every_word[1][0]["sequence"] == f"The {every_word[1][0]['token_str']} sat ."


def _words() -> list[str]:
    """A vocabulary for the small models' softmax rows, bilm-tf's special words first."""
    return ["<S>", "</S>", "<UNK>", *(f"w{index}" for index in range(VOCAB - 3))]


def _pipeline_of(model: ElmoForBidirectionalLM):
    return pipeline("elmo-substitutes", model=model, tokenizer=ElmoTokenizer(), vocabulary=_words())


def test_pipeline_proposes_ten_words_by_default():
    """The documented default `top_k` (docs/substitutes.md, the pipeline's docstring), in and without `position`."""
    substitutes = _pipeline_of(_language_model())
    assert len(substitutes("a b c", position=1)) == 10
    assert [len(words) for words in substitutes("a b c")] == [10, 10, 10]


@pytest.mark.parametrize("combination", SUBSTITUTE_COMBINATIONS)
def test_pipeline_combines_the_two_lms_as_asked(combination):
    model = _language_model()
    substitutes = _pipeline_of(model)
    results = substitutes([SENTENCES[0]], position=3, top_k=5, combination=combination)[0]
    inputs = ElmoTokenizer()([SENTENCES[0]], is_split_into_words=True, return_tensors="pt")
    with torch.no_grad():
        expected = model.substitutes(**inputs, top_k=5, combination=combination)
    assert [result["token"] for result in results] == expected.word_ids[0, 3].tolist()
    assert [result["score"] for result in results] == pytest.approx(expected.scores[0, 3].tolist(), abs=1e-7)


def test_pipeline_on_no_words_gives_no_substitutes():
    """An empty batch, an empty text and an empty list of words have no position to fill: empty results, as the
    token-classification pipeline gives; asking for a position there is refused in one line."""
    substitutes = _pipeline_of(_language_model())
    assert substitutes([]) == []
    assert substitutes("") == []
    assert substitutes([[]]) == [[]]
    with pytest.raises(ValueError, match=r"^position must be a word's index, none: the sentence has no words; got 0$"):
        substitutes("", position=0)
    with pytest.raises(ValueError, match=r"^position must be a word's index, 0\.\.1 \(the sentence's words\); got 2$"):
        substitutes("a b", position=2)


@pytest.mark.parametrize(("position", "shown"), [(True, "True (bool)"), ([1], "[1] (list)"), (1.0, "1.0 (float)")])
def test_a_position_that_is_not_an_int_is_refused_in_one_line(position, shown: str):
    """`position=True` indexed the scores as a mask and failed with "list indices must be integers or slices, not
    list"; a list or a float failed as obscurely. A numpy integer is an index."""
    substitutes = _pipeline_of(_language_model())
    expected = (
        f"^position must be a word's index \\(an int: 0 for the first word\\), got {re.escape(shown)}; leave it out "
        "for every word's substitutes$"
    )
    with pytest.raises(ValueError, match=expected):
        substitutes("a b", position=position)
    assert substitutes("a b", position=np.int64(1), top_k=3) == substitutes("a b", position=1, top_k=3)


def _folder_without_the_softmax(kind: str, folder: Path) -> Path:
    """A biLM folder or a task-head folder, saved with `vocab.txt` beside it (or not: `head without vocab.txt`)."""
    torch.manual_seed(0)
    model = ElmoModel(_small_config()) if kind == "biLM" else ElmoForTokenClassification(_small_config())
    model.save_pretrained(folder)
    ElmoTokenizer().save_pretrained(folder)
    if kind != "head without vocab.txt":
        (folder / "vocab.txt").write_text("\n".join(_words()) + "\n", encoding="utf-8")
    return folder


def _no_softmax_refusal(folder: Path, saved_as: str) -> str:
    return (
        f"{folder} holds no language-model softmax (softmax.weight, softmax.bias; it was saved as {saved_as}), so "
        "this model's softmax is random and its substitutes would be noise: use a language-model folder "
        "(ElmoForBidirectionalLM): modeling_elmo.DEFAULT_MODEL, one written by `elmo-convert bilm-tf-checkpoint` or "
        "by training/pretrain.py"
    )


@pytest.mark.parametrize(
    ("kind", "saved_as"),
    [
        ("biLM", "ElmoModel"),
        ("head", "ElmoForTokenClassification"),
        ("head without vocab.txt", "ElmoForTokenClassification"),
    ],
)
def test_a_folder_without_the_softmax_is_refused_in_one_line(kind: str, saved_as: str, tmp_path: Path):
    """Such a folder loads as a language model (to train one) with a random softmax, whose words would look like
    substitutes: the pipeline and `substitutes` refuse it, before any word of `vocab.txt` is read."""
    folder = _folder_without_the_softmax(kind, tmp_path / "model")
    with pytest.raises(ValueError) as refusal:
        pipeline("elmo-substitutes", model=str(folder))
    assert str(refusal.value) == _no_softmax_refusal(folder, saved_as)
    model, info = ElmoForBidirectionalLM.from_pretrained(folder, output_loading_info=True)
    assert {"softmax.weight", "softmax.bias"} <= set(info["missing_keys"]) and model.softmax_is_random
    inputs = ElmoTokenizer()([["a", "b"]], is_split_into_words=True, return_tensors="pt")
    with pytest.raises(ValueError, match="holds no language-model softmax"):
        model.substitutes(**inputs)
    model.train()  # what training starts with: the softmax it trains is no longer the random one
    assert not model.softmax_is_random
    assert model.eval().substitutes(**inputs, top_k=3).word_ids.shape == (1, 2, 3)


def test_a_language_model_without_its_vocabulary_is_refused_in_one_line(tmp_path: Path):
    folder = tmp_path / "model"
    _language_model().save_pretrained(folder)
    ElmoTokenizer().save_pretrained(folder)
    with pytest.raises(FileNotFoundError) as refusal:
        pipeline("elmo-substitutes", model=str(folder))
    assert str(refusal.value) == (
        f"{folder} holds no vocab.txt, the words of the softmax's rows (one per line): use a language-model folder "
        "that has it, or pass vocabulary= (one word per softmax row)"
    )
    assert len(pipeline("elmo-substitutes", model=str(folder), vocabulary=_words())("a b", position=0)) == 10


_REMOTE_SUBSTITUTES = """
import sys

from transformers import AutoModelForPreTraining, AutoTokenizer

folder = sys.argv[1]
model = AutoModelForPreTraining.from_pretrained(folder, trust_remote_code=True).eval()
inputs = AutoTokenizer.from_pretrained(folder, trust_remote_code=True)([["a", "b"]], is_split_into_words=True,
                                                                        return_tensors="pt")
try:
    model.substitutes(**inputs)
except ValueError as error:
    print(type(model).__module__, error)
"""


@pytest.mark.slow
def test_remote_code_refuses_substitutes_from_a_folder_without_the_softmax(tmp_path: Path):
    """Where this package is not installed, the folder's own code tells that its softmax is random."""
    folder = _folder_without_the_softmax("biLM", tmp_path / "model")
    completed = run_without_the_package(_REMOTE_SUBSTITUTES, str(folder), work=tmp_path)
    assert completed.returncode == 0, completed.stderr[-3000:]
    module, _, message = completed.stdout.strip().partition(" ")
    assert module.startswith("transformers_modules.") and message == _no_softmax_refusal(folder, "ElmoModel")


def _language_model_folder_with_a_nan(folder: Path) -> Path:
    """A language-model folder (with `vocab.txt`) whose softmax holds one NaN: it loads with a warning."""
    model = _language_model()
    with torch.no_grad():
        model.softmax.weight[5, 3] = float("nan")
    model.save_pretrained(folder)
    ElmoTokenizer().save_pretrained(folder)
    (folder / "vocab.txt").write_text("\n".join(_words()) + "\n", encoding="utf-8")
    return folder


def test_non_finite_scores_are_refused_in_one_line(tmp_path: Path):
    """A NaN weight made every score NaN, which the pipeline answered with (the load only warns): `substitutes` and
    the pipeline refuse it, naming the word and the damaged weight."""
    folder = _language_model_folder_with_a_nan(tmp_path / "model")
    expected = (
        r"^the substitutes of word 0 of sentence 0 have a non-finite log-probability \(nan\): the weight "
        r"softmax\.weight holds a non-finite value \(nan\) at index \[5, 3\]: the weights are damaged; download or "
        r"convert the model again$"
    )
    with pytest.raises(ValueError, match=expected):
        pipeline("elmo-substitutes", model=str(folder))("a b", position=1)
    model = ElmoForBidirectionalLM.from_pretrained(folder).eval()
    inputs = ElmoTokenizer()([["a", "b"], []], is_split_into_words=True, return_tensors="pt", padding=True)
    with pytest.raises(ValueError, match=expected):
        model.substitutes(**inputs)


def test_non_finite_scores_of_finite_weights_are_called_an_overflow():
    """Without a damaged weight the cause is the activations' range (padding's scores are not looked at)."""
    log_scores = torch.zeros(1, 3, 2)
    log_scores[0, 2, 1] = float("inf")  # padding
    log_scores[0, 1, 0] = float("-inf")
    word_mask = torch.tensor([[True, True, False]])
    assert non_finite_score_problem(log_scores, word_mask, None) == (
        "the substitutes of word 1 of sentence 0 have a non-finite log-probability (-inf): the model's activations "
        "overflow float32's range; check the model's weights"
    )
    assert non_finite_score_problem(log_scores.bfloat16(), word_mask, None).endswith(
        "the model's activations went beyond torch.bfloat16's range; compute in float32"
    )
    assert non_finite_score_problem(log_scores[:, :1], word_mask[:, :1], None) is None
