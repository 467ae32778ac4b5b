"""Save/load, Auto classes, remote code where this package is absent, and pipelines."""

from __future__ import annotations

import ast
import json
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from transformers import AutoConfig, AutoModel, AutoModelForSequenceClassification, AutoTokenizer, pipeline
from without_the_package import run_without_the_package

import modeling_elmo.lstm_elmo
from modeling_elmo import ElmoConfig, ElmoModel, ElmoTokenizer

SENTENCES = [["The", "naïve", "café", ""], ["x" * 60], []]


def _encode(tokenizer: ElmoTokenizer) -> dict[str, torch.Tensor]:
    return tokenizer(SENTENCES, is_split_into_words=True, padding=True, return_tensors="pt")


def test_saved_folder_has_code_and_full_auto_map(fixture_model_folder: Path) -> None:
    names = {path.name for path in fixture_model_folder.iterdir()}
    assert {"config.json", "model.safetensors", "tokenizer_config.json"} <= names
    assert {"configuration_elmo.py", "modeling_elmo.py", "lstm_elmo.py", "tokenization_elmo.py"} <= names
    # what the tokenizer and the config import: the text front end (the word splitter, the character-id rule)
    assert "text_elmo.py" in names
    assert not any(name.endswith((".bin", ".pt", ".pkl")) for name in names)
    auto_map = json.loads((fixture_model_folder / "config.json").read_text())["auto_map"]
    assert auto_map["AutoConfig"] == "configuration_elmo.ElmoConfig"
    assert auto_map["AutoModel"] == "modeling_elmo.ElmoModel"
    assert auto_map["AutoTokenizer"][0] == "tokenization_elmo.ElmoTokenizer"


def test_copied_code_imports_only_relative_and_public_packages(fixture_model_folder: Path) -> None:
    # huggingface_hub: a dependency of transformers (its strict dataclasses declare the config, as transformers' own)
    allowed = {*sys.stdlib_module_names, "numpy", "torch", "transformers", "huggingface_hub"}
    for path in fixture_model_folder.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.level == 0:
                assert node.module.split(".")[0] in allowed, f"{path.name} imports {node.module}"
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    assert alias.name.split(".")[0] in allowed, f"{path.name} imports {alias.name}"


def test_save_and_reload_gives_identical_outputs(fixture_model_folder: Path, tmp_path: Path) -> None:
    model = AutoModel.from_pretrained(fixture_model_folder).eval()
    tokenizer = AutoTokenizer.from_pretrained(fixture_model_folder)
    assert isinstance(model, ElmoModel) and isinstance(tokenizer, ElmoTokenizer)
    assert isinstance(AutoConfig.from_pretrained(fixture_model_folder), ElmoConfig)
    model.save_pretrained(tmp_path)
    tokenizer.save_pretrained(tmp_path)
    reloaded = AutoModel.from_pretrained(tmp_path).eval()
    for (name, before), (_, after) in zip(model.state_dict().items(), reloaded.state_dict().items(), strict=True):
        assert torch.equal(before, after), name
    inputs = _encode(tokenizer)
    with torch.no_grad():
        assert torch.equal(model(**inputs).last_hidden_state, reloaded(**inputs).last_hidden_state)


_REMOTE_SCRIPT = """
    import json, sys

    import numpy as np, torch
    import transformers

    folder, auto_class, sentences, expected = sys.argv[1], sys.argv[2], json.loads(sys.argv[3]), sys.argv[4]
    model = getattr(transformers, auto_class).from_pretrained(folder, trust_remote_code=True).eval()
    tokenizer = transformers.AutoTokenizer.from_pretrained(folder, trust_remote_code=True)
    assert type(model).__module__.startswith("transformers_modules"), type(model).__module__
    inputs = tokenizer(sentences, is_split_into_words=True, padding=True, return_tensors="pt")
    with torch.no_grad():
        output = model(**inputs)[0].numpy()
    assert np.allclose(output, np.load(expected), rtol=0, atol=1e-6), np.abs(output - np.load(expected)).max()
    print("remote code OK", type(model).__name__, type(tokenizer).__name__)
    """


def _load_as_remote_code(folder: Path, auto_class: str, expected: torch.Tensor, work: Path) -> str:
    """Load `folder` with `auto_class` in a Python where this package cannot be imported; check its output."""
    np.save(work / "expected.npy", expected.numpy())
    completed = run_without_the_package(
        _REMOTE_SCRIPT, str(folder), auto_class, json.dumps(SENTENCES), str(work / "expected.npy"), work=work
    )
    assert completed.returncode == 0, completed.stderr[-3000:]
    return completed.stdout


@pytest.mark.slow
def test_remote_code_loads_where_the_package_is_not_installed(fixture_model_folder: Path, tmp_path: Path) -> None:
    model = AutoModel.from_pretrained(fixture_model_folder).eval()
    with torch.no_grad():
        expected = model(**_encode(AutoTokenizer.from_pretrained(fixture_model_folder))).last_hidden_state
    stdout = _load_as_remote_code(fixture_model_folder, "AutoModel", expected, tmp_path)
    assert "remote code OK ElmoModel ElmoTokenizer" in stdout


def test_heads_load_as_remote_code(fixture_model_folder: Path, tmp_path: Path) -> None:
    head = AutoModelForSequenceClassification.from_pretrained(
        fixture_model_folder, num_labels=3, mix_mode="per_token", mix_layers=[0, 1]
    ).eval()
    head.save_pretrained(tmp_path / "head")
    tokenizer = AutoTokenizer.from_pretrained(fixture_model_folder)
    tokenizer.save_pretrained(tmp_path / "head")
    with torch.no_grad():
        expected = head(**_encode(tokenizer)).logits
    stdout = _load_as_remote_code(tmp_path / "head", "AutoModelForSequenceClassification", expected, tmp_path)
    assert "remote code OK ElmoForSequenceClassification ElmoTokenizer" in stdout


_REMOTE_WAVEFRONT_SCRIPT = """
    import importlib, json, sys

    import numpy as np, torch
    import transformers

    folder, sentences, expected = sys.argv[1], json.loads(sys.argv[2]), sys.argv[3]
    model = transformers.AutoModel.from_pretrained(folder, trust_remote_code=True, lstm_implementation="wavefront")
    model.eval()
    tokenizer = transformers.AutoTokenizer.from_pretrained(folder, trust_remote_code=True)
    lstm = importlib.import_module(type(model).__module__.rsplit(".", 1)[0] + ".kernels_elmo")
    assert lstm.__name__.startswith("transformers_modules"), lstm.__name__
    calls, run = [], lstm.LSTM_IMPLEMENTATIONS["wavefront"]
    lstm.LSTM_IMPLEMENTATIONS["wavefront"] = lambda *args, **kwargs: calls.append(1) or run(*args, **kwargs)
    inputs = tokenizer(sentences, is_split_into_words=True, padding=True, return_tensors="pt")
    with torch.no_grad():
        output = model(**inputs).last_hidden_state.numpy()
    assert calls == [1], calls
    assert np.allclose(output, np.load(expected), rtol=1e-4, atol=1e-5), np.abs(output - np.load(expected)).max()
    print("remote wavefront OK", model.config.lstm_implementation)
    """


@pytest.mark.slow
def test_remote_code_carries_the_lstm_module_and_runs_the_wavefront(fixture_model_folder: Path, tmp_path: Path) -> None:
    """`save_pretrained` copies lstm_elmo.py (modeling_elmo.py imports it); loaded as remote code where the package
    cannot be imported, with `lstm_implementation="wavefront"`, the copy's wavefront runs, to the numbers of the
    package's layer_by_layer."""
    model = AutoModel.from_pretrained(fixture_model_folder, lstm_implementation="layer_by_layer").eval()
    model.save_pretrained(tmp_path / "saved")
    AutoTokenizer.from_pretrained(fixture_model_folder).save_pretrained(tmp_path / "saved")
    saved = tmp_path / "saved" / "lstm_elmo.py"
    assert saved.read_text() == (Path(modeling_elmo.lstm_elmo.__file__)).read_text()
    with torch.no_grad():
        expected = model(**_encode(AutoTokenizer.from_pretrained(fixture_model_folder))).last_hidden_state
    np.save(tmp_path / "expected.npy", expected.numpy())
    completed = run_without_the_package(
        _REMOTE_WAVEFRONT_SCRIPT,
        str(tmp_path / "saved"),
        json.dumps(SENTENCES),
        str(tmp_path / "expected.npy"),
        work=tmp_path,
    )
    assert completed.returncode == 0, completed.stderr[-3000:]
    assert "remote wavefront OK wavefront" in completed.stdout


def test_feature_extraction_pipeline(fixture_model_folder: Path) -> None:
    extractor = pipeline("feature-extraction", model=str(fixture_model_folder))
    features = np.asarray(extractor("The café is open ."))
    assert features.shape == (1, 5, 32)
    model = AutoModel.from_pretrained(fixture_model_folder).eval()
    tokenizer = AutoTokenizer.from_pretrained(fixture_model_folder)
    with torch.no_grad():
        direct = model(**tokenizer("The café is open .", return_tensors="pt")).last_hidden_state
    np.testing.assert_array_equal(features, direct.numpy())
