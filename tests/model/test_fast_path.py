"""The fast inference path (oneDNN products, each distinct word encoded once) computes the same numbers as the
plain float32 path and as float64, on ragged batches with state carried."""

from __future__ import annotations

import copy
import pickle

import pytest
import torch
from ragged_batches import BATCHES, run_batches
from tiny_models import word_embedding_encoder

from modeling_elmo import ElmoConfig, ElmoModel, ElmoTokenizer
from modeling_elmo.onednn_elmo import onednn_available

requires_onednn = pytest.mark.skipif(not onednn_available(), reason="this torch build has no working oneDNN linear")


SHAPES = {
    "clipped, 2 layers": {"projection_dim": 16, "cell_size": 64, "cell_clip": 0.5, "proj_clip": 0.5},
    "unclipped, 3 layers, no skip": {
        "projection_dim": 24,
        "cell_size": 40,
        "cell_clip": None,
        "proj_clip": None,
        "num_hidden_layers": 3,
        "use_skip_connections": False,
    },
}


@pytest.fixture(scope="module", params=list(SHAPES))
def model(request: pytest.FixtureRequest) -> ElmoModel:
    torch.manual_seed(0)
    config = ElmoConfig(
        char_embedding_dim=4, char_cnn_filters=[[1, 8], [2, 8], [3, 16]], num_highway_layers=2, **SHAPES[request.param]
    )
    return ElmoModel(config).eval()


def assert_all_close(actual: list[torch.Tensor], expected: list[torch.Tensor], atol: float) -> None:
    for index, (a, e) in enumerate(zip(actual, expected, strict=True)):
        torch.testing.assert_close(a.double(), e.double(), rtol=0, atol=atol, msg=lambda m, i=index: f"#{i}: {m}")


def _without_onednn(model: ElmoModel) -> ElmoModel:
    """A copy of `model` (same weights) whose layer-by-layer products run on torch, not oneDNN."""
    copy = ElmoModel(model.config).eval()
    copy.load_state_dict(model.state_dict())
    copy.set_lstm_implementation(onednn=False)
    return copy


def float64_copy(model: ElmoModel) -> ElmoModel:
    copy = ElmoModel(model.config).eval()
    copy.load_state_dict(model.state_dict())
    return copy.double()


@requires_onednn
def test_onednn_path_equals_the_plain_path_and_float64(model: ElmoModel) -> None:
    fast = run_batches(model)
    assert set(model.forward_lstm.layers[0].onednn_weights._packed) == {"state", "output"}, "oneDNN did not run"
    exact = run_batches(float64_copy(model))
    plain_model = _without_onednn(model)
    plain = run_batches(plain_model)
    assert not plain_model.forward_lstm.layers[0].onednn_weights._packed, "oneDNN ran with onednn=False"
    assert_all_close(fast, exact, atol=1e-5)
    assert_all_close(plain, exact, atol=1e-5)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_low_precision_onednn_path_stays_close(model: ElmoModel, dtype: torch.dtype) -> None:
    """Where the CPU has bfloat16 / float16 arithmetic (AVX512-BF16, AMX, ...), oneDNN runs those too."""
    if not onednn_available(dtype):
        pytest.skip(f"this CPU or torch build has no oneDNN {dtype} linear")
    low = float64_copy(model).to(dtype).eval()
    fast = run_batches(low)
    assert low.forward_lstm.layers[0].onednn_weights._packed, "oneDNN did not run"
    for a, e in zip(fast, run_batches(model), strict=True):
        if a.numel():
            cosine = torch.nn.functional.cosine_similarity(a.float().flatten(), e.flatten(), dim=0)
            assert cosine > 0.99, (dtype, cosine)


@requires_onednn
def test_packed_weights_follow_weight_changes(model: ElmoModel) -> None:
    """A weight modified in place (an optimizer step, load_state_dict) or replaced is packed again, never
    served stale."""
    changed = float64_copy(model).float().eval()
    run_batches(changed)  # packs the weights
    with torch.no_grad():
        for layer in changed.backward_lstm.layers:
            layer.state_projection.weight.mul_(-1.5)
            layer.output_projection.weight.add_(0.01)
        for layer in changed.forward_lstm.layers:  # another tensor in its place
            layer.state_projection.weight = torch.nn.Parameter(layer.state_projection.weight.flip(0))
    fast = run_batches(changed)
    changed.set_lstm_implementation(onednn=False)
    assert_all_close(fast, run_batches(changed), atol=1e-5)


@requires_onednn
def test_a_model_with_packed_weights_copies_and_pickles(model: ElmoModel) -> None:
    expected = run_batches(model)  # packs the weights
    for copied in (copy.deepcopy(model), pickle.loads(pickle.dumps(model))):
        assert not copied.forward_lstm.layers[0].onednn_weights._packed
        assert_all_close(run_batches(copied), expected, atol=0)


def test_gradients_take_the_plain_path(model: ElmoModel) -> None:
    trained = float64_copy(model).float().train()
    inputs = ElmoTokenizer()(BATCHES[0], is_split_into_words=True, padding=True, return_tensors="pt")
    trained(**inputs).last_hidden_state.sum().backward()
    assert not trained.forward_lstm.layers[0].onednn_weights._packed
    assert trained.forward_lstm.layers[0].state_projection.weight.grad.abs().sum() > 0


def test_a_state_that_wants_gradients_gets_them(model: ElmoModel) -> None:
    """With the biLM frozen, a state that requires grad still gets its gradient (the plain path serves it)."""
    frozen = float64_copy(model).float().eval().requires_grad_(False)
    inputs = ElmoTokenizer()(BATCHES[0], is_split_into_words=True, padding=True, return_tensors="pt")
    state = tuple(part.detach().requires_grad_() for part in frozen(**inputs, use_cache=True).state)
    frozen(**inputs, state=state).last_hidden_state.sum().backward()
    for part in state:  # (layers, directions, batch, width): every layer's and direction's slice
        assert part.grad is not None and (part.grad.abs().sum(dim=(2, 3)) > 0).all()


def test_each_distinct_word_is_encoded_once_with_the_same_vector(model: ElmoModel) -> None:
    """A word's vector is the same, bit for bit, in any batch (a `TokenVectorCache` relies on it): alone, the CNN
    computes it among a multiple of 16 rows, as the CPU's products round a row otherwise in fewer or in a tail."""
    encoder = model.char_encoder
    ids = ElmoTokenizer()([["the", "cat", "the", "", "the", "x" * 60, "cat"]], is_split_into_words=True)
    char_ids = torch.tensor(ids["input_ids"][0])
    calls = []  # the words each call embeds: the rows with characters (a padding row has none)
    hook = encoder.char_embedding.register_forward_pre_hook(
        lambda module, inputs: calls.append(int(inputs[0].any(dim=1).sum()))
    )
    with torch.no_grad():
        together = encoder(char_ids)
        alone = torch.cat([encoder(row[None]) for row in char_ids])
    hook.remove()
    assert calls[0] == 4, "the, cat, '' and the long word: four distinct words"
    assert torch.equal(together, alone)
    assert torch.equal(together[0], together[2])


def test_words_with_a_word_embedding_are_distinct_by_word_id_too() -> None:
    encoder, char_ids, word_ids = word_embedding_encoder(projection_dim=8)
    with torch.no_grad():
        vectors = encoder(char_ids, word_ids)
        alone = torch.cat([encoder(char_ids[row : row + 1], word_ids[row : row + 1]) for row in range(3)])
        # Same characters: the vectors differ by the projection of the difference of the word embeddings.
        word_projection = encoder.projection.weight[:, : encoder.word_embedding.embedding_dim]
        difference = word_projection @ (encoder.word_embedding.weight[1] - encoder.word_embedding.weight[2])
    assert difference.abs().max() > 1e-2
    torch.testing.assert_close(vectors, alone, rtol=0, atol=1e-6)
    torch.testing.assert_close(vectors[0] - vectors[1], difference, rtol=0, atol=1e-6)
    torch.testing.assert_close(vectors[0], vectors[2], rtol=0, atol=0)


def _reorder_is_missing(weight: torch.Tensor) -> torch.Tensor:
    raise AttributeError("'_OpNamespace' 'mkldnn' object has no attribute '_reorder_linear_weight'")


def _pointwise_that_differs(x, weight, bias, *args):  # an op of another signature or meaning in another torch
    return torch.zeros(x.shape[0], weight.shape[0])


@pytest.mark.parametrize(
    ("op", "replacement"),
    [("_reorder_linear_weight", _reorder_is_missing), ("_linear_pointwise", _pointwise_that_differs)],
    ids=["missing", "different"],
)
def test_a_torch_whose_private_onednn_ops_are_missing_or_differ_runs_the_plain_path(
    model: ElmoModel, op: str, replacement, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`onednn_available` is the one place that decides: it refuses ops that are absent or disagree with
    F.linear, and the model then computes on torch, bit for bit as with `onednn=False`."""
    plain = run_batches(_without_onednn(model))
    onednn_available.cache_clear()
    monkeypatch.setattr(torch.ops.mkldnn, op, replacement)
    try:
        assert not onednn_available()
        assert_all_close(run_batches(model), plain, atol=0.0)
    finally:
        monkeypatch.undo()
        onednn_available.cache_clear()
