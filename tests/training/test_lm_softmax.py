"""The language-model softmax against bilm-tf's definitions, and ElmoForBidirectionalLM's state carry."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from modeling_elmo import ElmoConfig, ElmoForBidirectionalLM
from modeling_elmo.softmax_elmo import (
    ElmoSoftmax,
    draw_log_uniform,
    log_uniform_expected_count,
    log_uniform_probability,
    sample_log_uniform_candidates,
)

VOCAB = 40


def _softmax(seed: int = 0) -> ElmoSoftmax:
    torch.manual_seed(seed)
    softmax = ElmoSoftmax(vocab_size=VOCAB, hidden_size=6)
    softmax.reset_parameters()
    with torch.no_grad():
        softmax.bias.normal_()
    return softmax


def test_log_uniform_probabilities_sum_to_one():
    probabilities = log_uniform_probability(torch.arange(VOCAB), VOCAB)
    assert probabilities.sum().item() == pytest.approx(1.0, abs=1e-12)
    assert probabilities[0].item() == pytest.approx(math.log(2) / math.log(VOCAB + 1))


def test_draws_follow_the_log_uniform_distribution():
    draws = draw_log_uniform(200_000, VOCAB, generator=torch.Generator().manual_seed(0))
    frequency = torch.bincount(draws, minlength=VOCAB).double() / len(draws)
    assert torch.allclose(frequency, log_uniform_probability(torch.arange(VOCAB), VOCAB), atol=3e-3)


def test_candidates_are_distinct_in_first_drawn_order():
    generator = torch.Generator().manual_seed(0)
    for _ in range(50):
        candidates, num_tries = sample_log_uniform_candidates(8, VOCAB, generator=generator)
        assert len(candidates) == 8 == len(set(candidates.tolist())) and num_tries >= 8
    with pytest.raises(ValueError, match=r"num_sampled must lie in 1\.\.39"):
        sample_log_uniform_candidates(VOCAB, VOCAB)


def test_expected_count_is_tensorflows_formula():
    """TensorFlow (range_sampler.cc, unique): 1 - (1 - P(k)) ** num_tries, computed as -expm1(n * log1p(-p))."""
    ids = torch.tensor([0, 1, 10, 39])
    p = np.log((ids.numpy() + 2.0) / (ids.numpy() + 1.0)) / np.log(VOCAB + 1.0)
    expected = 1.0 - (1.0 - p) ** 13
    assert np.allclose(log_uniform_expected_count(ids, VOCAB, 13, 8).numpy(), expected, rtol=1e-12)


def test_expected_count_without_repeats_is_tensorflows_num_sampled_times_p():
    ids = torch.arange(5)
    assert torch.allclose(log_uniform_expected_count(ids, VOCAB, 5, 5), 5 * log_uniform_probability(ids, VOCAB))


def _reference_sampled_losses(
    softmax: ElmoSoftmax,
    hidden: torch.Tensor,
    labels: torch.Tensor,
    candidates: torch.Tensor,
    num_tries: int,
    *,
    remove_accidental_hits: bool = True,
) -> np.ndarray:
    """bilm-tf's sampled loss per token in float64 NumPy: the true logit and the candidates' logits, each minus
    the log of its expected count, with the candidates equal to the token's own word removed (or kept, to see
    what the removal changes)."""
    w, b = softmax.weight.detach().double().numpy(), softmax.bias.detach().double().numpy()
    h = hidden.double().numpy()
    num_sampled = len(candidates)

    def log_expected_count(ids: np.ndarray) -> np.ndarray:
        p = np.log((ids + 2.0) / (ids + 1.0)) / np.log(VOCAB + 1.0)
        count = num_sampled * p if num_tries == num_sampled else -np.expm1(num_tries * np.log1p(-p))
        return np.log(count)

    losses = []
    for row, label in enumerate(labels.tolist()):
        true_logit = h[row] @ w[label] + b[label] - log_expected_count(np.array(label))
        kept = [c for c in candidates.tolist() if c != label or not remove_accidental_hits]
        negative = h[row] @ w[kept].T + b[kept] - log_expected_count(np.array(kept))
        logits = np.concatenate([[true_logit], negative])
        losses.append(np.log(np.exp(logits - logits.max()).sum()) + logits.max() - true_logit)
    return np.array(losses)


def test_sampled_loss_is_bilm_tfs_formula():
    softmax = _softmax()
    hidden, labels = torch.randn(12, 6), torch.randint(0, VOCAB, (12,))
    candidates, num_tries = sample_log_uniform_candidates(10, VOCAB, generator=torch.Generator().manual_seed(3))
    losses = softmax(hidden, labels, num_sampled=10, generator=torch.Generator().manual_seed(3))
    expected = _reference_sampled_losses(softmax, hidden, labels, candidates, num_tries)
    np.testing.assert_allclose(losses.detach().double().numpy(), expected, rtol=0, atol=1e-5)


def test_accidental_hits_do_not_count_as_negatives():
    """Rows whose word is the second and the last candidate, and one whose word is no candidate. The hidden
    vectors point at each row's word, so that keeping the hit as a negative would add about log 2 to its loss."""
    softmax = _softmax()
    candidates, num_tries = sample_log_uniform_candidates(10, VOCAB, generator=torch.Generator().manual_seed(1))
    missing = next(word for word in range(VOCAB) if word not in candidates.tolist())
    labels = torch.tensor([candidates[1].item(), candidates[9].item(), missing])
    hidden = 10.0 * softmax.weight.detach()[labels]
    losses = softmax(hidden, labels, num_sampled=10, generator=torch.Generator().manual_seed(1))

    expected = _reference_sampled_losses(softmax, hidden, labels, candidates, num_tries)
    with_hits = _reference_sampled_losses(softmax, hidden, labels, candidates, num_tries, remove_accidental_hits=False)
    assert (with_hits[:2] - expected[:2] > 0.6).all() and with_hits[2] == expected[2]  # the check below can fail
    np.testing.assert_allclose(losses.detach().double().numpy(), expected, rtol=0, atol=1e-5)


def test_full_softmax_is_cross_entropy_and_ignores_minus_100():
    softmax = _softmax()
    hidden, labels = torch.randn(5, 6), torch.tensor([1, -100, 7, 39, -100])
    losses = softmax(hidden, labels)
    logits = hidden @ softmax.weight.T + softmax.bias
    expected = torch.nn.functional.cross_entropy(logits[[0, 2, 3]], labels[[0, 2, 3]], reduction="none")
    assert torch.allclose(losses, expected)


def _language_model(num_sampled: int | None) -> ElmoForBidirectionalLM:
    torch.manual_seed(0)
    config = ElmoConfig(
        cell_size=24,
        projection_dim=8,
        char_cnn_filters=[[1, 4], [2, 4]],
        num_highway_layers=1,
        vocab_size=VOCAB,
        training_options={"n_negative_samples_batch": num_sampled} if num_sampled else {},
    )
    return ElmoForBidirectionalLM(config)


def _windows(batch: int, unroll: int, seed: int = 0):
    generator = torch.Generator().manual_seed(seed)
    chars = torch.randint(1, 262, (2, batch, unroll, 50), generator=generator)
    labels = torch.randint(0, VOCAB, (2, batch, unroll), generator=generator)
    return chars, labels


def _softmax_inputs(model: ElmoForBidirectionalLM, inputs: dict[str, torch.Tensor]) -> list[torch.Tensor]:
    """The top-layer vectors `(tokens, P)` that `model` hands its softmax, forward direction first."""
    captured = []
    hook = model.softmax.register_forward_pre_hook(lambda module, args: captured.append(args[0].detach()))
    with torch.no_grad():
        model(**inputs)
    hook.remove()
    return captured


def test_eval_uses_the_full_softmax_and_training_the_sampled_one():
    sampled, full = _language_model(10), _language_model(None)
    full.load_state_dict(sampled.state_dict())
    chars, labels = _windows(3, 5)
    inputs = {"input_ids": chars[0], "backward_input_ids": chars[1], "labels": labels[0], "backward_labels": labels[1]}
    sampled.eval(), full.eval()
    full_loss = full(**inputs).loss
    assert torch.equal(sampled(**inputs).loss, full_loss)

    # Training without dropout feeds the softmax the vectors of eval; each direction draws its own candidates
    # from sampler_generator, forward first.
    hidden = _softmax_inputs(full, inputs)
    sampled.config.dropout = 0.0
    sampled.train()
    with torch.no_grad():
        loss = sampled(**inputs, sampler_generator=torch.Generator().manual_seed(5)).loss
    generator = torch.Generator().manual_seed(5)
    direction_losses = [
        _reference_sampled_losses(
            sampled.softmax, vectors, targets.flatten(), *sample_log_uniform_candidates(10, VOCAB, generator=generator)
        ).mean()
        for vectors, targets in zip(hidden, labels, strict=True)
    ]
    expected = 0.5 * sum(direction_losses)
    assert abs(expected - full_loss.item()) > 0.5  # so that the check below tells the two softmaxes apart
    assert loss.item() == pytest.approx(expected, abs=1e-5)


def test_state_carried_across_windows_equals_one_long_window():
    model = _language_model(None).eval()
    chars, labels = _windows(2, 6)
    whole = model(chars[0], chars[1], labels[0], labels[1])
    first = model(chars[0][:, :4], chars[1][:, :4], labels[0][:, :4], labels[1][:, :4])
    second = model(chars[0][:, 4:], chars[1][:, 4:], labels[0][:, 4:], labels[1][:, 4:], state=first.state)
    # Token losses come row-major: (row 0: steps 0-5), (row 1: ...); the halves interleave per row.
    split = [
        torch.cat([first.forward_token_losses.view(2, 4)[row], second.forward_token_losses.view(2, 2)[row]])
        for row in range(2)
    ]
    assert torch.allclose(torch.stack(split).flatten(), whole.forward_token_losses, atol=1e-6)
    assert torch.allclose(second.state[1], whole.state[1], atol=1e-6)


def test_the_biLM_of_a_language_model_is_the_elmo_model():
    """The backward stream is the sentence reversed: the LM's LSTMs are ElmoModel's, reading <S> w... </S>."""
    model = _language_model(None).eval()
    from modeling_elmo import ElmoTokenizer

    tokenizer = ElmoTokenizer()
    words = ["The", "cat", "sat"]
    batch = tokenizer([words], is_split_into_words=True, return_tensors="pt")
    hidden = model.elmo(**batch, output_hidden_states=True).hidden_states[-1][0]
    forward_ids = torch.tensor([[tokenizer.word_char_ids(w) for w in ["<S>", *words]]])
    backward_ids = torch.tensor([[tokenizer.word_char_ids(w) for w in ["</S>", *reversed(words)]]])
    captured = {}
    model.softmax.register_forward_pre_hook(
        lambda module, args, kwargs: captured.setdefault("h", []).append(args[0]), with_kwargs=True
    )
    labels = torch.zeros(1, 4, dtype=torch.long)
    model(forward_ids, backward_ids, labels, labels)
    forward_top, backward_top = captured["h"]
    # Forward output after reading w_i (position i) is word i's forward vector; backward reversed likewise.
    assert torch.allclose(forward_top[1:], hidden[:, :8], atol=1e-6)
    assert torch.allclose(backward_top[1:].flip(0), hidden[:, 8:], atol=1e-6)
