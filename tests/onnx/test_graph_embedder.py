"""`elmo_transformers.serving.GraphEmbedder`, the public embedder on a graph folder (issue 51): its documented example
runs, its vectors are PyTorch's on awkward sentences, the same bits at every batch size and from raw text or words, as
elmo-embed's ONNX backend gives them; it runs without torch, and refuses bad input in one line (a ValueError)."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
import torch

pytest.importorskip("onnxruntime")
from without_the_package import run_without_the_package

from elmo_transformers.inference.onnx_runner import OnnxEmbedder
from elmo_transformers.serving import GraphEmbedder, GraphError
from elmo_transformers.serving import graph_embedder as graph_embedder_module
from modeling_elmo import DEFAULT_MODEL, ElmoModel, ElmoTokenizer

# Awkward on purpose: unicode (a decomposed é, an emoji), a word over 48 bytes, an empty-string word, an empty
# sentence, mixed lengths.
WORDS = [
    ["The", "naïve", "Cafe\u0301", "owner", "said", "😀", "."],
    ["x" * 60, "", "Größe"],
    [],
    ["A", "longer", "sentence", "with", "several", "ordinary", "words", "and", "3.14", "."],
]
LINES = ["The cat's mat .", "Cafe\u0301 ☃ 😀 , ça va ?", "", "x" * 60 + " is long"]


@pytest.fixture(scope="module")
def embedder(default_folder: Path) -> GraphEmbedder:
    return GraphEmbedder(default_folder)


def test_the_documented_example_runs(default_folder: Path) -> None:
    """The example of the module's docstring (docs/onnx.md shows it too), run on the bundled model's folder."""
    docstring = graph_embedder_module.__doc__
    example = "\n".join(line.removeprefix("    ") for line in docstring.splitlines() if line.startswith("    "))
    example = example.replace('"elmo-onnx"', repr(str(default_folder)))
    namespace: dict = {}
    exec(example, namespace)
    vectors, embedder = namespace["vectors"], namespace["embedder"]
    assert [array.shape for array in vectors] == [(4, embedder.width), (2, embedder.width)]
    assert re.search(r"vectors\[0\]\.shape  # \(4, width\)", docstring)


def test_the_vectors_are_pytorchs_on_awkward_sentences(embedder: GraphEmbedder) -> None:
    model = ElmoModel.from_pretrained(DEFAULT_MODEL).eval()
    inputs = ElmoTokenizer.from_pretrained(DEFAULT_MODEL)(
        WORDS, is_split_into_words=True, padding=True, return_tensors="pt"
    )
    with torch.no_grad():
        expected = torch.stack(model(**inputs, output_hidden_states=True).hidden_states, dim=1).numpy()
    vectors = embedder.embed(WORDS, batch_size=3)
    assert [array.shape for array in vectors] == [(embedder.num_layers, len(words), embedder.width) for words in WORDS]
    for row, (array, words) in enumerate(zip(vectors, WORDS, strict=True)):
        assert array.dtype == np.float32 and array.flags.c_contiguous
        np.testing.assert_allclose(array, expected[row, :, : len(words)], atol=1e-5, rtol=0)


@pytest.mark.parametrize("quantized", [False, True], ids=["float32", "int8"])
def test_every_batch_size_gives_the_same_bits(default_folder: Path, quantized: bool) -> None:
    embedder = GraphEmbedder(default_folder, quantized=quantized, threads=1)
    alone = embedder.embed(WORDS * 2, batch_size=1)
    for batch_size in (2, 3, 100):
        together = embedder.embed(WORDS * 2, batch_size=batch_size)
        assert all(np.array_equal(a, b) for a, b in zip(alone, together, strict=True)), batch_size


def test_raw_text_is_split_as_the_tokenizer_splits_it(embedder: GraphEmbedder) -> None:
    words = [embedder.split(line) for line in LINES]
    assert words[2] == [] and words[0] == ElmoTokenizer.from_pretrained(DEFAULT_MODEL).tokenize(LINES[0])
    mixed = [LINES[0], words[1], LINES[2], words[3]]  # raw lines and word lists in one call
    for from_text, from_words in zip(embedder.embed(mixed), embedder.embed(words), strict=True):
        assert np.array_equal(from_text, from_words)


def test_the_layer_choices_and_a_weighted_mix(embedder: GraphEmbedder) -> None:
    every = embedder.embed(WORDS)
    top, average = embedder.embed(WORDS, layers="top"), embedder.embed(WORDS, layers="average")
    weights = [0.5, -1.25, 2.0]
    mixed = embedder.embed(WORDS, layers=weights)
    for layers, top_layer, mean, mix in zip(every, top, average, mixed, strict=True):
        assert top_layer.shape == mean.shape == mix.shape == layers.shape[1:]
        np.testing.assert_array_equal(top_layer, layers[-1])
        np.testing.assert_allclose(mean, layers.astype(np.float64).mean(0), atol=1e-6, rtol=0)
        reference = np.tensordot(np.array(weights), layers.astype(np.float64), axes=1)
        np.testing.assert_allclose(mix, reference, atol=1e-5, rtol=0)


@pytest.mark.parametrize("layers", ["all", "top", "average"])
def test_elmo_embeds_onnx_backend_gives_the_embedders_bits(default_folder: Path, layers: str) -> None:
    """elmo-embed's ONNX backend runs `GraphEmbedder`: the same bits from both paths."""
    backend = OnnxEmbedder(str(default_folder), layers=layers)
    public = GraphEmbedder(default_folder).embed(WORDS, layers=layers, batch_size=len(WORDS))
    assert all(np.array_equal(a, b) for a, b in zip(backend.embed(WORDS), public, strict=True))


def test_a_provider_list_and_threads_are_taken(default_folder: Path, embedder: GraphEmbedder) -> None:
    chosen = GraphEmbedder(default_folder, providers=[("CPUExecutionProvider", {})], threads=2)
    assert chosen.session.get_providers() == ["CPUExecutionProvider"]
    assert chosen.session.get_session_options().intra_op_num_threads == 2
    assert all(np.array_equal(a, b) for a, b in zip(chosen.embed(WORDS), embedder.embed(WORDS), strict=True))


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda e: e.embed(WORDS, batch_size=0), "batch_size must be a positive integer, got 0"),
        (lambda e: e.embed(WORDS, layers="mean"), "layers must be one of all, top, average or a list of weights"),
        (lambda e: e.embed(WORDS, layers=[1.0, 2.0]), "layers must hold 3 finite weights, one per layer"),
        (lambda e: e.embed(WORDS, layers=[1.0, float("nan"), 0.0]), "layers must hold 3 finite weights"),
        (lambda e: e.embed([["a", 3]]), "sentence 0: word 1 is a int, not a str"),
        (lambda e: e.embed(["ok", None]), "sentence 1 is a NoneType: give a str or a list of str words"),
        (lambda e: e.embed([b"bytes"]), "sentence 0 is a bytes: give a str or a list of str words"),
    ],
)
def test_bad_arguments_are_one_line_value_errors(embedder: GraphEmbedder, call, message: str) -> None:
    with pytest.raises(GraphError, match=re.escape(message)) as caught:
        call(embedder)
    assert isinstance(caught.value, ValueError) and "\n" not in str(caught.value)


def test_a_folder_without_a_graph_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(GraphError, match=re.escape(f"{tmp_path}: no ONNX graph model.onnx")):
        GraphEmbedder(tmp_path)
    too_long = tmp_path / ("f" * 300)  # (over the file system's 255 bytes: an OSError where it is looked at)
    with pytest.raises(GraphError, match=re.escape(f"{too_long}/model.onnx: cannot be looked at: File name too")):
        GraphEmbedder(too_long)


def test_it_runs_without_torch_and_transformers(default_folder: Path, tmp_path: Path) -> None:
    """The package's embedder on a Python where torch and transformers cannot be imported."""
    script = (
        "import sys\nfrom elmo_transformers.serving import GraphEmbedder\n"
        "vectors = GraphEmbedder(sys.argv[1]).embed(['Hello world .', []], layers='top')\n"
        "print([array.shape for array in vectors])\n"
    )
    completed = run_without_the_package(
        script, str(default_folder), work=tmp_path, refuse=["torch", "transformers", "accelerate"]
    )
    assert completed.returncode == 0, completed.stderr[-3000:]
    assert completed.stdout.strip() == "[(3, 256), (0, 256)]"
