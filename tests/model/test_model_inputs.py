"""ElmoModel's handling of its inputs: shapes, masks, state, errors that name the problem."""

from __future__ import annotations

import pytest
import torch

import modeling_elmo
import modeling_elmo.modeling_elmo
from modeling_elmo import ElmoConfig, ElmoModel, ElmoTokenizer
from modeling_elmo.modeling_elmo import ElmoLstmLayer


@pytest.fixture(scope="module")
def model() -> ElmoModel:
    torch.manual_seed(0)
    config = ElmoConfig(
        char_embedding_dim=4, char_cnn_filters=[[1, 4], [2, 8]], num_highway_layers=1, projection_dim=8, cell_size=16
    )
    return ElmoModel(config).eval()


@pytest.fixture(scope="module")
def inputs() -> dict[str, torch.Tensor]:
    return ElmoTokenizer()([["a", "b", "c"], ["d"]], is_split_into_words=True, padding=True, return_tensors="pt")


def test_output_shapes(model: ElmoModel, inputs: dict[str, torch.Tensor]) -> None:
    output = model(**inputs, output_hidden_states=True, use_cache=True)
    assert output.last_hidden_state.shape == (2, 3, 16)
    assert [layer.shape for layer in output.hidden_states] == [(2, 3, 16)] * 3
    assert output.hidden_states[-1] is output.last_hidden_state
    assert output.state[0].shape == (2, 2, 2, 8) and output.state[1].shape == (2, 2, 2, 16)
    assert model(**inputs).state is None, "stateless by default"
    assert model(**inputs).hidden_states is None


def test_mask_defaults_to_non_zero_rows(model: ElmoModel, inputs: dict[str, torch.Tensor]) -> None:
    with torch.no_grad():
        with_mask = model(**inputs).last_hidden_state
        without = model(input_ids=inputs["input_ids"]).last_hidden_state
    assert torch.equal(with_mask, without)


def _equal(left: object, right: object) -> bool:
    """Tensors equal bit for bit, in tuples of the same layout."""
    if isinstance(left, torch.Tensor) and isinstance(right, torch.Tensor):
        return torch.equal(left, right)
    if isinstance(left, tuple) and isinstance(right, tuple):
        return len(left) == len(right) and all(map(_equal, left, right))
    return False


def test_tuple_output(model: ElmoModel, inputs: dict[str, torch.Tensor]) -> None:
    """The tuple holds the dict's fields in ElmoModelOutput's order, leaving out those that are None."""
    with torch.no_grad():
        output = model(**inputs, output_hidden_states=True, use_cache=True)
        full = model(**inputs, output_hidden_states=True, use_cache=True, return_dict=False)
        plain = model(**inputs, return_dict=False)
    assert _equal(full, (output.last_hidden_state, output.hidden_states, output.state, output.word_mask))
    assert _equal(plain, (output.last_hidden_state, output.word_mask))


def test_state_continues_each_row(model: ElmoModel, inputs: dict[str, torch.Tensor]) -> None:
    with torch.no_grad():
        first = model(**inputs, use_cache=True)
        continued = model(**inputs, state=first.state)
        fresh = model(**inputs)
    assert continued.state is not None
    # Row 0 read twice in one stateless call, the markers between the copies written out: the forward LSTM reads
    # the second copy, and the backward LSTM the first, after exactly what the first call read.
    doubled_words = [["a", "b", "c", "</S>", "<S>", "a", "b", "c"]]
    with torch.no_grad():
        doubled = model(**ElmoTokenizer()(doubled_words, is_split_into_words=True, return_tensors="pt"))
    width = model.config.projection_dim
    top = doubled.last_hidden_state[0]
    expected = torch.cat([top[5:, :width], top[:3, width:]], dim=-1)
    difference = (expected - fresh.last_hidden_state[0]).abs()
    assert difference[:, :width].max() > 1e-2 and difference[:, width:].max() > 1e-2  # the state changes both halves
    torch.testing.assert_close(continued.last_hidden_state[0], expected, rtol=0, atol=1e-6)
    # Each row continues its own state: row 1 alone with row 1's state gives the same vectors.
    h, c = first.state
    row_inputs = {key: value[1:] for key, value in inputs.items()}
    with torch.no_grad():
        alone = model(**row_inputs, state=(h[:, :, 1:], c[:, :, 1:]))
    torch.testing.assert_close(alone.last_hidden_state[0], continued.last_hidden_state[1], rtol=0, atol=1e-6)


def test_bad_inputs_name_the_problem(model: ElmoModel, inputs: dict[str, torch.Tensor]) -> None:
    with pytest.raises(ValueError, match=r"input_ids must have shape \(batch, words, 50\).*got \(2, 3\)"):
        model(input_ids=torch.ones(2, 3, dtype=torch.long))
    with pytest.raises(ValueError, match=r"attention_mask must have shape \(2, 3\)"):
        model(input_ids=inputs["input_ids"], attention_mask=torch.ones(2, 4))
    with pytest.raises(ValueError, match="right padding"):
        model(input_ids=inputs["input_ids"], attention_mask=torch.tensor([[0, 1, 1], [1, 0, 0]]))
    h, c = model(**inputs, use_cache=True).state
    with pytest.raises(ValueError, match=r"state h must have shape .* got \(2, 2, 1, 8\)"):
        model(**inputs, state=(h[:, :, :1], c))


# The first word's ids changed ("ab" is 259, 98, 99, 260, 261, ...): -413 at 2 with 261 at 3 packs into the key
# of "ab" (-413 + 512 * 1 = 99 in the bits of column 2), so the first word is the second's twin.
OUTSIDE_THE_TABLE = {"-1": {4: -1}, "262": {4: 262}, "a twin's key": {2: 99 - 512, 3: 261}}


@pytest.mark.parametrize("changes", OUTSIDE_THE_TABLE.values(), ids=OUTSIDE_THE_TABLE)
def test_character_ids_outside_the_table_are_refused(model: ElmoModel, changes: dict[int, int]) -> None:
    """A negative id packed into another word's key, whose vector it took in silence, or failed with nn.Embedding's
    bare "index out of range in self", as an id over 261 did. The exported graph refuses the same ids
    (tests/onnx/test_onnx_export.py)."""
    ids = ElmoTokenizer()([["ab", "ab"]], is_split_into_words=True, return_tensors="pt")["input_ids"]
    for position, char_id in changes.items():
        ids[0, 0, position] = char_id
    shown = min(changes.values()) if min(changes.values()) < 0 else max(changes.values())
    expected = (
        f"^input_ids holds the character id {shown}: character ids lie in 0..261 \\(0 for no character\\); encode "
        "the words with ElmoTokenizer$"
    )
    with pytest.raises(ValueError, match=expected):
        model(input_ids=ids)


def test_gradients_reach_every_parameter(model: ElmoModel, inputs: dict[str, torch.Tensor]) -> None:
    model.zero_grad()
    model(**inputs, output_hidden_states=True).last_hidden_state.sum().backward()
    for name, parameter in model.named_parameters():
        assert parameter.grad is not None and parameter.grad.abs().sum() > 0, name
    model.zero_grad()


def test_chunked_input_projection_gives_the_same_outputs(model: ElmoModel, monkeypatch: pytest.MonkeyPatch) -> None:
    """Input projections are computed a chunk of steps at a time; the chunk size must not change a number (4
    positions: a step alone, several steps together, and a step of more rows than that alone)."""
    tokenizer = ElmoTokenizer()
    batch = [["w"] * length for length in (7, 1, 0, 12, 3)]
    inputs = tokenizer(batch, is_split_into_words=True, padding=True, return_tensors="pt")
    with torch.no_grad():
        whole = model(**inputs, output_hidden_states=True, use_cache=True)
        monkeypatch.setattr(ElmoLstmLayer, "positions_per_chunk", 4)
        chunked = model(**inputs, output_hidden_states=True, use_cache=True)
    for expected, actual in zip(whole.hidden_states, chunked.hidden_states, strict=True):
        torch.testing.assert_close(actual, expected, rtol=0, atol=1e-6)
    for expected, actual in zip(whole.state, chunked.state, strict=True):
        torch.testing.assert_close(actual, expected, rtol=0, atol=1e-6)


def test_low_precision_from_pretrained(fixture_model_folder) -> None:
    """`from_pretrained(..., dtype=...)` runs in that dtype, close to float32 (cosine per word)."""
    model = ElmoModel.from_pretrained(fixture_model_folder).eval()
    sentences = [["The", "naïve", "café", "owner", "said", "so", "."], ["Größe", "x" * 60, ""], []]
    inputs = ElmoTokenizer()(sentences, is_split_into_words=True, padding=True, return_tensors="pt")
    words = inputs["attention_mask"].bool()
    with torch.no_grad():
        reference = model(**inputs).last_hidden_state[words]
        for dtype in (torch.bfloat16, torch.float16):
            low = ElmoModel.from_pretrained(fixture_model_folder, dtype=dtype).eval()
            output = low(**inputs).last_hidden_state
            assert output.dtype == dtype
            cosine = torch.nn.functional.cosine_similarity(output[words].float(), reference)
            assert cosine.min() > 0.99, (dtype, cosine)


@pytest.mark.slow
def test_compiled_lstm_cells_give_the_same_outputs() -> None:
    torch.manual_seed(1)
    config = ElmoConfig(char_embedding_dim=4, char_cnn_filters=[[1, 4]], projection_dim=8, cell_size=16)
    model = ElmoModel(config).eval()
    tokenizer = ElmoTokenizer()
    batches = [[["a", "b", "c"], ["d"]], [["e"] * 9, [], ["f", "g"]]]  # other batch sizes and lengths: no recompile
    with torch.no_grad():
        expected = [model(**tokenizer(b, is_split_into_words=True, padding=True, return_tensors="pt")) for b in batches]
        model.compile_lstm_cells()
        for batch, reference in zip(batches, expected, strict=True):
            output = model(**tokenizer(batch, is_split_into_words=True, padding=True, return_tensors="pt"))
            torch.testing.assert_close(output.last_hidden_state, reference.last_hidden_state, rtol=0, atol=1e-6)
    assert model.lstm_options.cell is not modeling_elmo.modeling_elmo.lstm_cell_step
    other = ElmoModel(config)
    assert other.lstm_options.cell is modeling_elmo.modeling_elmo.lstm_cell_step, "compiling one model compiled another"
