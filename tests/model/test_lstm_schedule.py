"""The LSTM schedules compute the same numbers: the wavefront (every layer of both directions together, the
schedule of GPUs) and layer by layer (CPUs), on ragged batches, rows of length 0, all lags, with gradients,
dropout and skip connections; the wavefront's operator calls per time step stay few whatever the number of
layers; float32 convolutions stay IEEE float32 on CUDA without changing the user's setting."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator

import pytest
import torch
from ragged_batches import run_batches
from torch.autograd.profiler import record_function

import modeling_elmo.modeling_elmo
import modeling_elmo.onednn_elmo
from modeling_elmo import ElmoConfig, ElmoModel, ElmoTokenizer
from modeling_elmo.kernels_elmo import LSTM_IMPLEMENTATIONS, run_lstm_stacks
from modeling_elmo.modeling_elmo import (
    ElmoLstmLayer,
    ElmoLstmStack,
    _distinct_rows,
    _exact_float32_convolutions,
    _packed_columns,
    lstm_layer_forward,
)

requires_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")

# Rows sorted by length, longest first; two rows of length 0 (nothing to run: they keep their given state).
LENGTHS = [11, 11, 9, 6, 6, 3, 1, 0, 0]
SHAPES = {
    "clipped, 3 layers": {"num_hidden_layers": 3, "cell_clip": 0.5, "proj_clip": 0.4},
    "unclipped, 2 layers, no skip": {"cell_clip": None, "proj_clip": None, "use_skip_connections": False},
    "1 layer": {"num_hidden_layers": 1, "cell_clip": 3.0, "proj_clip": 3.0},
}


def make_stacks(shape: str, dtype: torch.dtype = torch.float64) -> tuple[ElmoLstmStack, ElmoLstmStack]:
    torch.manual_seed(0)
    config = ElmoConfig(projection_dim=6, cell_size=10, **SHAPES[shape])
    stacks = (ElmoLstmStack(config), ElmoLstmStack(config))
    for stack in stacks:
        for parameter in stack.parameters():
            torch.nn.init.uniform_(parameter, -0.8, 0.8)  # large enough for the clips to bite
    return tuple(stack.to(dtype) for stack in stacks)


def make_inputs(stacks, dtype: torch.dtype = torch.float64):
    """(inputs (2, batch, time, P), batch_sizes, state) with a random state for every layer."""
    generator = torch.Generator().manual_seed(1)
    layers, cells = len(stacks[0].layers), stacks[0].layers[0].cell_size
    batch, steps, width = len(LENGTHS), max(LENGTHS), stacks[0].layers[0].input_projection.in_features
    inputs = torch.randn(2, batch, steps, width, generator=generator, dtype=dtype)
    inputs *= (torch.arange(steps)[None, :] < torch.tensor(LENGTHS)[:, None])[..., None]  # zero padding
    batch_sizes = [sum(length > step for length in LENGTHS) for step in range(steps)]
    state = (
        torch.randn(2, layers, batch, width, generator=generator, dtype=dtype),
        torch.randn(2, layers, batch, cells, generator=generator, dtype=dtype),
    )
    return inputs, batch_sizes, state


def layer_by_layer(*args, dropout: float = 0.0):
    return run_lstm_stacks(*args, implementation="layer_by_layer", dropout=dropout)


def wavefront(*args, dropout: float = 0.0):
    return run_lstm_stacks(*args, implementation="wavefront", dropout=dropout)


def assert_same(actual, expected, atol: float = 1e-12) -> None:
    (actual_outputs, actual_state), (expected_outputs, expected_state) = actual, expected
    assert len(actual_outputs) == len(expected_outputs)
    for a, e in zip([*actual_outputs, *actual_state], [*expected_outputs, *expected_state], strict=True):
        torch.testing.assert_close(a, e, rtol=0, atol=atol)


@pytest.mark.parametrize("shape", list(SHAPES))
@pytest.mark.parametrize("positions_per_chunk", [1, 20, 10_000])  # lags 1, 2 and sqrt(steps) = 3
def test_the_wavefront_equals_layer_by_layer(shape: str, positions_per_chunk: int, monkeypatch) -> None:
    monkeypatch.setattr(ElmoLstmLayer, "positions_per_chunk", positions_per_chunk)
    stacks = make_stacks(shape)
    inputs, batch_sizes, state = make_inputs(stacks)
    layers = len(stacks[0].layers)
    for num_layers in sorted({1, layers}):  # with the layers above not run (mix_layers): they keep their state
        expected = layer_by_layer(stacks, inputs, batch_sizes, state, num_layers)
        actual = wavefront(stacks, inputs, batch_sizes, state, num_layers)
        assert_same(actual, expected)
        outputs, (h, c) = actual
        padding = torch.arange(inputs.shape[2])[None, :] >= torch.tensor(LENGTHS)[:, None]
        assert all((output[:, padding] == 0).all() for output in outputs), "outputs are zero past each row"
        torch.testing.assert_close(h[:, :, -2:], state[0][:, :, -2:], rtol=0, atol=0)  # rows of length 0
        torch.testing.assert_close(c[:, num_layers:], state[1][:, num_layers:], rtol=0, atol=0)


def test_one_stack_alone_runs_the_same() -> None:
    """One direction alone (the wavefront of one stack, as a model split over devices runs each) as its layers one
    after another."""
    stack = make_stacks("clipped, 3 layers")[1]
    inputs, batch_sizes, (h, c) = make_inputs((stack,))
    outputs, (final_h, final_c) = wavefront([stack], inputs[1:], batch_sizes, (h[1:], c[1:]), 3)
    layer_input = inputs[1]
    for index, layer in enumerate(stack.layers):
        expected, expected_state = lstm_layer_forward(layer, layer_input, batch_sizes, (h[1, index], c[1, index]))
        expected = expected + layer_input if index else expected
        torch.testing.assert_close(outputs[index][0], expected, rtol=0, atol=1e-12)
        for actual_part, expected_part in zip((final_h[0, index], final_c[0, index]), expected_state, strict=True):
            torch.testing.assert_close(actual_part, expected_part, rtol=0, atol=1e-12)
        layer_input = expected


def test_the_wavefront_gives_the_same_gradients() -> None:
    """To the inputs, the given state and every weight (LM training, fine-tuning, a trained state)."""
    stacks = make_stacks("clipped, 3 layers")
    inputs, batch_sizes, state = make_inputs(stacks)
    weights = torch.randn(len(LENGTHS), max(LENGTHS), 6, generator=torch.Generator().manual_seed(2), dtype=inputs.dtype)
    gradients = []
    for run in (layer_by_layer, wavefront):
        leaves = [tensor.clone().requires_grad_() for tensor in (inputs, *state)]
        outputs, (h, c) = run(stacks, leaves[0], batch_sizes, tuple(leaves[1:]), 3)
        loss = sum((output * weights).sum() for output in outputs) + (h**2).sum() + c.sum()
        parameters = [parameter for stack in stacks for parameter in stack.parameters()]
        gradients.append(torch.autograd.grad(loss, [*leaves, *parameters]))
    for actual, expected in zip(*gradients, strict=True):
        torch.testing.assert_close(actual, expected, rtol=0, atol=1e-10)


def test_dropout_hits_every_layer_input_and_the_skip_connection_adds_the_dropped_input(monkeypatch) -> None:
    """With dropout replaced by a deterministic scaling, both schedules drop the same inputs."""
    monkeypatch.setattr(torch.nn.functional, "dropout", lambda x, p, training: x * (1 - p))
    stacks = make_stacks("clipped, 3 layers")
    inputs, batch_sizes, state = make_inputs(stacks)
    expected = layer_by_layer(stacks, inputs, batch_sizes, state, 3, dropout=0.25)
    assert_same(wavefront(stacks, inputs, batch_sizes, state, 3, dropout=0.25), expected)
    undropped = layer_by_layer(stacks, inputs, batch_sizes, state, 3)
    assert not torch.allclose(expected[0][-1], undropped[0][-1])


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_cpus_run_layer_by_layer_unless_told_otherwise(dtype: torch.dtype, monkeypatch) -> None:
    """On CPU each layer of each direction runs alone, through the layer modules (oneDNN serving float32
    inference where it can); `implementation="wavefront"` runs the wavefront there too, to the same numbers."""
    stacks = make_stacks("clipped, 3 layers", dtype)
    inputs, batch_sizes, state = make_inputs(stacks, dtype)
    calls, run_layer = [], lstm_layer_forward
    monkeypatch.setattr(
        modeling_elmo.modeling_elmo,
        "lstm_layer_forward",
        lambda layer, *args, **kwargs: calls.append(layer) or run_layer(layer, *args, **kwargs),
    )
    with torch.no_grad():
        layer_by_layer = run_lstm_stacks(stacks, inputs, batch_sizes, state, 2)
        assert calls == [*stacks[0].layers[:2], *stacks[1].layers[:2]]
        wavefront = run_lstm_stacks(stacks, inputs, batch_sizes, state, 2, implementation="wavefront")
    assert len(calls) == 4
    assert_same(wavefront, layer_by_layer, atol=1e-5 if dtype == torch.float32 else 1e-12)


def test_other_devices_run_the_wavefront(monkeypatch) -> None:
    """Shown on the meta device (shapes only), which stands for the GPU: no layer runs alone."""
    stacks = [stack.to("meta") for stack in make_stacks("clipped, 3 layers", torch.float32)]
    inputs, batch_sizes, state = make_inputs(stacks, torch.float32)
    calls = []
    monkeypatch.setattr(
        modeling_elmo.modeling_elmo, "lstm_layer_forward", lambda layer, *args, **kwargs: calls.append(layer)
    )
    outputs, (h, c) = run_lstm_stacks(stacks, inputs.to("meta"), batch_sizes, tuple(s.to("meta") for s in state), 3)
    assert not calls
    assert [output.shape for output in outputs] == [inputs.shape] * 3
    assert (h.shape, c.shape) == (state[0].shape, state[1].shape)


@pytest.fixture(scope="module")
def model() -> ElmoModel:
    torch.manual_seed(0)
    config = ElmoConfig(
        char_embedding_dim=4, char_cnn_filters=[[1, 8], [2, 8]], projection_dim=16, cell_size=32, cell_clip=0.5
    )
    return ElmoModel(config).eval()


def test_the_model_computes_the_same_as_a_wavefront(model: ElmoModel) -> None:
    """The whole biLM, with state carried between batches, and its gradients (fine-tuning)."""
    runs = []
    for implementation in ("layer_by_layer", "wavefront"):
        model.set_lstm_implementation(implementation)
        model.zero_grad()
        results = run_batches(model, grad=True)
        sum(result.sum() for result in results).backward()
        runs.append([result.detach() for result in results] + [p.grad.clone() for p in model.parameters()])
    model.set_lstm_implementation("auto")
    for layer_by_layer, wavefront in zip(*runs, strict=True):
        torch.testing.assert_close(wavefront, layer_by_layer, rtol=1e-4, atol=1e-5)


def _operator_calls(model: ElmoModel, lengths: list[int]) -> int:
    """Every operator call the profiler records in one forward (after one warm-up call), except those made inside
    the character encoder (`ENCODER`, a range recorded around each of its calls)."""
    sentences = [["w"] * length for length in lengths]
    inputs = ElmoTokenizer()(sentences, is_split_into_words=True, padding=True, return_tensors="pt")
    ranges = []
    model.char_encoder.register_forward_pre_hook(lambda *_: ranges.append(record_function(ENCODER).__enter__()))
    model.char_encoder.register_forward_hook(lambda *_: ranges.pop().__exit__(None, None, None))
    with torch.no_grad():
        model(**inputs)
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as profile:
            model(**inputs)
    return sum(1 for event in profile.events() if not _inside_encoder(event))


ENCODER = "character encoder"


def _inside_encoder(event) -> bool:
    while event is not None:
        if event.name == ENCODER:
            return True
        event = event.cpu_parent
    return False


@pytest.mark.parametrize("layers", [1, 2, 3])
def test_operator_calls_per_step_stay_few_whatever_the_layers(layers: int) -> None:
    """The wavefront (the schedule of GPUs) takes at most 50 operator calls for one step of all layers and both
    directions (measured on CPU: 34-42 for 1-3 layers): the count grows by at most that per step.

    Derivation: before the wavefront, one layer of one direction at a time, this test counted 54 calls per layer,
    direction and step (108, 215, 323 per step for 1-3 layers): 50 is under a quarter of that for 2 layers, and
    stays the bound whatever the number of layers. Counted as the
    increase from sentences of up to 20 words to twice as long (the fixed costs of a forward cancel); the
    character encoder's calls are left out (they depend on the distinct words, not on the steps)."""
    torch.manual_seed(0)
    config = ElmoConfig(
        char_embedding_dim=4,
        char_cnn_filters=[[1, 4], [2, 4]],
        projection_dim=8,
        cell_size=16,
        num_hidden_layers=layers,
        lstm_implementation="wavefront",
    )
    model = ElmoModel(config).eval()
    short = [20, 3, 12, 20, 7, 15, 1, 9]
    per_step = (_operator_calls(model, [2 * length for length in short]) - _operator_calls(model, short)) / 20
    assert per_step <= 50, f"{per_step:.1f} operator calls per step for {layers} layers and both directions"


# torch 2.9 added cuDNN's per-operator precision setting (`torch.backends.cudnn.conv.fp32_precision`).
_PER_OPERATOR_TF32 = getattr(torch.backends.cudnn, "conv", None) is not None


def _tf32_settings() -> tuple[object, ...]:
    """Every cuDNN TF32 setting this torch has."""
    cudnn = torch.backends.cudnn
    return (cudnn.allow_tf32, cudnn.conv.fp32_precision) if _PER_OPERATOR_TF32 else (cudnn.allow_tf32,)


# (how the flag is read and set, the user's setting, what it is inside the block)
TF32_APIS = {
    "torch>=2.9, default": ("conv.fp32_precision", None, "ieee"),
    "torch>=2.9, tf32 set": ("conv.fp32_precision", "tf32", "ieee"),
    "torch>=2.9, ieee set": ("conv.fp32_precision", "ieee", "ieee"),
    "torch<2.9, default": ("allow_tf32", None, False),
    "torch<2.9, off": ("allow_tf32", False, False),
}


@pytest.mark.parametrize("api", list(TF32_APIS))
def test_float32_convolutions_on_cuda_are_ieee_only_inside_the_block(api: str, monkeypatch) -> None:
    """Checked on the flags themselves, which exist without a GPU too: IEEE float32 inside the block, the user's
    setting back after it (also after an error); nothing changes but for float32 on CUDA."""
    flag, user_setting, inside = TF32_APIS[api]
    cudnn = torch.backends.cudnn
    if flag == "conv.fp32_precision" and not _PER_OPERATOR_TF32:
        pytest.skip("this torch (before 2.9) has no per-operator setting")
    owner = cudnn.conv if flag == "conv.fp32_precision" else cudnn
    name = flag.rpartition(".")[2]
    if flag == "allow_tf32":  # as torch before 2.9, without the per-operator setting
        monkeypatch.setattr(cudnn, "conv", None, raising=False)
    original = getattr(owner, name)
    try:
        if user_setting is not None:
            setattr(owner, name, user_setting)
        setting = getattr(owner, name)
        with pytest.raises(KeyError), _exact_float32_convolutions(torch.device("cuda"), torch.float32):
            assert getattr(owner, name) == inside
            raise KeyError("an error inside the block")
        assert getattr(owner, name) == setting
        for device, dtype in (("cpu", torch.float32), ("cuda", torch.bfloat16), ("cuda", torch.float64)):
            with _exact_float32_convolutions(torch.device(device), dtype):
                assert getattr(owner, name) == setting, "only float32 on CUDA"
    finally:
        setattr(owner, name, original)


def _token_layer_model() -> ElmoModel:
    """The original model's token layer (2048 filters, 2 highway layers, projection to 512), small LSTMs."""
    torch.manual_seed(0)
    return ElmoModel(ElmoConfig(cell_size=16, num_hidden_layers=1)).eval()


def test_a_forward_leaves_the_users_tf32_setting_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    """The guard turns TF32 off for the forward's convolutions and gives the user's setting back. Without a GPU
    the forward runs the guard as on CUDA (the flags exist on every build), so it is checked on CPU too."""
    inside = []
    if not torch.cuda.is_available():

        @contextlib.contextmanager
        def as_on_cuda(device: torch.device, dtype: torch.dtype) -> Iterator[None]:
            with _exact_float32_convolutions(torch.device("cuda"), dtype):
                cudnn = torch.backends.cudnn  # the setting this torch's guard sets (reading both here would raise)
                inside.append(cudnn.conv.fp32_precision if _PER_OPERATOR_TF32 else cudnn.allow_tf32)
                yield

        monkeypatch.setattr(modeling_elmo.modeling_elmo, "_exact_float32_convolutions", as_on_cuda)
    model = _token_layer_model()
    inputs = ElmoTokenizer()([["naïve", "café"], ["x"]], is_split_into_words=True, padding=True, return_tensors="pt")
    device = "cuda" if torch.cuda.is_available() else "cpu"
    before = _tf32_settings()
    with torch.no_grad():
        model.to(device)(**inputs.to(device))
    assert _tf32_settings() == before
    ieee = "ieee" if _PER_OPERATOR_TF32 else False
    assert inside in ([], [ieee]) and bool(inside) != torch.cuda.is_available(), "IEEE float32 in the forward"


@requires_cuda
def test_the_token_layer_on_cuda_is_float32_at_a_large_batch() -> None:
    """At 2048 words cuDNN's TF32 default put the token vectors 1e-4 away from float64; IEEE float32 is ~1e-6."""
    model = _token_layer_model().cuda()
    generator = torch.Generator().manual_seed(0)
    char_ids = torch.randint(1, 262, (2048, 50), generator=generator).cuda()
    assert torch.backends.cudnn.allow_tf32, "the default, which this test is about"
    with torch.no_grad():
        single = model.char_encoder(char_ids)
        double = model.double().char_encoder(char_ids)
    torch.testing.assert_close(single.double(), double, rtol=0, atol=1e-5)


@requires_cuda
def test_the_wavefront_on_cuda_equals_float64_on_cpu() -> None:
    stacks = make_stacks("clipped, 3 layers")
    inputs, batch_sizes, state = make_inputs(stacks)
    expected = layer_by_layer(stacks, inputs, batch_sizes, state, 3)
    cuda_stacks = [stack.float().cuda() for stack in stacks]
    with torch.no_grad():
        outputs, final = run_lstm_stacks(
            cuda_stacks, inputs.float().cuda(), batch_sizes, tuple(part.float().cuda() for part in state), 3
        )
    actual = ([output.double().cpu() for output in outputs], tuple(part.double().cpu() for part in final))
    assert_same(actual, expected, atol=1e-5)


def _encoder_calls(model: ElmoModel, words: list[str]) -> int:
    """Operator calls of the character encoder in one forward of one sentence of `words`."""
    inputs = ElmoTokenizer()([words], is_split_into_words=True, return_tensors="pt")
    with torch.no_grad(), torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as profile:
        with record_function(ENCODER):
            model.char_encoder(inputs["input_ids"][0])
    return sum(1 for event in profile.events() if _inside_encoder(event))


def test_the_character_encoders_calls_do_not_grow_with_the_words(model: ElmoModel) -> None:
    """Finding the distinct words takes a few calls per packed column, not one per word (`torch.unique(dim=0)`
    compares rows pairwise on CPUs: thousands of calls per batch, which bound a GPU's speed)."""
    few = _encoder_calls(model, [f"w{index % 5}" for index in range(20)])
    many = _encoder_calls(model, [f"word{index}" for index in range(400)] * 2)
    assert many <= few + 10, (few, many)


def test_distinct_rows_are_exact_groups() -> None:
    generator = torch.Generator().manual_seed(0)
    # Rows that differ in one column only (anywhere), and many repeats; ids up to 261 packed 7 to an int64.
    base = torch.randint(0, 262, (40, 50), generator=generator)
    rows = base[torch.randint(0, 40, (300,), generator=generator)]
    rows[::7, torch.randint(0, 50, (1,), generator=generator)] += 1
    first, inverse = _distinct_rows(_packed_columns(rows, bits=9))
    torch.testing.assert_close(rows[first][inverse], rows, rtol=0, atol=0)
    assert len(first) == len(torch.unique(rows, dim=0))


@pytest.mark.parametrize("implementation", ["layer_by_layer", "wavefront"])
def test_an_empty_batch_gives_empty_outputs(model: ElmoModel, implementation: str) -> None:
    model.set_lstm_implementation(implementation)
    with torch.no_grad():
        output = model(**ElmoTokenizer()([], return_tensors="pt"), output_hidden_states=True, use_cache=True)
    model.set_lstm_implementation("auto")
    assert output.last_hidden_state.shape == (0, 0, 32)
    assert [layer.shape for layer in output.hidden_states] == [(0, 0, 32)] * 3
    assert output.state[0].shape == (2, 2, 0, 16) and output.state[1].shape == (2, 2, 0, 32)


@pytest.fixture
def schedule_calls(monkeypatch) -> list[tuple[str, int]]:
    """Which schedule ran, for the stacks of which model: ("wavefront" or "layer_by_layer", id of the first
    stack), one per `run_lstm_stacks` call (counting calls, not timing)."""
    calls = []
    for name in ("wavefront", "layer_by_layer"):
        run = LSTM_IMPLEMENTATIONS[name]

        def counting(stacks, *args, run=run, name=name, **kwargs):
            calls.append((name, id(stacks[0])))
            return run(stacks, *args, **kwargs)

        monkeypatch.setitem(LSTM_IMPLEMENTATIONS, name, counting)
    return calls


def test_two_models_in_one_process_run_each_its_own_implementation(fixture_model_folder, schedule_calls) -> None:
    """The choice is the model's: setting one model's (at load, or after) changes no other model's, even of the
    same class; so are oneDNN (an option of layer_by_layer) and the compiled cell."""
    wavefront = ElmoModel.from_pretrained(fixture_model_folder, lstm_implementation="wavefront").eval()
    auto = ElmoModel.from_pretrained(fixture_model_folder).eval()
    plain = ElmoModel.from_pretrained(fixture_model_folder).eval()
    plain.set_lstm_implementation("layer_by_layer", onednn=False)
    inputs = ElmoTokenizer()([["a", "b", "c"], ["d"]], is_split_into_words=True, padding=True, return_tensors="pt")
    with torch.no_grad():
        for model in (wavefront, auto, plain, wavefront, auto):
            model(**inputs)
    first = {model: id(model.forward_lstm) for model in (wavefront, auto, plain)}
    assert schedule_calls == [
        ("wavefront", first[wavefront]),
        ("layer_by_layer", first[auto]),
        ("layer_by_layer", first[plain]),
        ("wavefront", first[wavefront]),
        ("layer_by_layer", first[auto]),
    ]
    assert (wavefront.config.lstm_implementation, auto.config.lstm_implementation) == ("wavefront", "auto")
    assert auto.lstm_options.onednn and not plain.lstm_options.onednn
    if modeling_elmo.onednn_elmo.onednn_available():
        assert auto.forward_lstm.layers[0].onednn_weights._packed, "oneDNN did not run for the auto model"
    assert not plain.forward_lstm.layers[0].onednn_weights._packed, "oneDNN ran for the model that turned it off"


def test_from_pretrained_with_the_wavefront_runs_it_to_the_same_numbers(
    fixture_model_folder, schedule_calls, tmp_path
) -> None:
    """`from_pretrained(folder, lstm_implementation="wavefront")` runs the wavefront (on CPU, where "auto" runs
    layer by layer), to the numbers of layer_by_layer; the choice is not saved, and a wrong one fails at load."""
    batches = {}
    for implementation in ("layer_by_layer", "wavefront"):
        model = ElmoModel.from_pretrained(fixture_model_folder, lstm_implementation=implementation).eval()
        schedule_calls.clear()
        batches[implementation] = run_batches(model)
        assert schedule_calls and {name for name, _ in schedule_calls} == {implementation}
    for wavefront, layer_by_layer in zip(batches["wavefront"], batches["layer_by_layer"], strict=True):
        torch.testing.assert_close(wavefront, layer_by_layer, rtol=1e-4, atol=1e-5)
    model.save_pretrained(tmp_path)
    assert "lstm_implementation" not in json.loads((tmp_path / "config.json").read_text())
    assert json.loads((tmp_path / "config.json").read_text()) == json.loads(
        (fixture_model_folder / "config.json").read_text()
    )
    assert ElmoModel.from_pretrained(tmp_path).config.lstm_implementation == "auto"
    with pytest.raises(ValueError, match="lstm_implementation"):
        ElmoModel.from_pretrained(fixture_model_folder, lstm_implementation="fast")
    with pytest.raises(ValueError, match="lstm_implementation"):
        model.set_lstm_implementation("fast")
    with pytest.raises(ValueError, match="lstm_implementation"):
        ElmoConfig(lstm_implementation="fast")
