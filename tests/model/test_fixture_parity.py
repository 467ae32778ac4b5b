"""Parity with the activations bilm-tf computed (allennlp 0.9.0's fixtures), by AllenNLP's own criterion."""

from __future__ import annotations

import json
from pathlib import Path

import h5py
import numpy as np
import torch
from transformers import AutoModel, AutoTokenizer

import modeling_elmo  # noqa: F401  (registers the Auto classes)


def _expected_top_layer(elmo_fixture: Path, sentence_list: int, batch: int) -> np.ndarray:
    with h5py.File(elmo_fixture / f"lm_embeddings_{sentence_list}.hdf5", "r") as embeddings:
        forward, backward = embeddings[str(batch)][...]
    return np.concatenate([forward, backward], axis=-1)


def test_top_layer_matches_bilm_tf_over_ten_stateful_batches(elmo_fixture: Path, fixture_model_folder: Path) -> None:
    model = AutoModel.from_pretrained(fixture_model_folder).eval()
    tokenizer = AutoTokenizer.from_pretrained(fixture_model_folder)
    sentences = json.loads((elmo_fixture / "sentences.json").read_text())
    state = None
    worst = 0.0
    for batch_index in range(10):
        batch = [sentences[row][batch_index].split() for row in range(3)]
        inputs = tokenizer(batch, is_split_into_words=True, padding=True, return_tensors="pt")
        with torch.no_grad():
            output = model(**inputs, state=state, use_cache=True)
        state = output.state
        for row, words in enumerate(batch):
            expected = _expected_top_layer(elmo_fixture, row, batch_index)
            actual = output.last_hidden_state[row, : len(words)].numpy()
            assert actual.shape == expected.shape
            assert np.allclose(actual, expected, atol=1e-6), f"batch {batch_index} row {row}"
            assert not output.last_hidden_state[row, len(words) :].any()
            worst = max(worst, float(np.abs(actual - expected).max()))
    print(f"top layer, 10 stateful batches: max |diff| = {worst:.3g}")


def test_the_second_batch_needs_the_first_ones_state(elmo_fixture: Path, fixture_model_folder: Path) -> None:
    """The fixture was produced statefully: sentence list 0's second sentence matches after its first sentence's
    state (each row carries its own state, so the row alone will do) and is far off from a fresh state."""
    model = AutoModel.from_pretrained(fixture_model_folder).eval()
    tokenizer = AutoTokenizer.from_pretrained(fixture_model_folder)
    sentences = json.loads((elmo_fixture / "sentences.json").read_text())

    def top_layer(words: list[str], state=None):
        with torch.no_grad():
            inputs = tokenizer([words], is_split_into_words=True, return_tensors="pt")
            return model(**inputs, state=state, use_cache=True)

    first = top_layer(sentences[0][0].split())
    expected = _expected_top_layer(elmo_fixture, 0, 1)
    continued = top_layer(sentences[0][1].split(), state=first.state).last_hidden_state[0].numpy()
    stateless = top_layer(sentences[0][1].split()).last_hidden_state[0].numpy()
    np.testing.assert_allclose(continued, expected, rtol=0, atol=1e-6)
    assert np.abs(stateless - expected).max() > 1.0  # about 2.1


def test_token_layer_matches_bilm_tf_token_embeddings(elmo_fixture: Path, fixture_model_folder: Path) -> None:
    model = AutoModel.from_pretrained(fixture_model_folder).eval()
    tokenizer = AutoTokenizer.from_pretrained(fixture_model_folder)
    words = (elmo_fixture / "vocab_test.txt").read_text().strip().split("\n")
    with h5py.File(elmo_fixture / "elmo_token_embeddings.hdf5", "r") as embeddings:
        expected = embeddings["embedding"][...]
    # AllenNLP's test feeds the words in 10 batches of 50 (458 rows: the file holds one more than the vocab).
    inputs = tokenizer([words], is_split_into_words=True, return_tensors="pt")
    with torch.no_grad():
        layer0 = model(**inputs, output_hidden_states=True).hidden_states[0][0]
    projection = model.config.projection_dim
    assert torch.equal(layer0[:, :projection], layer0[:, projection:])
    actual = layer0[:, :projection].numpy()
    assert np.allclose(actual, expected[: len(words)], atol=1e-6)
    print(f"token layer, {len(words)} words: max |diff| = {np.abs(actual - expected[: len(words)]).max():.3g}")
