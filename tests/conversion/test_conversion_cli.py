"""`elmo-convert allennlp`: the output folder, and a one-line error naming the problem for each bad input."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import h5py
import numpy as np
import pytest
import torch
from original_files import read_weights, small_options, write_original_model

from elmo_transformers.common.errors import ConversionError
from elmo_transformers.common.options_json import config_from_options
from elmo_transformers.conversion.allennlp_hdf5 import weight_mappings
from elmo_transformers.conversion.cli import main
from elmo_transformers.conversion.weight_mapping import check_finite
from modeling_elmo import ElmoModel


@pytest.fixture
def original(tmp_path: Path) -> tuple[Path, Path]:
    return write_original_model(tmp_path / "original", small_options(), seed=11)


def _convert(capsys: pytest.CaptureFixture, options: Path, weights: Path, output: Path, *extra: str) -> tuple[int, str]:
    code = main(["allennlp", "--options", str(options), "--weights", str(weights), "--output", str(output), *extra])
    return code, capsys.readouterr().err.strip().splitlines()[-1] if code else ""


def _rewrite_weights(weights: Path, change) -> None:
    arrays = read_weights(weights)
    change(arrays)
    weights.unlink()
    with h5py.File(weights, "w") as file:
        for name, array in arrays.items():
            file.create_dataset(name, data=array)


def test_every_dataset_maps_to_parameters_bit_for_bit(original: tuple[Path, Path], tmp_path: Path) -> None:
    options, weights = original
    output = tmp_path / "converted"
    assert main(["allennlp", "--options", str(options), "--weights", str(weights), "--output", str(output)]) == 0
    model = ElmoModel.from_pretrained(output)
    arrays = read_weights(weights)
    parameters = model.state_dict()
    config = model.config
    mapped = set()
    for mapping in weight_mappings(config):
        for name, array in zip(mapping.parameters, mapping.to_model(arrays[mapping.dataset]), strict=True):
            assert torch.equal(parameters[name], torch.from_numpy(np.ascontiguousarray(array)))
            mapped.add(name)
    assert mapped == set(parameters), "every parameter comes from the file"
    assert set(arrays) == {mapping.dataset for mapping in weight_mappings(config)}
    assert not parameters["char_encoder.char_embedding.weight"][0].any()
    # W_0 splits into the input and state halves with nothing lost.
    w_0 = arrays["RNN_1/RNN/MultiRNNCell/Cell1/LSTMCell/W_0"]
    layer = model.backward_lstm.layers[1]
    rebuilt = torch.cat([layer.input_projection.weight, layer.state_projection.weight], dim=1).T
    assert torch.equal(rebuilt, torch.from_numpy(w_0))


def test_existing_output_is_refused_then_replaced_with_overwrite(
    original: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    output = tmp_path / "converted"
    output.mkdir()
    (output / "keep.txt").write_text("mine")
    code, error = _convert(capsys, *original, output)
    assert code == 2 and "already exists" in error and "--overwrite" in error
    assert (output / "keep.txt").read_text() == "mine"
    code, _ = _convert(capsys, *original, output, "--overwrite")
    assert code == 0
    assert (output / "model.safetensors").is_file() and not (output / "keep.txt").exists()
    assert sorted(path.name for path in tmp_path.iterdir()) == ["converted", "original"], "no temporary leftovers"


def test_missing_dataset(original: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    options, weights = original
    _rewrite_weights(weights, lambda arrays: arrays.pop("CNN_high_1/W_carry"))
    code, error = _convert(capsys, options, weights, tmp_path / "out")
    assert code == 2 and "CNN_high_1/W_carry is missing" in error
    assert not (tmp_path / "out").exists()


def test_wrong_shape_names_expected_and_actual(original: tuple[Path, Path], tmp_path: Path, capsys) -> None:
    options, weights = original
    _rewrite_weights(weights, lambda arrays: arrays.update({"CNN_proj/b_proj": np.zeros(9, np.float32)}))
    code, error = _convert(capsys, options, weights, tmp_path / "out")
    assert code == 2 and "CNN_proj/b_proj has shape (9,), the options imply (8,)" in error


def test_options_that_do_not_match_the_weights(original: tuple[Path, Path], tmp_path: Path, capsys) -> None:
    options, weights = original
    fewer_layers = json.loads(options.read_text())
    fewer_layers["lstm"]["n_layers"] = 1
    options.write_text(json.dumps(fewer_layers))
    code, error = _convert(capsys, options, weights, tmp_path / "out")
    assert code == 2 and "Cell1" in error and "not described by the options" in error
    fewer_layers["lstm"]["dim"] = 64
    fewer_layers["lstm"]["n_layers"] = 2
    options.write_text(json.dumps(fewer_layers))
    code, error = _convert(capsys, options, weights, tmp_path / "out")
    assert code == 2 and "W_0 has shape (16, 128), the options imply (16, 256)" in error


def test_weights_file_that_is_not_hdf5(original: tuple[Path, Path], tmp_path: Path, capsys) -> None:
    options, _ = original
    not_hdf5 = tmp_path / "weights.hdf5"
    not_hdf5.write_text("this is not hdf5")
    code, error = _convert(capsys, options, not_hdf5, tmp_path / "out")
    assert code == 2 and "is not an HDF5 weights file" in error
    code, error = _convert(capsys, options, tmp_path / "absent.hdf5", tmp_path / "out")
    assert code == 2 and "no such weights file" in error


def test_bad_options_files(original: tuple[Path, Path], tmp_path: Path, capsys) -> None:
    _, weights = original
    options = tmp_path / "options.json"
    options.write_text("{not json")
    assert "is not a JSON options file" in _convert(capsys, options, weights, tmp_path / "out")[1]
    options.write_text(json.dumps({"lstm": {"dim": 32}, "char_cnn": {}}))
    assert "missing required option char_cnn.embedding" in _convert(capsys, options, weights, tmp_path / "out")[1]
    broken = small_options(activation="sigmoid")
    options.write_text(json.dumps(broken))
    assert (
        'char_cnn.activation must be one of "relu", "tanh", got "sigmoid"'
        in _convert(capsys, options, weights, tmp_path / "out")[1]
    )
    assert "no such options file" in _convert(capsys, tmp_path / "absent.json", weights, tmp_path / "out")[1]


def test_console_script_help_has_examples() -> None:
    completed = subprocess.run(
        [sys.executable, "-m", "elmo_transformers.conversion.cli", "allennlp", "--help"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert "examples:" in completed.stdout and "--overwrite" in completed.stdout


def test_training_options_are_kept(tmp_path: Path) -> None:
    config = config_from_options(small_options(n_tokens_vocab=793471, dropout=0.1, unroll_steps=20, batch_size=128))
    assert config.vocab_size == 793471
    assert config.training_options == {"unroll_steps": 20, "batch_size": 128}
    assert config.cell_clip == 3.0 and config.use_skip_connections is True


def test_converted_folder_is_readable_by_all(fixture_model_folder: Path) -> None:
    """transformers writes its weight files private (mode 600); a model folder is meant to be shared."""
    modes = {path.name: oct(path.stat().st_mode & 0o777) for path in fixture_model_folder.iterdir()}
    assert modes and set(modes.values()) == {"0o644"}, modes
    assert oct(fixture_model_folder.stat().st_mode & 0o777) == "0o755"


@pytest.mark.parametrize(
    ("override", "problem"),
    [
        ({"dim": "4096"}, 'lstm.dim must be a positive integer, got "4096"'),
        ({"dim": 64.5}, "lstm.dim must be a positive integer, got 64.5"),
        ({"projection_dim": 0}, "lstm.projection_dim must be a positive integer, got 0"),
        ({"n_layers": True}, "lstm.n_layers must be a positive integer, got true"),
        ({"cell_clip": "3"}, 'lstm.cell_clip must be a positive number or null, got "3"'),
        ({"use_skip_connections": "yes"}, 'lstm.use_skip_connections must be true or false, got "yes"'),
        (
            {"filters": "lots"},
            'char_cnn.filters must be a non-empty list of [width, count] pairs of positive integers, got "lots"',
        ),
        (
            {"filters": [[1, 4], [2]]},
            "char_cnn.filters must be a non-empty list of [width, count] pairs of positive integers, got [[1, 4], [2]]",
        ),
        ({"n_highway": -1}, "char_cnn.n_highway must be an integer >= 0, got -1"),
        ({"n_characters": 300}, "char_cnn.n_characters must be one of 261, 262, got 300"),
        ({"char_embedding_dim": None}, "char_cnn.embedding.dim must be a positive integer, got null"),
        ({"dropout": 1.5}, "dropout must be a number in [0, 1), got 1.5"),
        ({"n_tokens_vocab": "many"}, 'n_tokens_vocab must be a positive integer or null, got "many"'),
        # the same checks as config.json's fields (the checks declared with ElmoConfig's fields), to their edges
        ({"dropout": 1}, "dropout must be a number in [0, 1), got 1"),
        ({"cell_clip": 0}, "lstm.cell_clip must be a positive number or null, got 0"),
        ({"proj_clip": float("nan")}, "lstm.proj_clip must be a positive number or null, got NaN"),
        ({"max_characters_per_token": 2}, "char_cnn.max_characters_per_token must be an integer from 3 to 1024, got 2"),
    ],
    ids=lambda value: "-".join(f"{key}={value!r}" for key, value in value.items()) if isinstance(value, dict) else "",
)
def test_an_option_of_the_wrong_type_or_range_is_named(
    original: tuple[Path, Path], tmp_path: Path, capsys, override: dict, problem: str
) -> None:
    options_file, weights = original
    options_file.write_text(json.dumps(small_options(**override)))
    code, error = _convert(capsys, options_file, weights, tmp_path / "out")
    assert (code, error) == (2, f"elmo-convert: error: {options_file}: {problem}")
    assert not (tmp_path / "out").exists()


def test_a_section_that_is_not_an_object_is_named(original: tuple[Path, Path], tmp_path: Path, capsys) -> None:
    options_file, weights = original
    options_file.write_text(json.dumps({**small_options(), "lstm": 5}))
    code, error = _convert(capsys, options_file, weights, tmp_path / "out")
    assert (code, error) == (2, f"elmo-convert: error: {options_file}: lstm must be an object, got 5")


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_the_finite_check_covers_every_float_dtype(dtype: type) -> None:
    """Every source format's weights go through `check_finite`: a bilm-tf checkpoint or an ELMoForManyLangs model
    may hold float16 tensors."""
    weights = np.ones((3, 4), dtype=dtype)
    weights[1, 2] = np.inf
    with pytest.raises(ConversionError, match=r"^source: tensor x holds a non-finite value \(inf\) at index \[1, 2\]"):
        check_finite(weights, "source: tensor x")


def test_weights_holding_nan_name_the_dataset(original: tuple[Path, Path], tmp_path: Path, capsys) -> None:
    options, weights = original

    def damage(arrays: dict) -> None:
        arrays["CNN_proj/W_proj"][2, 3] = np.nan

    _rewrite_weights(weights, damage)
    code, error = _convert(capsys, options, weights, tmp_path / "out")
    assert (code, error) == (
        2,
        f"elmo-convert: error: {weights}: dataset CNN_proj/W_proj holds a non-finite value (nan) at index [2, 3]:"
        " the weights are damaged",
    )
    assert not (tmp_path / "out").exists()
