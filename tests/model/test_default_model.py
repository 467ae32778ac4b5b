"""The bundled default model: it loads, it is small, its page is a valid Hub model card with the measured
perplexity, and `elmo-embed` uses it when no model is given."""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import h5py
import pytest
import torch
from bad_inputs import flip_bytes_in_the_middle
from huggingface_hub import ModelCard
from transformers import AutoModel, AutoModelForPreTraining, AutoTokenizer
from wheels import build_wheel

from elmo_transformers.inference.embed import main as embed_main
from elmo_transformers.training.pretraining.lm_vocabulary import LmVocabulary
from elmo_transformers.training.pretraining.model_card import link_code_files_to_package
from modeling_elmo import DEFAULT_MODEL, ElmoForBidirectionalLM, ElmoModel

FOLDER = Path(DEFAULT_MODEL)
REPOSITORY = Path(__file__).resolve().parents[2]


def test_default_model_is_small_and_loads_as_biLM_and_language_model():
    weights = FOLDER / "model.safetensors"
    assert weights.stat().st_size < 25 * 2**20
    assert isinstance(AutoModel.from_pretrained(DEFAULT_MODEL), ElmoModel)
    language_model = AutoModelForPreTraining.from_pretrained(DEFAULT_MODEL)
    assert isinstance(language_model, ElmoForBidirectionalLM)
    vocabulary = LmVocabulary.from_file(FOLDER / "vocab.txt")
    assert len(vocabulary) == language_model.config.vocab_size


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


def test_bundled_folder_records_its_files_and_they_match():
    """Every file but the model page and the code files, which link to the package's modules and change with them
    (the folder had no SHA256SUMS: a damaged copy of it embedded in silence)."""
    names = sorted(
        path.name for path in FOLDER.iterdir() if not path.is_symlink() and path.name not in ("README.md", "SHA256SUMS")
    )
    assert {"model.safetensors", "config.json", "tokenizer_config.json", "vocab.txt"} <= set(names)
    assert (FOLDER / "SHA256SUMS").read_text() == "".join(
        f"{hashlib.sha256((FOLDER / name).read_bytes()).hexdigest()}  {name}\n" for name in names
    )
    if shutil.which("sha256sum"):
        assert subprocess.run(["sha256sum", "--strict", "--quiet", "-c", "SHA256SUMS"], cwd=FOLDER).returncode == 0


def test_a_damaged_copy_of_the_bundled_folder_is_refused_by_elmo_embed(tmp_path, capsys):
    """64 bytes flipped inside a copy's weights embedded, off by up to 0.066, exit 0."""
    copy = Path(shutil.copytree(FOLDER, tmp_path / "default_model"))  # (the code links become copies)
    weights = copy / "model.safetensors"
    flip_bytes_in_the_middle(weights)
    sentences = REPOSITORY / "examples" / "sentences.txt"
    assert embed_main([str(sentences), str(tmp_path / "out.hdf5"), "--model", str(copy)]) == 2
    error = capsys.readouterr().err
    assert error.startswith(f"elmo-embed: error: {weights}: its sha256 is ") and error.count("\n") == 1
    assert "but SHA256SUMS records af091c340e9df258...: the file is damaged;" in error
    assert not (tmp_path / "out.hdf5").exists()


# Loads the bundled folder as remote code in a process that never imports the package (transformers alone), and
# prints the top layer of two sentences.
_REMOTE_CODE_RUN = """
import importlib.util, json, pathlib, sys
import torch
from transformers import AutoModel, AutoTokenizer
folder = pathlib.Path(importlib.util.find_spec("modeling_elmo").submodule_search_locations[0]) / "default_model"
model = AutoModel.from_pretrained(folder, trust_remote_code=True).eval()
tokenizer = AutoTokenizer.from_pretrained(folder, trust_remote_code=True)
assert "modeling_elmo" not in sys.modules, "the package was imported"
batch = tokenizer([["a", "river", "bank", "."], ["Hello"]], is_split_into_words=True, padding=True, return_tensors="pt")
with torch.no_grad():
    top = model(**batch).last_hidden_state
print(json.dumps({"classes": [type(model).__module__, type(tokenizer).__module__], "top": top.tolist()}))
"""


@pytest.mark.slow
def test_bundled_folder_loads_as_remote_code_without_the_package(tmp_path):
    environment = {"HF_MODULES_CACHE": str(tmp_path / "modules"), "HF_HUB_OFFLINE": "1", "PATH": ""}
    completed = subprocess.run(
        [sys.executable, "-c", _REMOTE_CODE_RUN], capture_output=True, text=True, env=environment, check=False
    )
    assert completed.returncode == 0, completed.stderr[-3000:]
    result = json.loads(completed.stdout.splitlines()[-1])
    assert all(module.startswith("transformers_modules.") for module in result["classes"]), result["classes"]
    model = AutoModel.from_pretrained(DEFAULT_MODEL).eval()
    tokenizer = AutoTokenizer.from_pretrained(DEFAULT_MODEL)
    batch = tokenizer(
        [["a", "river", "bank", "."], ["Hello"]], is_split_into_words=True, padding=True, return_tensors="pt"
    )
    with torch.no_grad():
        expected = model(**batch).last_hidden_state
    torch.testing.assert_close(torch.tensor(result["top"]), expected, rtol=0, atol=1e-6)


def test_bundled_code_files_are_what_save_pretrained_writes_and_link_to_the_package(tmp_path):
    ElmoForBidirectionalLM.from_pretrained(DEFAULT_MODEL).save_pretrained(tmp_path)
    AutoTokenizer.from_pretrained(DEFAULT_MODEL).save_pretrained(tmp_path)
    saved = sorted(path.name for path in tmp_path.glob("*.py"))
    assert saved and sorted(path.name for path in FOLDER.glob("*.py")) == saved
    for name in saved:
        link = FOLDER / name
        assert link.is_symlink() and link.readlink() == Path("..") / name, f"{link} should link to ../{name}"
    # what `elmo_transformers.training.pretraining.model_card --bundled` does to a saved folder
    link_code_files_to_package(tmp_path)
    assert all((tmp_path / name).readlink() == Path("..") / name for name in saved)


def test_installed_package_carries_the_code_files(tmp_path):
    """A wheel built from this checkout holds the bundled folder's code files as real files, equal to the modules,
    and the model page template."""
    wheel = build_wheel(tmp_path)
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        for path in FOLDER.glob("*.py"):
            inside = f"modeling_elmo/default_model/{path.name}"
            assert inside in names, f"{inside} is missing from {wheel.name}"
            assert archive.read(inside) == (REPOSITORY / "modeling_elmo" / path.name).read_bytes()
        # The model page template that `elmo-convert` and `elmo-model-card` fill, beside common/model_card_template.py.
        assert archive.read("elmo_transformers/common/model_card.md") == (REPOSITORY / "model_card.md").read_bytes()
