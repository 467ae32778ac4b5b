"""`ElmoConfig` refuses a field of the wrong type or out of range in one line that names the field, what it must be
and what it is, where a model folder is loaded: `from_pretrained` and `elmo-embed --model`."""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from bad_inputs import embed_one_line

from elmo_transformers.common.disk_space import format_bytes
from elmo_transformers.common.model_folder import physical_memory, weight_counts
from modeling_elmo import DEFAULT_MODEL, ElmoConfig, ElmoForBidirectionalLM, ElmoModel
from modeling_elmo.configuration_elmo import ELMO_CONFIG_FIELDS


def _folder_with(fixture_model_folder: Path, destination: Path, **fields: Any) -> Path:
    """A copy of the fixture model whose config.json has `fields` changed, as a hand edit would leave it."""
    folder = Path(shutil.copytree(fixture_model_folder, destination))
    config_file = folder / "config.json"
    config_file.write_text(json.dumps({**json.loads(config_file.read_text()), **fields}))
    return folder


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("projection_dim", -1, "projection_dim must be a positive integer, got -1"),
        ("cell_size", "512", 'cell_size must be a positive integer, got "512"'),
        ("num_highway_layers", 1.5, "num_highway_layers must be an integer >= 0, got 1.5"),
        ("use_skip_connections", "yes", 'use_skip_connections must be true or false, got "yes"'),
        ("cell_clip", -3, "cell_clip must be a positive number or null, got -3"),
        ("dropout", 1.5, "dropout must be a number in [0, 1), got 1.5"),
        ("char_cnn_filters", [[1, "4"]], "char_cnn_filters must be a non-empty list of [width, count] pairs"),
        ("mix_layers", "0,1", 'mix_layers must be a list of layer indices or null, got "0,1"'),
        ("task_encoder", "gru", 'task_encoder must be one of "bilstm", "none", got "gru"'),
        # the edges of each kind of check: JSON's true is no count, a clip of 0 clips everything, a dropout of 1
        # drops everything, and NaN or infinity is no number
        ("num_hidden_layers", True, "num_hidden_layers must be a positive integer, got true"),
        ("max_characters_per_token", 2, "max_characters_per_token must be an integer from 3 to 1024, got 2"),
        ("max_characters_per_token", 1025, "max_characters_per_token must be an integer from 3 to 1024, got 1025"),
        ("proj_clip", 0, "proj_clip must be a positive number or null, got 0"),
        ("classifier_dropout", 1, "classifier_dropout must be a number in [0, 1), got 1"),
        ("mix_dropout", 1, "mix_dropout must be a number in [0, 1), got 1"),
        ("mix_dropout", 1.5, "mix_dropout must be a number in [0, 1), got 1.5"),
        ("lstm_forget_bias", float("nan"), "lstm_forget_bias must be a number, got NaN"),
        ("cell_clip", float("inf"), "cell_clip must be a positive number or null, got Infinity"),
        ("mix_initial_weights", [0.0, float("-inf")], "mix_initial_weights must be a list of numbers or null"),
    ],
)
def test_from_pretrained_names_the_bad_field(
    field: str, value: Any, message: str, fixture_model_folder: Path, tmp_path: Path
) -> None:
    folder = _folder_with(fixture_model_folder, tmp_path / "model", **{field: value})
    with pytest.raises(ValueError) as refusal:
        ElmoModel.from_pretrained(folder)
    assert str(refusal.value).startswith(f"ElmoConfig: {message}")
    assert "\n" not in str(refusal.value)


def test_every_field_is_checked() -> None:
    """A new field declared without a check (`validated_field`) would be taken unchecked."""
    own = [field for field in dataclasses.fields(ElmoConfig) if field.name in ELMO_CONFIG_FIELDS]
    assert [field.name for field in own] == list(ELMO_CONFIG_FIELDS) and "cell_size" in ELMO_CONFIG_FIELDS
    assert [field.name for field in own if not field.metadata.get("validator")] == []


@pytest.mark.slow
def test_elmo_embed_names_config_json_and_the_field(fixture_model_folder: Path, tmp_path: Path) -> None:
    folder = _folder_with(fixture_model_folder, tmp_path / "model", cell_size="512")
    completed = embed_one_line(folder, tmp_path)
    assert completed.returncode == 2
    assert completed.stderr == (
        f'elmo-embed: error: {folder / "config.json"}: ElmoConfig: cell_size must be a positive integer, got "512"\n'
    )


@pytest.mark.slow
def test_a_config_too_big_to_build_is_refused_before_any_work(fixture_model_folder: Path, tmp_path: Path) -> None:
    folder = _folder_with(fixture_model_folder, tmp_path / "model", cell_size=10**11)
    completed = embed_one_line(folder, tmp_path)
    config = folder / "config.json"
    memory = format_bytes(physical_memory())
    assert (completed.returncode, completed.stdout) == (2, "")
    assert completed.stderr.startswith(
        f"elmo-embed: error: {config}: cell_size 100000000000, projection_dim 16, num_hidden_layers 2 make "
    )
    assert completed.stderr.endswith(f"more than this machine's {memory} of memory: the config cannot be built here\n")
    assert not list(tmp_path.glob("out*"))


def test_the_weight_counts_are_the_models(fixture_model_folder: Path) -> None:
    model = ElmoForBidirectionalLM.from_pretrained(DEFAULT_MODEL)
    assert sum(weight_counts(model.config).values()) == model.num_parameters()
    config = ElmoConfig(
        cell_size=24, projection_dim=8, char_cnn_filters=[[1, 4], [2, 8]], num_highway_layers=1, num_hidden_layers=3
    )
    config.update({"word_vocab_size": 10, "word_embedding_dim": 7, "bos_word_id": 1, "eos_word_id": 2})
    assert sum(weight_counts(config).values()) == ElmoModel(config).num_parameters()


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("max_characters_per_token", 1000),
        ("special_char_ids", {"bos": 1, "bow": 259, "eos": 2, "eow": 260, "pad": 261}),
    ],
)
@pytest.mark.slow
def test_a_tokenizer_that_frames_words_otherwise_is_refused(
    fixture_model_folder: Path, tmp_path: Path, name: str, value: Any
) -> None:
    folder = Path(shutil.copytree(fixture_model_folder, tmp_path / "model"))
    tokenizer_file = folder / "tokenizer_config.json"
    tokenizer = json.loads(tokenizer_file.read_text())
    expected = tokenizer[name]
    tokenizer_file.write_text(json.dumps({**tokenizer, name: value}))
    completed = embed_one_line(folder, tmp_path)
    assert (completed.returncode, completed.stdout) == (2, "")
    assert completed.stderr == (
        f"elmo-embed: error: {folder / 'config.json'}: {name} is {json.dumps(expected)} but tokenizer_config.json "
        f"makes {json.dumps(value)}: the model and its tokenizer must frame words alike\n"
    )
    assert not list(tmp_path.glob("out*"))
