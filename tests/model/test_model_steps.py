"""ElmoModel's public steps (`embed`, `contextualize`) and the word mask it returns: the LM and the task heads
compose the same steps instead of re-running their parts."""

from __future__ import annotations

import pytest
import torch

from modeling_elmo import (
    ElmoConfig,
    ElmoForBidirectionalLM,
    ElmoForSequenceClassification,
    ElmoModel,
    ElmoTokenizer,
)

# An empty sentence, an empty-string word, a word over the 48 bytes kept, a multi-byte character, a marker word.
AWKWARD = [["a", "bb"], [], ["", "x" * 60, "é"], ["<S>"]]
AWKWARD_MASK = [[True, True, False], [False, False, False], [True, True, True], [True, False, False]]


def _config(**kwargs) -> ElmoConfig:
    return ElmoConfig(
        char_embedding_dim=4,
        char_cnn_filters=[[1, 4], [2, 8]],
        num_highway_layers=1,
        projection_dim=8,
        cell_size=16,
        vocab_size=20,
        **kwargs,
    )


@pytest.fixture(scope="module")
def inputs() -> dict[str, torch.Tensor]:
    return ElmoTokenizer()(AWKWARD, is_split_into_words=True, padding=True, return_tensors="pt")


def test_word_mask_marks_each_sentences_words(inputs: dict[str, torch.Tensor]) -> None:
    torch.manual_seed(0)
    model = ElmoModel(_config()).eval()
    with torch.no_grad():
        output = model(**inputs, output_hidden_states=True)
        from_ids = model(input_ids=inputs["input_ids"]).word_mask
    assert output.word_mask.dtype == torch.bool
    assert output.word_mask.tolist() == AWKWARD_MASK
    assert from_ids.tolist() == AWKWARD_MASK, "without attention_mask a word is a row with a non-zero id"
    for layer in output.hidden_states:
        assert not layer[~output.word_mask].any(), "outputs are zero where the mask is False"
        assert layer[output.word_mask].abs().sum(dim=-1).all()


def test_word_mask_follows_the_attention_mask(inputs: dict[str, torch.Tensor]) -> None:
    model = ElmoModel(_config()).eval()
    shorter = inputs["attention_mask"].clone()
    shorter[2, 1:] = 0  # the third sentence cut to its first word, its other rows still holding ids
    with torch.no_grad():
        output = model(input_ids=inputs["input_ids"], attention_mask=shorter)
    assert output.word_mask.tolist() == [*AWKWARD_MASK[:2], [True, False, False], AWKWARD_MASK[3]]
    assert torch.equal(output.word_mask, shorter.bool())


def test_task_heads_take_the_mask_from_the_model(inputs: dict[str, torch.Tensor], monkeypatch) -> None:
    torch.manual_seed(0)
    head = ElmoForSequenceClassification(_config(num_labels=3)).eval()
    forward = ElmoModel.forward

    def forward_without_the_first_sentences_words(self, *args, **kwargs):
        output = forward(self, *args, **kwargs)
        output.word_mask = output.word_mask.clone()
        output.word_mask[0] = False
        return output

    monkeypatch.setattr(ElmoModel, "forward", forward_without_the_first_sentences_words)
    with torch.no_grad():
        logits = head(**inputs).logits
    pooled_nothing = head.classifier(torch.zeros(head.features_size))
    assert torch.equal(logits[0], pooled_nothing), "the head pools the words of the biLM's mask, not a mask of its own"
    assert torch.equal(logits[1], pooled_nothing), "the empty sentence pools zero"


def test_the_language_model_runs_the_biLMs_steps(monkeypatch) -> None:
    """The LM's windows `<S> w... </S>` forwards and `</S> ...w <S>` backwards, continued from a state, end in the
    state ElmoModel reaches over the sentence from that state: the same LSTM step, state handling included."""
    torch.manual_seed(0)
    lm = ElmoForBidirectionalLM(_config()).eval()
    words = [["The", "cat", "sat"], ["on", "the", "mat"]]
    tokenizer = ElmoTokenizer()
    sentences = tokenizer(words, is_split_into_words=True, return_tensors="pt")
    forward_ids = torch.tensor([[tokenizer.word_char_ids(w) for w in ["<S>", *row, "</S>"]] for row in words])
    backward_ids = forward_ids.flip(1)
    state = (torch.randn(2, 2, 2, 8) * 0.1, torch.randn(2, 2, 2, 16) * 0.1)
    calls = []
    contextualize = ElmoModel.contextualize

    def recording_contextualize(self, *args, **kwargs):
        calls.append(type(self))
        return contextualize(self, *args, **kwargs)

    monkeypatch.setattr(ElmoModel, "contextualize", recording_contextualize)
    with torch.no_grad():
        lm_state = lm(forward_ids, backward_ids, state=state).state
        model_state = lm.elmo(**sentences, state=state).state
    assert len(calls) == 2, "both forwards run ElmoModel.contextualize"
    for lm_part, model_part in zip(lm_state, model_state, strict=True):
        torch.testing.assert_close(lm_part, model_part, rtol=0, atol=1e-6)
