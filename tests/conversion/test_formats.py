"""Original -> project -> original, bit for bit; released variants; bilm-tf's token-embedding file."""

from __future__ import annotations

import json
from pathlib import Path

import h5py
import numpy as np
import pytest
from original_files import read_weights, small_options, write_original_model

from elmo_transformers.common.options_json import config_from_options
from elmo_transformers.conversion.allennlp_hdf5 import weight_mappings
from elmo_transformers.conversion.cli import main
from elmo_transformers.conversion.variants import VARIANTS

PARAMETER_COUNTS = {"small": 13_593_296, "medium": 28_027_728, "original": 93_600_848, "original-5.5b": 93_600_848}


def _round_trip(options_file: Path, weights_file: Path, work: Path, *source: str) -> Path:
    model = work / "model"
    exported = work / "exported"
    assert main(["allennlp", *source, "--weights", str(weights_file), "--output", str(model)]) == 0
    assert main(["to-allennlp", "--model", str(model), "--output", str(exported)]) == 0
    original, back = read_weights(weights_file), read_weights(exported / "weights.hdf5")
    assert sorted(original) == sorted(back)
    for name, array in original.items():
        assert back[name].dtype == np.float32, name
        assert back[name].shape == array.shape, name
        assert back[name].tobytes() == array.tobytes(), f"{name} changed in the round trip"
    with h5py.File(exported / "weights.hdf5", "r") as file:
        file.visititems(lambda name, item: pytest.fail(f"{name} has attributes") if item.attrs else None)
    exported_options = json.loads((exported / "options.json").read_text())
    assert (
        config_from_options(exported_options).to_dict()
        == config_from_options(json.loads(options_file.read_text())).to_dict()
    )
    return exported


def test_fixture_round_trip_is_bit_exact(elmo_fixture: Path, tmp_path: Path) -> None:
    options = elmo_fixture / "options.json"
    _round_trip(options, elmo_fixture / "lm_weights.hdf5", tmp_path, "--options", str(options))


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_random_weights_of_each_variant_round_trip(variant: str, tmp_path: Path) -> None:
    options = VARIANTS[variant].options
    if variant != "small":  # the larger variants' structure at a size CI can hold: fewer cells, thinner filters
        options["lstm"].update(dim=64, projection_dim=16)
        options["char_cnn"]["filters"] = [[width, count // 32] for width, count in options["char_cnn"]["filters"]]
    options_file, weights_file = write_original_model(tmp_path / "original", options, seed=5)
    if variant == "small":
        _round_trip(options_file, weights_file, tmp_path, "--variant", "small")
    else:
        _round_trip(options_file, weights_file, tmp_path, "--options", str(options_file))


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_variant_presets_have_the_released_parameter_counts(variant: str) -> None:
    config = config_from_options(VARIANTS[variant].options)
    assert sum(int(np.prod(mapping.shape)) for mapping in weight_mappings(config)) == PARAMETER_COUNTS[variant]
    assert config.num_filters == 2048


def test_variant_with_mismatched_weights_names_the_problem(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    _, weights = write_original_model(tmp_path, small_options(), seed=1)
    code = main(["allennlp", "--variant", "original", "--weights", str(weights), "--output", str(tmp_path / "out")])
    assert code == 2
    assert "dataset CNN/W_cnn_3 is missing (and 7 more); do the options match" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_token_embeddings_match_bilm_tf(elmo_fixture: Path, fixture_model_folder: Path, tmp_path: Path) -> None:
    output = tmp_path / "elmo_token_embeddings.hdf5"
    vocabulary = elmo_fixture / "vocab_test.txt"
    code = main(
        [
            "token-embeddings",
            "--model",
            str(fixture_model_folder),
            "--vocab",
            str(vocabulary),
            "--output",
            str(output),
            "--batch-size",
            "100",
        ]
    )
    assert code == 0
    with h5py.File(output, "r") as actual, h5py.File(elmo_fixture / "elmo_token_embeddings.hdf5", "r") as expected:
        assert list(actual) == ["embedding"]
        assert actual["embedding"].shape == expected["embedding"].shape
        assert actual["embedding"].dtype == np.float32
        assert np.allclose(actual["embedding"][...], expected["embedding"][...], atol=1e-6)
    assert (
        main(
            [
                "token-embeddings",
                "--model",
                str(fixture_model_folder),
                "--vocab",
                str(vocabulary),
                "--output",
                str(output),
            ]
        )
        == 2
    ), "an existing file is not overwritten without --overwrite"


def test_token_embeddings_bad_vocabulary(fixture_model_folder: Path, tmp_path: Path, capsys) -> None:
    vocabulary = tmp_path / "vocab.txt"
    vocabulary.write_bytes(b"good\nbad \xff byte\n")
    code = main(
        [
            "token-embeddings",
            "--model",
            str(fixture_model_folder),
            "--vocab",
            str(vocabulary),
            "--output",
            str(tmp_path / "out.hdf5"),
        ]
    )
    assert code == 2
    assert "vocab.txt, line 2: not UTF-8" in capsys.readouterr().err
    assert not (tmp_path / "out.hdf5").exists()


def test_export_of_something_that_is_not_a_model(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    assert main(["to-allennlp", "--model", str(tmp_path), "--output", str(tmp_path / "out")]) == 2
    assert "not a model folder" in capsys.readouterr().err
