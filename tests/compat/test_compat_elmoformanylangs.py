"""`elmo_transformers.compat.elmoformanylangs.Embedder` against the `elmoformanylangs` package itself (from PyPI,
their encoder's carried state reset, as for a first batch) and against the converted model, on awkward input:
non-ASCII words, a character outside the vocabulary, words past the 8 characters the model reads, an empty-string
word, unknown words, mixed lengths, in batches of 2."""

from __future__ import annotations

import shutil
import zipfile
from pathlib import Path

import numpy as np
import pytest
import torch
from elmoformanylangs import Embedder as TheirEmbedder
from elmoformanylangs_files import write_small_model
from transformers import AutoModel, AutoTokenizer

import modeling_elmo  # noqa: F401  (registers the Auto classes)
from elmo_transformers.common.errors import ConversionError
from elmo_transformers.compat.elmoformanylangs import Embedder
from elmo_transformers.conversion.cli import main

SENTENCES = [
    ["the", "café", "is", "naïve", "."],
    ["жизнь", "中文", "😀", "supercalifragilistic"],
    ["cat"],
    ["", "the"],
    ["naïveténaïveté", "the", "Жжжжжжжжжж", "дом", "cat", "."],
]
OUTPUT_LAYERS = (-1, -2, 0, 1, 2)


def _theirs(model_dir: Path, output_layer: int) -> list[np.ndarray]:
    embedder = TheirEmbedder(str(model_dir), batch_size=64)
    embedder.model.encoder.reset_states()  # their encoder carries state across calls: start from zero
    return embedder.sents2elmo(SENTENCES, output_layer=output_layer)


@pytest.mark.parametrize("word_dim", [3, 0])
def test_sents2elmo_matches_elmoformanylangs(word_dim: int, tmp_path: Path) -> None:
    model_dir = write_small_model(tmp_path / "theirs", seed=word_dim, word_dim=word_dim)
    embedder = Embedder(model_dir, batch_size=2)
    for output_layer in OUTPUT_LAYERS:
        theirs, ours = _theirs(model_dir, output_layer), embedder.sents2elmo(SENTENCES, output_layer=output_layer)
        assert [array.shape for array in ours] == [array.shape for array in theirs]
        assert all(array.dtype == np.float32 for array in ours)
        difference = max(float(np.abs(mine - reference).max()) for mine, reference in zip(ours, theirs, strict=True))
        print(f"sents2elmo word_dim={word_dim} output_layer={output_layer}: max |ours - theirs| {difference:.1e}")
        assert difference < 5e-6


def test_sents2elmo_gives_the_converted_models_numbers(tmp_path: Path) -> None:
    model_dir = write_small_model(tmp_path / "theirs")
    folder = tmp_path / "converted"
    assert main(["elmoformanylangs", "--model", str(model_dir), "--output", str(folder)]) == 0
    model, tokenizer = AutoModel.from_pretrained(folder).eval(), AutoTokenizer.from_pretrained(folder)
    inputs = tokenizer(SENTENCES, is_split_into_words=True, padding=True, return_tensors="pt")
    with torch.no_grad():
        layers = torch.stack(model(**inputs, output_hidden_states=True).hidden_states, dim=1).numpy()
    ours = Embedder(model_dir, batch_size=2).sents2elmo(SENTENCES, output_layer=-2)
    for row, sentence in enumerate(SENTENCES):
        np.testing.assert_allclose(ours[row], layers[row, :, : len(sentence)], rtol=0, atol=1e-6)


def test_a_sentence_gets_the_same_vectors_in_any_batch_and_call(tmp_path: Path) -> None:
    """Theirs carry the LSTM state from batch to batch and call to call (in a random batch order); ours do not."""
    embedder = Embedder(write_small_model(tmp_path / "theirs"), batch_size=2)
    together = embedder.sents2elmo(SENTENCES)
    for index, sentence in enumerate(SENTENCES):
        np.testing.assert_allclose(embedder.sents2elmo([sentence])[0], together[index], rtol=0, atol=1e-6)


def test_an_empty_sentence_has_no_vectors(tmp_path: Path) -> None:
    """Theirs fail on it with output_layer=-1 (np.average of no words: a ZeroDivisionError)."""
    embedder = Embedder(write_small_model(tmp_path / "theirs"))
    average, every = embedder.sents2elmo([[], ["cat"]]), embedder.sents2elmo([[]], output_layer=-2)
    assert average[0].shape == (0, 12) and average[1].shape == (1, 12) and every[0].shape == (3, 0, 12)


def test_an_archive_of_the_folder_loads(tmp_path: Path) -> None:
    """An ELMoForManyLangs model as the NLPL repository zips one, one folder down."""
    model_dir = write_small_model(tmp_path / "theirs")
    archive = tmp_path / "142.zip"
    with zipfile.ZipFile(archive, "w") as zipped:
        for file in model_dir.iterdir():
            zipped.write(file, f"142/{file.name}")
    expected = Embedder(model_dir).sents2elmo(SENTENCES, output_layer=-2)
    for mine, reference in zip(Embedder(archive).sents2elmo(SENTENCES, output_layer=-2), expected, strict=True):
        np.testing.assert_array_equal(mine, reference)


def test_bad_input_is_one_line(tmp_path: Path) -> None:
    model_dir = write_small_model(tmp_path / "theirs")
    embedder = Embedder(model_dir)
    cases = [
        (lambda: embedder.sents2elmo(SENTENCES, output_layer=3), "output_layer must be -1 (the average), -2 (all"),
        (lambda: embedder.sents2elmo(SENTENCES, output_layer=-3), "a layer 0..2, got -3"),
        (lambda: embedder.sents2elmo(SENTENCES, output_layer=True), "got True"),
        (lambda: embedder.sents2elmo("the cat"), "sents must be a list of sentences"),
        (lambda: embedder.sents2elmo([["the", 1]]), "sents[0] holds 1, not a string"),
        (lambda: Embedder(model_dir, batch_size=0), "batch_size must be a positive integer, got 0"),
    ]
    for call, problem in cases:
        with pytest.raises(ValueError) as error:
            call()
        assert problem in str(error.value) and "\n" not in str(error.value)
    (model_dir / "encoder.pkl").unlink()
    with pytest.raises(ConversionError) as error:
        Embedder(model_dir)
    assert "holds no encoder.pkl beside token_embedder.pkl" in str(error.value)
    shutil.rmtree(model_dir)
    with pytest.raises(ConversionError, match="no such archive or folder"):
        Embedder(model_dir)
