"""ELMoForManyLangs folders: every layer against the `elmoformanylangs` package itself (from PyPI)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import h5py
import numpy as np
import pytest
import torch
from command_output import last_error_line
from elmoformanylangs import Embedder
from elmoformanylangs_files import BAD_NETWORK_CONFIGS, write_small_model
from transformers import AutoModel, AutoTokenizer

import modeling_elmo  # noqa: F401  (registers the Auto classes)
from elmo_transformers.conversion.cli import main

# Non-ASCII words, a character outside the vocabulary, words past the 8 characters the model sees (cut for
# both the characters and the word lookup), unknown words, mixed lengths.
SENTENCES = [
    ["the", "café", "is", "naïve", "."],
    ["жизнь", "中文", "😀", "supercalifragilistic"],
    ["cat"],
    ["naïveténaïveté", "the", "Жжжжжжжжжж", "дом", "cat", "."],
]


def _theirs(model_dir: Path) -> list[np.ndarray]:
    embedder = Embedder(str(model_dir), batch_size=64)
    embedder.model.encoder.reset_states()  # their encoder carries state across calls: start from zero
    return embedder.sents2elmo(SENTENCES, output_layer=-2)


def _ours(folder: Path) -> list[np.ndarray]:
    model = AutoModel.from_pretrained(folder).eval()
    tokenizer = AutoTokenizer.from_pretrained(folder)
    inputs = tokenizer(SENTENCES, is_split_into_words=True, padding=True, return_tensors="pt")
    with torch.no_grad():
        layers = torch.stack(model(**inputs, output_hidden_states=True).hidden_states, dim=1)
    return [layers[row, :, : len(words)].numpy() for row, words in enumerate(SENTENCES)]


@pytest.mark.parametrize(("word_dim", "legacy_format"), [(3, False), (0, False), (3, True)])
def test_every_layer_matches_elmoformanylangs(word_dim: int, legacy_format: bool, tmp_path: Path) -> None:
    model_dir = write_small_model(tmp_path / "theirs", seed=word_dim, word_dim=word_dim, legacy_format=legacy_format)
    output = tmp_path / "ours"
    assert main(["elmoformanylangs", "--model", str(model_dir), "--output", str(output)]) == 0
    worst = 0.0
    for theirs, ours in zip(_theirs(model_dir), _ours(output), strict=True):
        assert theirs.shape == ours.shape
        worst = max(worst, float(np.abs(theirs - ours).max()))
    print(f"ELMoForManyLangs word_dim={word_dim} legacy={legacy_format}: max |diff| over all layers {worst:.2e}")
    assert worst < 5e-6


def test_tokenizer_reads_code_points_and_word_ids(tmp_path: Path) -> None:
    model_dir = write_small_model(tmp_path / "theirs")
    output = tmp_path / "ours"
    assert main(["elmoformanylangs", "--model", str(model_dir), "--output", str(output)]) == 0
    tokenizer = AutoTokenizer.from_pretrained(output)
    encoded = tokenizer([["café", "zzz", "😀"]], is_split_into_words=True, return_tensors="pt")
    assert set(encoded) == {"input_ids", "attention_mask", "input_word_ids"}
    assert encoded["input_ids"].shape == (1, 3, 10)
    assert tokenizer.decode(encoded["input_ids"][0]) == "café zzz <oov>"
    special = tokenizer.special_word_ids
    assert encoded["input_word_ids"][0, 1] == special["oov"] and encoded["input_word_ids"][0, 0] != special["oov"]


def test_dictionary_that_does_not_match_the_weights(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    model_dir = write_small_model(tmp_path / "theirs")
    with open(model_dir / "word.dic", "a", encoding="utf-8") as file:
        file.write("extra\t11\n")
    assert main(["elmoformanylangs", "--model", str(model_dir), "--output", str(tmp_path / "ours")]) == 2
    assert "word_emb_layer.embedding.weight has shape (11, 3), the config and dictionaries imply (12, 3)" in (
        capsys.readouterr().err
    )


def test_not_a_model_folder(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    assert main(["elmoformanylangs", "--model", str(tmp_path), "--output", str(tmp_path / "ours")]) == 2
    assert "not an ELMoForManyLangs model folder (no config.json)" in capsys.readouterr().err


def test_token_embeddings_and_export(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    model_dir = write_small_model(tmp_path / "theirs")
    output = tmp_path / "ours"
    assert main(["elmoformanylangs", "--model", str(model_dir), "--output", str(output)]) == 0
    vocabulary = tmp_path / "vocab.txt"
    vocabulary.write_text("café\nzzz\n")
    embeddings = tmp_path / "embeddings.hdf5"
    assert (
        main(["token-embeddings", "--model", str(output), "--vocab", str(vocabulary), "--output", str(embeddings)]) == 0
    )
    layers = _ours(output)
    with h5py.File(embeddings, "r") as file:
        np.testing.assert_allclose(file["embedding"][0], layers[0][0, 1, :6], atol=1e-6)  # "café" in sentence 0
    assert main(["to-allennlp", "--model", str(output), "--output", str(tmp_path / "allennlp")]) == 2
    assert "cannot be written in the AllenNLP/bilm-tf format: it has a word embedding, a character vocabulary" in (
        capsys.readouterr().err
    )


@pytest.mark.parametrize(("change", "problem"), BAD_NETWORK_CONFIGS.values(), ids=BAD_NETWORK_CONFIGS)
def test_a_bad_network_config_is_one_line_naming_the_entry(
    change: Any, problem: str, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    """A network config without `encoder` or `filters`, or with a value its field cannot hold, ended in 32-41
    traceback lines (a KeyError, or ElmoConfig's ValueError); now one line naming the file and the entry."""
    model_dir = write_small_model(tmp_path / "theirs")
    network_config = model_dir / "cnn_small.json"
    network = json.loads(network_config.read_text())
    change(network)
    network_config.write_text(json.dumps(network))
    output = tmp_path / "ours"
    assert main(["elmoformanylangs", "--model", str(model_dir), "--output", str(output)]) == 2
    assert last_error_line(capsys) == f"elmo-convert: error: {network_config}: {problem}"
    assert not output.exists()


def test_a_network_config_that_is_not_json_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    model_dir = write_small_model(tmp_path / "theirs")
    (model_dir / "cnn_small.json").write_text("[1, 2]")
    assert main(["elmoformanylangs", "--model", str(model_dir), "--output", str(tmp_path / "ours")]) == 2
    assert last_error_line(capsys) == (
        f"elmo-convert: error: {model_dir / 'cnn_small.json'}: expected a JSON object (network config), got list"
    )
    (model_dir / "cnn_small.json").write_text("{")
    assert main(["elmoformanylangs", "--model", str(model_dir), "--output", str(tmp_path / "ours")]) == 2
    assert last_error_line(capsys).startswith(
        f"elmo-convert: error: {model_dir / 'cnn_small.json'} is not a JSON network config: "
    )
    assert not (tmp_path / "ours").exists()
