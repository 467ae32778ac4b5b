"""`elmo_transformers.common.model_folder`: one verdict on "is this a usable ELMo model folder", the same line from
every command."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file, save_file

from elmo_transformers.common.errors import ConversionError, DataFileError
from elmo_transformers.common.model_folder import model_folder_problem, require_model_folder
from elmo_transformers.training.pretraining.lm_vocabulary import LmVocabulary
from elmo_transformers.training.pretraining.starting_model import load_starting_model


def _copy(folder: Path, destination: Path) -> Path:
    return Path(shutil.copytree(folder, destination))


def test_a_converted_folder_has_no_problem(fixture_model_folder: Path) -> None:
    assert model_folder_problem(fixture_model_folder) is None
    require_model_folder(fixture_model_folder, ValueError)


def test_each_problem_is_named_in_one_line(fixture_model_folder: Path, tmp_path: Path) -> None:
    missing = tmp_path / "absent"
    assert model_folder_problem(missing) == f"{missing}: no such model folder"
    assert model_folder_problem(tmp_path) == f"{tmp_path}: not a model folder (no config.json)"

    not_json = _copy(fixture_model_folder, tmp_path / "not-json")
    (not_json / "config.json").write_text("[1, 2]")  # JSON, but not an object
    assert model_folder_problem(not_json).startswith(f"{not_json / 'config.json'}: not a JSON object: ")
    (not_json / "config.json").write_text("{")
    assert model_folder_problem(not_json).startswith(f"{not_json / 'config.json'}: not a JSON object: ")

    bert = _copy(fixture_model_folder, tmp_path / "bert")
    (bert / "config.json").write_text('{"model_type": "bert"}')
    assert model_folder_problem(bert) == f"{bert}: model_type is 'bert', expected 'elmo'"

    truncated = _copy(fixture_model_folder, tmp_path / "truncated")
    weights = truncated / "model.safetensors"
    os.truncate(weights, weights.stat().st_size // 2)
    problem = model_folder_problem(truncated)
    assert problem.startswith(f"{weights}: the weights cannot be read (")
    assert problem.endswith("the file is damaged or incomplete; copy or convert it again")
    for problem in (model_folder_problem(path) for path in (missing, tmp_path, not_json, bert, truncated)):
        assert "\n" not in problem


def test_hub_names_are_left_to_the_loader_only_when_asked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert model_folder_problem("allenai/elmo", hub=True) is None
    assert model_folder_problem("allenai/elmo") == "allenai/elmo: no such model folder"
    assert model_folder_problem("./absent", hub=True) == "./absent: no such model folder", "a path, not a repo id"


def test_require_raises_the_callers_error_type(tmp_path: Path) -> None:
    with pytest.raises(DataFileError, match=r"no config\.json"):
        require_model_folder(tmp_path, DataFileError)


def test_pretraining_from_a_folder_that_is_not_a_model(tmp_path: Path) -> None:
    vocabulary_file = tmp_path / "vocab.txt"
    vocabulary_file.write_text("<S>\n</S>\n<UNK>\nthe\n")
    vocabulary = LmVocabulary.from_file(vocabulary_file)
    with pytest.raises(DataFileError, match=r"not a model folder \(no config\.json\)"):
        load_starting_model(vocabulary, model_name_or_path=str(tmp_path))


def test_pretraining_from_a_damaged_folder_is_refused(fixture_model_folder: Path, tmp_path: Path) -> None:
    """A starting model with a flipped byte in its weights was trained on in silence."""
    folder = _copy(fixture_model_folder, tmp_path / "model")
    weights = folder / "model.safetensors"
    data = bytearray(weights.read_bytes())
    data[len(data) // 2] ^= 0x01
    weights.write_bytes(bytes(data))
    vocabulary_file = tmp_path / "vocab.txt"
    vocabulary_file.write_text("<S>\n</S>\n<UNK>\nthe\n")
    with pytest.raises(DataFileError, match=rf"^{weights}: its sha256 is [0-9a-f]{{16}}\.\.\., but SHA256SUMS records"):
        load_starting_model(LmVocabulary.from_file(vocabulary_file), model_name_or_path=str(folder))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("value", [float("nan"), float("inf"), float("-inf")])
def test_a_non_finite_weight_is_named_for_every_command(
    value: float, dtype: torch.dtype, fixture_model_folder: Path, tmp_path: Path
) -> None:
    """The converters (`require_model_folder(..., ConversionError)`), elmo-embed and training share this check, for
    weights saved in any floating dtype."""
    folder = _copy(fixture_model_folder, tmp_path / "nan")
    weights = folder / "model.safetensors"
    tensors = {
        name: tensor.to(dtype) if tensor.is_floating_point() else tensor for name, tensor in load_file(weights).items()
    }
    name = sorted(name for name in tensors if tensors[name].dim() == 2)[-1]
    tensors[name][1, 2] = value
    save_file(tensors, weights, metadata={"format": "pt"})
    assert model_folder_problem(folder) == (
        f"{weights}: {name} holds a non-finite value ({value}) at index [1, 2]: the weights are damaged (every output"
        " would be NaN); copy or convert them again"
    )
    with pytest.raises(ConversionError, match="holds a non-finite value"):
        require_model_folder(folder, ConversionError)


def test_a_converted_folder_records_every_file_but_its_page(fixture_model_folder: Path) -> None:
    """In `sha256sum`'s format, which `sha256sum -c SHA256SUMS` checks without this package: the weights, config,
    tokenizer files and code (only the weights were recorded; a damaged config.json went through)."""
    names = sorted(path.name for path in fixture_model_folder.iterdir() if path.name not in ("SHA256SUMS", "README.md"))
    assert {"config.json", "model.safetensors", "tokenizer_config.json"} <= set(names)
    assert (fixture_model_folder / "SHA256SUMS").read_text() == "".join(
        f"{hashlib.sha256((fixture_model_folder / name).read_bytes()).hexdigest()}  {name}\n" for name in names
    )
    if shutil.which("sha256sum"):
        checked = subprocess.run(["sha256sum", "--strict", "-c", "SHA256SUMS"], cwd=fixture_model_folder)
        assert checked.returncode == 0


def test_a_damaged_config_that_still_reads_is_refused(fixture_model_folder: Path, tmp_path: Path) -> None:
    """A digit changed in config.json (here the LSTM's cell clip, a valid value) loads and computes other vectors."""
    folder = _copy(fixture_model_folder, tmp_path / "model")
    config = folder / "config.json"
    text = config.read_text()
    config.write_text(text.replace('"cell_clip": 3.0', '"cell_clip": 4.0'))
    assert config.read_text() != text
    damaged = rf"^{config}: its sha256 is [0-9a-f]{{16}}\.\.\., but SHA256SUMS records"
    with pytest.raises(ConversionError, match=damaged):
        require_model_folder(folder, ConversionError)
