"""Every layer of the converted model against the independent float64 reference (tests/helpers/reference_bilm.py),
on awkward input, for every kind of options.json, with the LSTM state carried across two batches."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch
from original_files import read_weights, small_options, write_original_model
from reference_bilm import ReferenceBiLM

from elmo_transformers.conversion.allennlp import load_allennlp_model
from modeling_elmo import ElmoTokenizer

# Unicode, a word over 48 bytes, one cut inside a 2-byte character, an empty sentence, empty-string words,
# literal sentence markers, a word with a space, rows of different lengths.
AWKWARD_BATCHES = [
    [
        ["Größe", "naïve", "日本語", "emoji🙂"],
        ["a" * 60, "é" * 30],
        [],
        ["", "x", ""],
        ["<S>", "</S>", "New York"],
    ],
    [["b"], ["c", "d", "e", "f", "g", "h", "i"], ["z"], [], ["the", "end"]],
]

VARIANTS = {
    "small": {},
    "no_skip_connections": {"use_skip_connections": False},
    "skip_key_missing": {"use_skip_connections": "<missing>"},
    "tanh": {"activation": "tanh"},
    "no_highway": {"n_highway": 0},
    "one_layer": {"n_layers": 1},
    "three_layers": {"n_layers": 3},
    "no_clipping": {"cell_clip": None, "proj_clip": None},
    "clip_keys_missing": {"cell_clip": "<missing>", "proj_clip": "<missing>"},
    "tight_clipping": {"cell_clip": 1.0, "proj_clip": 0.5},
    "training_n_characters": {"n_characters": 261},
}


def _run_reference(reference: ReferenceBiLM, batches: list[list[list[str]]]) -> list[list[list[np.ndarray]]]:
    """Per batch, per row, the reference layers; row k carries its state from batch to batch."""
    states = [None] * len(batches[0])
    results = []
    for batch in batches:
        rows = []
        for row, words in enumerate(batch):
            layers, states[row] = reference.run_sentence(words, states[row])
            rows.append(layers)
        results.append(rows)
    return results


def _max_difference(model, tokenizer, batches, expected) -> float:
    state = None
    worst = 0.0
    for batch, expected_rows in zip(batches, expected, strict=True):
        inputs = tokenizer(batch, is_split_into_words=True, padding=True, return_tensors="pt")
        with torch.no_grad():
            output = model(**inputs, state=state, use_cache=True, output_hidden_states=True)
        state = output.state
        assert len(output.hidden_states) == model.config.num_hidden_layers + 1
        for row, (words, expected_layers) in enumerate(zip(batch, expected_rows, strict=True)):
            for layer, expected_layer in zip(output.hidden_states, expected_layers, strict=True):
                actual = layer[row, : len(words)].double().numpy()
                assert actual.shape == expected_layer.shape
                worst = max(worst, float(np.abs(actual - expected_layer).max(initial=0.0)))
                assert not layer[row, len(words) :].any(), "padding must be exactly zero"
    return worst


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_every_layer_matches_the_float64_reference(variant: str, tmp_path: Path) -> None:
    options_file, weights_file = write_original_model(tmp_path, small_options(**VARIANTS[variant]), seed=7)
    options = json.loads(options_file.read_text())
    reference = ReferenceBiLM(options, read_weights(weights_file))
    expected = _run_reference(reference, AWKWARD_BATCHES)
    if reference.cell_clip is not None:
        assert reference.clip_stats["max_abs_cell"] > reference.cell_clip, "the test data must exercise clipping"
    model = load_allennlp_model(options, weights_file, progress=False)
    tokenizer = ElmoTokenizer()

    float32_difference = _max_difference(model, tokenizer, AWKWARD_BATCHES, expected)
    float64_difference = _max_difference(model.double(), tokenizer, AWKWARD_BATCHES, expected)
    print(f"{variant}: max |diff| float32 {float32_difference:.2e}, float64 {float64_difference:.2e}")
    assert float32_difference < 5e-6
    assert float64_difference < 1e-11


def test_batch_rows_are_independent_of_each_other(tmp_path: Path) -> None:
    """A row's output does not depend on which other sentences share its batch (or their lengths)."""
    options_file, weights_file = write_original_model(tmp_path, small_options(), seed=3)
    model = load_allennlp_model(json.loads(options_file.read_text()), weights_file, progress=False)
    tokenizer = ElmoTokenizer()
    batch = AWKWARD_BATCHES[0]
    with torch.no_grad():
        together = model(**tokenizer(batch, is_split_into_words=True, padding=True, return_tensors="pt"))
        for row, words in enumerate(batch):
            alone = model(**tokenizer([words], is_split_into_words=True, return_tensors="pt"))
            torch.testing.assert_close(
                together.last_hidden_state[row, : len(words)], alone.last_hidden_state[0], rtol=0, atol=1e-6
            )
