"""The bundled default model: it loads, it is small, its page is a valid Hub model card with the measured
perplexity, and `elmo-embed` uses it when no model is given."""

from __future__ import annotations

import json
from pathlib import Path

import h5py
import torch
from huggingface_hub import ModelCard
from transformers import AutoModel, AutoModelForPreTraining, AutoTokenizer

from inference.embed import main as embed_main
from modeling_elmo import DEFAULT_MODEL, ElmoForBidirectionalLM, ElmoModel
from training.lm_vocabulary import LmVocabulary

FOLDER = Path(DEFAULT_MODEL)
REPOSITORY = Path(__file__).resolve().parents[1]


def test_default_model_is_small_and_loads_as_biLM_and_language_model():
    weights = FOLDER / "model.safetensors"
    assert weights.stat().st_size < 25 * 2**20
    assert isinstance(AutoModel.from_pretrained(DEFAULT_MODEL), ElmoModel)
    language_model = AutoModelForPreTraining.from_pretrained(DEFAULT_MODEL)
    assert isinstance(language_model, ElmoForBidirectionalLM)
    vocabulary = LmVocabulary.from_file(FOLDER / "vocab.txt")
    assert len(vocabulary) == language_model.config.vocab_size
    assert not list(FOLDER.glob("*.py")), "the bundled copy runs on the installed package's classes"


def test_default_model_card_is_a_hub_page_with_the_measured_perplexity():
    card = ModelCard.load(FOLDER / "README.md")
    data = card.data
    assert (data.library_name, data.pipeline_tag, data.language) == ("transformers", "feature-extraction", "en")
    assert data.license == "cc-by-sa-4.0" and data.datasets
    result = data.eval_results[0]
    assert result.metric_type == "perplexity"
    measured = json.loads((FOLDER / "eval_results.json").read_text())["perplexity"]
    assert abs(result.metric_value - measured) < 0.06  # the card's figure is the one training measured, rounded
    for heading in ("## Usage", "## Training", "## Limitations", "## Source"):
        assert heading in card.text
    assert "training/recipes/default_model.sh" in card.text and "(perplexity.png)" in card.text
    assert (FOLDER / "perplexity.png").stat().st_size > 0
    assert "{{" not in card.text


def test_default_model_gives_contextual_vectors():
    model = AutoModel.from_pretrained(DEFAULT_MODEL).eval()
    tokenizer = AutoTokenizer.from_pretrained(DEFAULT_MODEL)
    batch = tokenizer(
        [["a", "river", "bank", "."], ["a", "savings", "bank", "."]], is_split_into_words=True, return_tensors="pt"
    )
    with torch.no_grad():
        layers = model(**batch, output_hidden_states=True).hidden_states
    assert torch.equal(layers[0][0, 2], layers[0][1, 2])  # the token layer does not see the context
    # The biLSTM layers do: "bank" follows "river" or "savings" (forward half, about 0.2 apart at most here) and
    # precedes the same "." (backward half, the same).
    width = model.config.projection_dim
    for layer in layers[1:]:
        river_bank, savings_bank = layer[0, 2], layer[1, 2]
        assert (river_bank[:width] - savings_bank[:width]).abs().max() > 0.05
        torch.testing.assert_close(river_bank[width:], savings_bank[width:], rtol=0, atol=1e-6)


def test_elmo_embed_uses_the_default_model(tmp_path):
    output = tmp_path / "vectors.hdf5"
    embed_main([str(REPOSITORY / "examples" / "sentences.txt"), str(output)])
    lines = (REPOSITORY / "examples" / "sentences.txt").read_text().splitlines()
    with h5py.File(output, "r") as file:
        width = 2 * AutoModel.from_pretrained(DEFAULT_MODEL).config.projection_dim
        assert file["0"].shape == (3, len(lines[0].split()), width)
        assert file["4"].shape == (3, 0, width)  # the empty line
        assert len(json.loads(file["sentence_to_index"].asstr()[0])) == len({line.strip() for line in lines})
