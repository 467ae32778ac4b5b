"""The layer mixes: each scheme's arithmetic by hand, layer norm as the original, the L2 term, and the
truncated biLM that `mix_layers` gives."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import modeling_elmo.modeling_elmo
from modeling_elmo import ElmoConfig, ElmoLayerMix, ElmoModel, ElmoTokenizer
from modeling_elmo.mixing_elmo import masked_layer_norm

D = 4  # 2 * projection_dim


def _config(**mixing) -> ElmoConfig:
    return ElmoConfig(
        char_embedding_dim=4,
        char_cnn_filters=[[1, 4], [2, 4]],
        projection_dim=D // 2,
        cell_size=8,
        mix_dropout=0.0,
        **mixing,
    )


@pytest.fixture
def layers() -> tuple[list[torch.Tensor], torch.Tensor]:
    generator = torch.Generator().manual_seed(0)
    mask = torch.tensor([[1, 1, 1], [1, 0, 0]], dtype=torch.bool)
    tensors = [torch.randn(2, 3, D, generator=generator) * (j + 1) + j for j in range(3)]
    return [tensor * mask[..., None] for tensor in tensors], mask


def _mix(layers: list[torch.Tensor], mask: torch.Tensor, **mixing) -> torch.Tensor:
    mix = ElmoLayerMix(_config(**mixing))
    mix.reset_parameters()
    return mix(layers, mask)


def test_scalar_mix_is_gamma_times_softmax_weighted_sum(layers) -> None:
    tensors, mask = layers
    mix = ElmoLayerMix(_config(mix_initial_weights=[0.5, -1.0, 2.0]))
    mix.reset_parameters()
    with torch.no_grad():
        mix.mix_gamma.fill_(1.5)
    weights = np.exp([0.5, -1.0, 2.0]) / np.exp([0.5, -1.0, 2.0]).sum()
    expected = 1.5 * sum(w * t.numpy() for w, t in zip(weights, tensors, strict=True))
    np.testing.assert_allclose(mix(tensors, mask).detach().numpy(), expected, rtol=1e-6, atol=1e-6)


def test_uniform_start_equals_the_average(layers) -> None:
    tensors, mask = layers
    expected = sum(t.numpy() for t in tensors) / 3
    np.testing.assert_allclose(_mix(tensors, mask).detach().numpy(), expected, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(_mix(tensors, mask, mix_mode="average").numpy(), expected, rtol=1e-6, atol=1e-6)


def test_single_layer_and_concat(layers) -> None:
    tensors, mask = layers
    np.testing.assert_array_equal(_mix(tensors[1:2], mask, mix_mode="layer", mix_layers=[1]), tensors[1])
    concat = _mix(tensors, mask, mix_mode="concat")
    assert concat.shape == (2, 3, 3 * D)
    np.testing.assert_array_equal(concat[..., D : 2 * D], tensors[1])


def test_per_token_weights_come_from_each_word(layers) -> None:
    tensors, mask = layers
    mix = ElmoLayerMix(_config(mix_mode="per_token"))
    mix.reset_parameters()
    np.testing.assert_allclose(  # a zero scorer starts uniform
        mix(tensors, mask).detach().numpy(), sum(t.numpy() for t in tensors) / 3, rtol=1e-6, atol=1e-6
    )
    with torch.no_grad():
        mix.mix_scorer.weight.copy_(torch.tensor([[1.0, -0.5, 0.25, 2.0]]))
        mix.mix_scorer.bias.fill_(0.3)
    stacked = np.stack([t.numpy() for t in tensors], axis=-2)  # (2, 3, layers, D)
    scores = stacked @ np.array([1.0, -0.5, 0.25, 2.0]) + 0.3
    weights = np.exp(scores) / np.exp(scores).sum(axis=-1, keepdims=True)
    expected = (weights[..., None] * stacked).sum(axis=-2) * mask.numpy()[..., None]
    np.testing.assert_allclose(mix(tensors, mask).detach().numpy(), expected, rtol=1e-5, atol=1e-6)


def test_layer_norm_uses_one_mean_and_variance_over_the_batch(layers) -> None:
    tensors, mask = layers
    tensor = tensors[2]
    values = tensor.numpy()[mask.numpy()]  # the unmasked words only, all features
    expected = (tensor.numpy() - values.mean()) / np.sqrt(values.var() + 1e-12)
    np.testing.assert_allclose(masked_layer_norm(tensor, mask).numpy(), expected, rtol=1e-5, atol=1e-5)
    padded = tensor.clone()
    padded[1, 1:] = 1000.0  # what sits at padding must not move the statistics
    np.testing.assert_allclose(masked_layer_norm(padded, mask)[mask], masked_layer_norm(tensor, mask)[mask])
    normalised = _mix(tensors, mask, mix_layer_norm=True)
    expected_mix = sum(masked_layer_norm(t, mask) for t in tensors) / 3 * mask[..., None]
    np.testing.assert_allclose(normalised.detach().numpy(), expected_mix.numpy(), rtol=1e-5, atol=1e-6)


def test_l2_penalty(layers) -> None:
    mix = ElmoLayerMix(_config(mix_l2_coefficient=0.1, mix_initial_weights=[1.0, -2.0, 0.5]))
    mix.reset_parameters()
    assert float(mix.penalty().detach()) == pytest.approx(0.1 * (1 + 4 + 0.25))
    assert ElmoLayerMix(_config(mix_mode="average", mix_l2_coefficient=0.1)).penalty() == 0.0


def test_frozen_mix_weights_do_not_train() -> None:
    mix = ElmoLayerMix(_config(mix_trainable=False))
    assert not any(parameter.requires_grad for parameter in mix.parameters())


def test_bad_mixing_options_are_refused() -> None:
    with pytest.raises(ValueError, match="mix_mode must be one of"):
        _config(mix_mode="max")
    with pytest.raises(ValueError, match=r"distinct layers in 0\.\.2"):
        _config(mix_layers=[0, 3])
    with pytest.raises(ValueError, match="exactly one layer"):
        _config(mix_mode="layer", mix_layers=[0, 1])
    with pytest.raises(ValueError, match="3 values for 2 mixed layers"):
        _config(mix_layers=[0, 1], mix_initial_weights=[0, 0, 0])


def test_running_only_the_lower_layers_skips_the_top_layer_exactly(monkeypatch) -> None:
    """`num_layers` (what the heads pass: `config.mix_depth`) runs no layer above it; the config's mixing fields
    alone leave `ElmoModel` whole."""
    torch.manual_seed(0)
    full = ElmoModel(_config()).eval()
    mixing_two = ElmoModel(_config(mix_layers=[0, 1])).eval()
    mixing_two.load_state_dict(full.state_dict())
    calls, run_layer, top = [], modeling_elmo.modeling_elmo.lstm_layer_forward, full.forward_lstm.layers[1]

    def counting(layer, *args, **options):
        calls.extend([layer] if layer is top else [])
        return run_layer(layer, *args, **options)

    monkeypatch.setattr(modeling_elmo.modeling_elmo, "lstm_layer_forward", counting)
    inputs = ElmoTokenizer()(
        [["a", "b"], ["c", "d", "e"], []], is_split_into_words=True, padding=True, return_tensors="pt"
    )
    with torch.no_grad():
        expected = full(**inputs, output_hidden_states=True).hidden_states
        assert len(calls) == 1
        output = full(**inputs, output_hidden_states=True, num_layers=mixing_two.config.mix_depth)
        assert len(calls) == 1, "the top layer must not run"
        whole = mixing_two(**inputs, output_hidden_states=True)
    assert len(output.hidden_states) == 2
    for actual, reference in zip(output.hidden_states, expected[:2], strict=True):
        assert torch.equal(actual, reference)
    assert output.last_hidden_state is output.hidden_states[-1]
    assert len(whole.hidden_states) == 3, "mix_layers is the heads' field: ElmoModel computes every layer"
    for actual, reference in zip(whole.hidden_states, expected, strict=True):
        assert torch.equal(actual, reference)
    with torch.no_grad():
        assert len(full(**inputs, output_hidden_states=True, num_layers=0).hidden_states) == 1
        for wrong in (-1, 3):
            with pytest.raises(ValueError, match=r"num_layers must lie in 0\.\.2, got " + str(wrong)):
                full(**inputs, num_layers=wrong)
