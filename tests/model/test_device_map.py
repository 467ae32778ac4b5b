"""Big-model loading (`from_pretrained(device_map=..., offload_folder=...)`): offloaded weights, and a model split over
devices, give the plain model's vectors. accelerate's hooks load a module's offloaded weights only for its own
`forward`, and the LSTM kernels read the layers' weights outside it (see `ElmoModel._run_stacks`)."""

from __future__ import annotations

import gc

import accelerate
import pytest
import torch
import transformers
from awkward_words import AWKWARD_WORDS
from packaging.version import Version
from ragged_batches import run_batches
from transformers import AutoModel, AutoModelForPreTraining

from modeling_elmo import DEFAULT_MODEL, ElmoModel, ElmoTokenizer

requires_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
# The whole model on disk (every module offloaded) gives the plain model's vectors from transformers 5.16 with
# accelerate 1.16; with transformers 5.4 (any accelerate) or accelerate 1.13 and older (any transformers) the
# stacks' weights stay on the meta device there (measured in CI's oldest-releases venv; docs/model.md).
requires_whole_model_offload = pytest.mark.skipif(
    Version(transformers.__version__) < Version("5.16") or Version(accelerate.__version__) < Version("1.16"),
    reason="the whole model offloaded to disk needs transformers >= 5.16 and accelerate >= 1.16",
)

# Awkward words and empty sentences in one ragged batch.
SENTENCES = [AWKWARD_WORDS, [], ["the", "cat", "x" * 60], [""]]


def awkward_batch(device: str = "cpu") -> dict[str, torch.Tensor]:
    inputs = ElmoTokenizer()(SENTENCES, is_split_into_words=True, padding=True, return_tensors="pt")
    return {name: tensor.to(device) for name, tensor in inputs.items()}


def every_layer(model: ElmoModel, device: str = "cpu") -> list[torch.Tensor]:
    with torch.no_grad():
        output = model(**awkward_batch(device), output_hidden_states=True, use_cache=True)
    return [tensor.cpu() for tensor in (*output.hidden_states, *output.state)]


def assert_equal(actual: list[torch.Tensor], expected: list[torch.Tensor], atol: float = 0.0) -> None:
    for index, (a, e) in enumerate(zip(actual, expected, strict=True)):
        torch.testing.assert_close(a, e, rtol=0, atol=atol, msg=lambda m, i=index: f"#{i}: {m}")


def kept_copies(model: ElmoModel) -> list[str]:
    """The derived copies of LSTM weights (packed, stacked) that the model still holds."""
    gc.collect()
    stacks = (model.forward_lstm, model.backward_lstm)
    caches = [stack.stacked_weights for stack in stacks] + [layer.onednn_weights for s in stacks for layer in s.layers]
    return [name for cache in caches for name in cache._packed]


# 1 MB: the whole model on disk; 9 MB: the character encoder in memory and both LSTM stacks on disk.
@pytest.mark.parametrize("cpu_bytes", [pytest.param(1_000_000, marks=requires_whole_model_offload), 9_000_000])
@pytest.mark.parametrize("implementation", ["layer_by_layer", "wavefront"])
def test_weights_offloaded_to_disk_give_the_plain_models_vectors(cpu_bytes: int, implementation: str, tmp_path):
    plain = AutoModel.from_pretrained(DEFAULT_MODEL, lstm_implementation=implementation).eval()
    offloaded = AutoModel.from_pretrained(
        DEFAULT_MODEL,
        lstm_implementation=implementation,
        device_map="auto",
        max_memory={"cpu": cpu_bytes},
        offload_folder=tmp_path / "offload",
    ).eval()
    assert offloaded.forward_lstm.layers[0].state_projection.weight.device.type == "meta", "the stacks are offloaded"
    expected = every_layer(plain)
    for _ in range(2):  # the weights are offloaded again after a forward, and loaded again for the next
        assert_equal(every_layer(offloaded), expected)
        assert kept_copies(offloaded) == [], "copies of the offloaded weights stay in memory"
        assert offloaded.backward_lstm.layers[1].input_projection.weight.device.type == "meta"
    assert_equal(run_batches(offloaded), run_batches(plain))  # state carried from one batch to the next


def test_a_device_map_that_splits_a_stack_is_refused():
    model = AutoModel.from_pretrained(DEFAULT_MODEL).eval()
    model.backward_lstm.layers[1].to("meta")
    with pytest.raises(ValueError, match="must keep each ElmoLstmStack on one device") as refusal:
        every_layer(model)
    assert "cpu, meta" in str(refusal.value)


@requires_cuda
def test_weights_offloaded_to_the_cpu_run_on_the_gpu_as_the_plain_model():
    plain = AutoModel.from_pretrained(DEFAULT_MODEL).eval().to("cuda")
    offloaded = AutoModel.from_pretrained(DEFAULT_MODEL, device_map="auto", max_memory={0: 9_000_000, "cpu": 10**9})
    assert "cpu" in offloaded.hf_device_map.values(), offloaded.hf_device_map
    assert_equal(every_layer(offloaded.eval(), "cuda"), every_layer(plain, "cuda"))


@requires_cuda
def test_a_model_split_over_devices_gives_the_plain_models_vectors():
    """The backward stack on the GPU, the rest on the CPU: each stack runs where its weights lie."""
    from accelerate import dispatch_model

    plain = AutoModel.from_pretrained(DEFAULT_MODEL).eval()
    split = AutoModel.from_pretrained(DEFAULT_MODEL).eval()
    dispatch_model(split, {"char_encoder": "cpu", "forward_lstm": "cpu", "backward_lstm": 0}, main_device="cpu")
    assert split.backward_lstm.layers[0].input_projection.weight.device.type == "cuda"
    actual, expected = every_layer(split), every_layer(plain)
    # The forward direction ran on the CPU as in the plain model; the backward one on the GPU (another kernel).
    width = plain.config.projection_dim
    assert_equal([layer[..., :width] for layer in actual[1:3]], [layer[..., :width] for layer in expected[1:3]])
    assert_equal(actual, expected, atol=1e-5)


@requires_whole_model_offload
def test_the_language_models_predictions_with_its_weights_on_disk(tmp_path):
    """`word_log_probabilities` (and so `substitutes`) reads the softmax outside its forward."""
    plain = AutoModelForPreTraining.from_pretrained(DEFAULT_MODEL).eval()
    offloaded = AutoModelForPreTraining.from_pretrained(
        DEFAULT_MODEL, device_map="auto", max_memory={"cpu": 1_000_000}, offload_folder=tmp_path / "offload"
    ).eval()
    assert offloaded.softmax.weight.device.type == "meta", "the softmax is offloaded"
    with torch.no_grad():
        expected = plain.word_log_probabilities(**awkward_batch())
        assert_equal([offloaded.word_log_probabilities(**awkward_batch())], [expected])


def test_an_offload_folder_that_is_a_file_is_refused(tmp_path):
    """accelerate's words: "[Errno 17] File exists: '.../file'"."""
    (tmp_path / "file").write_text("not a folder", encoding="utf-8")
    for folder in (tmp_path / "file", tmp_path / "file" / "offload"):
        with pytest.raises(ValueError) as refusal:
            AutoModel.from_pretrained(
                DEFAULT_MODEL, device_map="auto", max_memory={"cpu": 10**6}, offload_folder=folder
            )
        assert str(refusal.value) == (
            f"offload_folder {folder}: {tmp_path / 'file'} is a file, not a folder: name a folder for the offloaded"
            " weights (it is made if it does not exist)"
        )


@pytest.mark.parametrize("device_map", ["meta", {"": "meta"}, torch.device("meta")])
def test_a_device_map_onto_the_meta_device_is_refused(device_map):
    """transformers' words: "Unsupported device type 'meta'. Supported device types are: cpu, cuda, ..."."""
    with pytest.raises(ValueError) as refusal:
        AutoModel.from_pretrained(DEFAULT_MODEL, device_map=device_map)
    assert str(refusal.value) == (
        f"device_map={device_map!r}: the meta device holds no data, so nothing can be computed on it; map the model"
        ' to "cpu", a cuda device or "disk" (with an offload_folder)'
    )


def test_a_device_map_that_splits_the_character_encoder_is_refused(tmp_path):
    """It loaded, and the first batch met torch's "weight is on the meta device, we need a `value` to put in on
    cpu"."""
    parts = {f"char_encoder.{part}": "cpu" for part in ("char_embedding", "highways", "projection")}
    device_map = {**parts, "char_encoder.convolutions": "disk", "forward_lstm": "cpu", "backward_lstm": "cpu"}
    with pytest.raises(ValueError) as refusal:
        AutoModel.from_pretrained(DEFAULT_MODEL, device_map=device_map, offload_folder=tmp_path / "offload")
    assert str(refusal.value) == (
        "device_map places the parts of char_encoder (ElmoCharacterEncoder) apart (char_encoder.char_embedding: cpu,"
        " char_encoder.highways: cpu, char_encoder.projection: cpu, char_encoder.convolutions: disk): map"
        ' char_encoder to one device as a whole (it is in _no_split_modules; device_map="auto" keeps it whole)'
    )
    whole = {"char_encoder": "cpu", "forward_lstm": "cpu", "backward_lstm": "disk"}  # (each module whole: served)
    model = AutoModel.from_pretrained(DEFAULT_MODEL, device_map=whole, offload_folder=tmp_path / "whole").eval()
    assert_equal(every_layer(model), every_layer(AutoModel.from_pretrained(DEFAULT_MODEL).eval()))


def test_a_model_on_the_meta_device_is_refused_in_one_line():
    """A model moved to the meta device (`.to("meta")`, a pipeline's `device="meta"`) got torch's "Cannot copy out
    of meta tensor; no data!"."""
    model = AutoModel.from_pretrained(DEFAULT_MODEL).eval().to("meta")
    with pytest.raises(ValueError) as refusal:
        every_layer(model)
    assert str(refusal.value) == (
        'the LSTM weights lie on the meta device, which holds no data (a model moved with .to("meta")): nothing can'
        ' be computed; put the model on "cpu" or a cuda device'
    )


def test_a_pipeline_on_the_meta_device_is_refused_in_one_line():
    """`pipeline(..., device="meta")` moves the inputs there too: torch's "aten::equal: attempted to run this
    operator with Meta tensors, but there was no fake impl or Meta kernel registered ..." (a paragraph)."""
    extractor = transformers.pipeline("feature-extraction", model=str(DEFAULT_MODEL), device="meta")
    with pytest.raises(ValueError) as refusal:
        extractor("a sentence")
    assert str(refusal.value) == (
        'input_ids lie on the meta device, which holds no data (a pipeline\'s device="meta"): nothing can be'
        ' computed; put the model and its inputs on "cpu" or a cuda device'
    )
