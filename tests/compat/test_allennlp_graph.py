"""`ElmoEmbedder.from_graph`: AllenNLP's `ElmoEmbedder` calls computed by the ONNX graphs of an `elmo-convert onnx`
folder (the bundled model, `default_folder`): the same arrays and shapes as the PyTorch embedder, the float32 graph
its stateless vectors within 1e-5, the int8 graph's per-word cosine to them (measured 0.99990 mean, 0.99973 lowest on
these sentences; 0.99994 / 0.99989 on a 300-residue protein: 7-bit activations), no state carried, bad input in one
line."""

from __future__ import annotations

import sys
from pathlib import Path

import h5py
import numpy as np
import pytest
import torch

pytest.importorskip("onnxruntime")

from elmo_transformers.compat.allennlp import ConfigurationError, ElmoEmbedder
from modeling_elmo import DEFAULT_MODEL

# Unicode, a word over 48 bytes, an empty sentence, an empty-string word, mixed lengths.
AWKWARD = [["The", "cat", "sat", "."], [], ["naïve", "日本語", "é" * 30, "", "x"], ["a", "b"] * 20, ["one"]]
PROTEIN = list(np.random.default_rng(0).choice(list("ACDEFGHIKLMNPQRSTVWY"), 300))


@pytest.fixture(scope="module")
def pytorch() -> ElmoEmbedder:
    return ElmoEmbedder(str(DEFAULT_MODEL), None, stateful=False)


@pytest.fixture(scope="module")
def float32(default_folder: Path) -> ElmoEmbedder:
    return ElmoEmbedder.from_graph(default_folder, quantized=False)


@pytest.fixture(scope="module")
def int8(default_folder: Path) -> ElmoEmbedder:
    return ElmoEmbedder.from_graph(default_folder, threads=1)


def per_word_cosines(got: list[np.ndarray], want: list[np.ndarray]) -> np.ndarray:
    """The cosine of each word's vector in each layer, `got` to `want`."""
    rows = [(a.reshape(-1, a.shape[-1]), b.reshape(-1, b.shape[-1])) for a, b in zip(got, want, strict=True)]
    return np.concatenate([(a * b).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1) for a, b in rows])


def test_the_float32_graph_gives_the_stateless_pytorch_vectors(pytorch, float32) -> None:
    want, got = pytorch.embed_batch(AWKWARD), float32.embed_batch(AWKWARD)
    assert [vectors.shape for vectors in got] == [vectors.shape for vectors in want]
    assert [vectors.dtype for vectors in got] == [vectors.dtype for vectors in want]
    assert got[1].shape == (3, 0, 1024) and got[0].shape == (3, 4, 256)  # (AllenNLP's empty sentence)
    for sentence, (a, b) in enumerate(zip(got, want, strict=True)):
        assert np.abs(a - b).max(initial=0.0) <= 1e-5, sentence
    protein = float32.embed_sentence(PROTEIN)
    assert isinstance(protein, np.ndarray) and protein.shape == (3, 300, 256) and protein.dtype == np.float32
    assert np.abs(protein - pytorch.embed_sentence(PROTEIN)).max() <= 1e-5


def test_batch_to_embeddings_gives_the_pytorch_tensors(pytorch, float32) -> None:
    (want, want_mask), (got, got_mask) = pytorch.batch_to_embeddings(AWKWARD), float32.batch_to_embeddings(AWKWARD)
    assert isinstance(got, torch.Tensor) and got.dtype == want.dtype and got.shape == want.shape == (5, 3, 40, 256)
    assert got_mask.dtype == torch.long and torch.equal(got_mask, want_mask)
    assert (got - want).abs().max() <= 1e-5


def test_the_int8_graph_is_close_to_float32(float32, int8) -> None:
    words = [sentence for sentence in AWKWARD if sentence]
    cosines = per_word_cosines(int8.embed_batch(words), float32.embed_batch(words))
    protein = per_word_cosines([int8.embed_sentence(PROTEIN)], [float32.embed_sentence(PROTEIN)])
    print(f"int8 per-word cosine: sentences {cosines.mean():.6f} / {cosines.min():.6f}, protein {protein.mean():.6f} /"
          f" {protein.min():.6f}")  # fmt: skip
    assert cosines.mean() >= 0.999 and cosines.min() >= 0.995
    assert protein.mean() >= 0.999 and protein.min() >= 0.995


def test_no_state_is_carried(int8) -> None:
    alone = int8.embed_sentence(AWKWARD[2])
    batch = int8.embed_batch(AWKWARD)
    again = list(int8.embed_sentences(AWKWARD, batch_size=2))
    assert np.array_equal(batch[2], alone) and np.array_equal(again[2], alone)
    assert int8.elmo_bilm is None


def test_embed_file_writes_allennlp_layout(float32, pytorch, tmp_path: Path) -> None:
    sentences = tmp_path / "sentences.txt"
    sentences.write_text("The cat sat .\nnaïve 日本語 x\n", encoding="utf-8")
    float32.embed_file(sentences, tmp_path / "graph.hdf5", "average")
    pytorch.embed_file(sentences, tmp_path / "pytorch.hdf5", "average")
    with h5py.File(tmp_path / "graph.hdf5") as got, h5py.File(tmp_path / "pytorch.hdf5") as want:
        assert set(got) == set(want) == {"0", "1", "sentence_to_index"}
        for key in ("0", "1"):
            assert got[key].shape == want[key].shape and got[key].dtype == np.float32
            assert np.abs(got[key][()] - want[key][()]).max() <= 1e-5


def one_line(error: pytest.ExceptionInfo) -> str:
    message = str(error.value)
    assert message and "\n" not in message, message
    return message


def test_bad_input_is_one_line(int8, float32, tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError) as error:
        ElmoEmbedder.from_graph(tmp_path)
    assert one_line(error) == f"{tmp_path}: no ONNX graph model_quantized.onnx (write one with elmo-convert onnx)"
    with pytest.raises(ConfigurationError) as error:
        ElmoEmbedder.from_graph(tmp_path, threads="2")
    assert one_line(error) == "threads must be a positive integer or None (onnxruntime's choice), got '2'"
    with pytest.raises(ConfigurationError) as error:
        int8.embed_sentence(["a", 3])
    assert one_line(error) == "batch_to_ids: every word must be a str, got a int"
    with pytest.raises(ConfigurationError) as error:
        float32.embed_batch(["a sentence"])
    assert "sentence 0 is a string" in one_line(error)
    with pytest.raises(ConfigurationError) as error:
        float32.batch_to_embeddings([[], []])
    assert "all empty" in one_line(error)


def test_without_onnxruntime_the_extra_is_named(default_folder: Path, monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "onnxruntime", None)  # (an import of it raises ModuleNotFoundError)
    with pytest.raises(ConfigurationError) as error:
        ElmoEmbedder.from_graph(default_folder)
    assert "pip install 'elmo-transformers[onnx]'" in one_line(error)
