"""The LSTM kernels are an open registry (`kernels_elmo`): a made-up kernel registered by name, without touching the
config module, is accepted by the config and chosen at load or after, and computes what it delegates to bit for bit;
a name registered twice or a kernel that cannot be called is refused in one line; an unknown name is refused with
every registered name."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import torch

from modeling_elmo import DEFAULT_MODEL, ElmoConfig, ElmoModel, ElmoTokenizer, register_lstm_implementation
from modeling_elmo.kernels_elmo import LSTM_IMPLEMENTATIONS

# Ragged rows, an empty one among them: the kernel sees sorted rows that end at different steps.
SENTENCES = [["a", "bb"], [], ["", "x" * 60, "é", "日本語"], ["The", "café", "is", "open", "."]]


@pytest.fixture
def my_kernel() -> Iterator[list[str]]:
    """A kernel "my_kernel" registered for one test: it records its calls' `implementation`-free signature (the
    option names it was given) and runs "layer_by_layer"."""
    calls: list[str] = []

    def kernel(*arguments, **options):
        calls.append(",".join(sorted(options)))
        return LSTM_IMPLEMENTATIONS["layer_by_layer"](*arguments, **options)

    register_lstm_implementation("my_kernel", kernel)
    yield calls
    del LSTM_IMPLEMENTATIONS["my_kernel"]


def _outputs(model: ElmoModel) -> list[torch.Tensor]:
    inputs = ElmoTokenizer.from_pretrained(DEFAULT_MODEL)(
        SENTENCES, is_split_into_words=True, padding=True, return_tensors="pt"
    )
    with torch.no_grad():
        output = model(**inputs, output_hidden_states=True, use_cache=True)
    return [*output.hidden_states, *output.state]


def test_a_registered_kernel_is_chosen_by_name_and_computes_what_it_runs(my_kernel: list[str]) -> None:
    expected = _outputs(ElmoModel.from_pretrained(DEFAULT_MODEL, lstm_implementation="layer_by_layer").eval())
    mine = ElmoModel.from_pretrained(DEFAULT_MODEL, lstm_implementation="my_kernel").eval()
    assert mine.config.lstm_implementation == "my_kernel"
    assert all(torch.equal(a, e) for a, e in zip(_outputs(mine), expected, strict=True))
    assert my_kernel == ["dropout,options"]

    later = ElmoModel.from_pretrained(DEFAULT_MODEL).eval()
    later.set_lstm_implementation("my_kernel")
    assert all(torch.equal(a, e) for a, e in zip(_outputs(later), expected, strict=True))
    assert my_kernel == ["dropout,options"] * 2
    assert ElmoConfig(lstm_implementation="my_kernel").lstm_implementation == "my_kernel"


def test_a_name_registered_twice_or_a_kernel_that_cannot_be_called_is_refused(my_kernel: list[str]) -> None:
    for name in ("my_kernel", "wavefront"):
        with pytest.raises(ValueError) as refusal:
            register_lstm_implementation(name, lambda *arguments, **options: None)
        assert str(refusal.value) == f"LSTM implementation {name!r} is registered already"
    with pytest.raises(TypeError) as refusal:
        register_lstm_implementation("other", "layer_by_layer")
    assert str(refusal.value) == "LSTM implementation 'other': the kernel must be callable, got 'layer_by_layer'"
    with pytest.raises(TypeError) as refusal:
        register_lstm_implementation("", lambda *arguments, **options: None)
    assert str(refusal.value) == "an LSTM implementation's name must be a non-empty string, got ''"
    assert list(LSTM_IMPLEMENTATIONS) == ["auto", "layer_by_layer", "wavefront", "my_kernel"]


@pytest.mark.parametrize("name", [3, ("x",), None, b"x"], ids=["an int", "a tuple", "None", "bytes"])
def test_a_name_that_is_not_a_string_is_refused(name: object) -> None:
    """Only "" was tested: a check of emptiness alone (`if not name`) let 3 or ("x",) into the registry, where no
    config can name it (the config's check takes strings)."""
    with pytest.raises(TypeError) as refusal:
        register_lstm_implementation(name, lambda *arguments, **options: None)
    assert str(refusal.value) == f"an LSTM implementation's name must be a non-empty string, got {name!r}"
    assert name not in LSTM_IMPLEMENTATIONS


def test_an_unknown_name_is_refused_naming_every_registered_one() -> None:
    with pytest.raises(ValueError) as refusal:
        ElmoConfig(lstm_implementation="fast")
    assert str(refusal.value) == (
        'ElmoConfig: lstm_implementation must be one of "auto", "layer_by_layer", "wavefront", got "fast"'
    )
    with pytest.raises(ValueError) as refusal:
        ElmoConfig(lstm_implementation=["wavefront"])  # no name, and no key of a dict
    assert str(refusal.value) == (
        'ElmoConfig: lstm_implementation must be one of "auto", "layer_by_layer", "wavefront", got ["wavefront"]'
    )
    register_lstm_implementation("my_other_kernel", LSTM_IMPLEMENTATIONS["wavefront"])
    try:
        with pytest.raises(ValueError, match=r'"wavefront", "my_other_kernel", got "fast"$'):
            ElmoConfig(lstm_implementation="fast")
    finally:
        del LSTM_IMPLEMENTATIONS["my_other_kernel"]


def test_the_registry_names_no_file_for_remote_code_to_carry() -> None:
    """configuration_elmo.py imports the registry, and transformers reads every `from .x import` line of a
    remote-code file (indented ones too) as a file it needs: transformers 5.4, loading a config alone, requires
    them without copying them. The registry takes lstm_elmo.py by importlib, and names no other file."""
    import re
    from pathlib import Path

    import modeling_elmo.kernels_elmo as registry

    source = Path(registry.__file__).read_text(encoding="utf-8")
    assert not re.findall(r"^\s*from\s+\.(\S+)\s+import|^\s*import\s+\.(\S+)", source, flags=re.MULTILINE)


def _wrong_width(outputs, state):
    return [output[..., :-1] for output in outputs], state


def _nan_in_the_top_layer(outputs, state):
    return [*outputs[:-1], outputs[-1] * float("nan")], state


@pytest.mark.parametrize(
    ("change", "kind", "message"),
    [
        (
            lambda outputs, state: None,
            TypeError,
            "LSTM implementation 'broken' returned None; a kernel returns (outputs, (h, c)): one output (D, batch,"
            " time, P) per layer run, the state as given",
        ),
        (
            lambda outputs, state: (outputs, None),
            TypeError,
            "LSTM implementation 'broken' returned (a list, None); a kernel returns (outputs, (h, c)): one output"
            " (D, batch, time, P) per layer run, the state as given",
        ),
        (
            lambda outputs, state: (outputs[:1], state),
            ValueError,
            "LSTM implementation 'broken' returned 1 outputs for 2 layers run; a kernel returns (outputs, (h, c)):"
            " one output (D, batch, time, P) per layer run, the state as given",
        ),
        (
            _wrong_width,
            ValueError,
            "LSTM implementation 'broken' returned the output of layer 0 as a tensor of shape (2, 4, 7, 127), not of"
            " shape (2, 4, 7, 128); a kernel returns (outputs, (h, c)): one output (D, batch, time, P) per layer run,"
            " the state as given",
        ),
        (
            _nan_in_the_top_layer,
            ValueError,
            "LSTM implementation 'broken' returned a NaN or an infinity in the output of layer 1, from finite inputs"
            " and state",
        ),
    ],
)
def test_a_registered_kernel_returning_the_wrong_thing_is_named(change, kind: type, message: str) -> None:
    """A kernel returning None got a TypeError naming neither the kernel nor what it must return; one returning the
    wrong width or a NaN passed through unchecked."""

    def broken(*arguments, **options):
        return change(*LSTM_IMPLEMENTATIONS["layer_by_layer"](*arguments, **options))

    register_lstm_implementation("broken", broken)
    try:
        model = ElmoModel.from_pretrained(DEFAULT_MODEL, lstm_implementation="broken").eval()
        with pytest.raises(kind) as refusal:
            _outputs(model)
        assert str(refusal.value) == message
    finally:
        del LSTM_IMPLEMENTATIONS["broken"]
