"""The model page every converted folder gets: metadata that parses, the measured parity, an honest body."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
from huggingface_hub import ModelCard

from elmo_transformers.common.checksums import file_sha256
from elmo_transformers.common.errors import ConversionError
from elmo_transformers.conversion.hub import check_model_folder


def test_card_metadata_parses_and_names_the_source(elmo_fixture: Path, fixture_model_folder: Path) -> None:
    card = check_model_folder(fixture_model_folder)
    assert card.data.library_name == "transformers"
    assert card.data.pipeline_tag == "feature-extraction"
    assert card.data.license == "apache-2.0"
    assert card.data.language == "en"
    assert "elmo" in card.data.tags
    assert card.data.source_weights == [
        {"file": "lm_weights.hdf5", "sha256": file_sha256(elmo_fixture / "lm_weights.hdf5")}
    ]
    options_sha256 = file_sha256(elmo_fixture / "options.json")
    assert card.data.source_options == {"file": "options.json", "sha256": options_sha256}
    assert f"- options `options.json` (sha256 `{options_sha256}`)" in card.text
    assert 0 < card.data.parity_max_abs_difference < 5e-6


def test_card_body_has_what_a_newcomer_needs(fixture_model_folder: Path) -> None:
    text = ModelCard.load(fixture_model_folder / "README.md").text
    for heading in (
        "## Usage",
        "## Architecture",
        "## Parity with the source weights",
        "## State",
        "## Limitations",
        "## Citation",
    ):
        assert heading in text
    assert 'AutoModel.from_pretrained("elmo-fixture", trust_remote_code=True)' in text
    assert "| biLSTM | 2 layers per direction, 64 cells, projection 16" in text
    assert "{{" not in text and "}}" not in text, "every template variable is filled"


def test_folder_check_names_what_is_missing(fixture_model_folder: Path, tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text("{}")
    with pytest.raises(ConversionError, match=re.escape("missing model.safetensors, tokenizer_config.json, README.md")):
        check_model_folder(tmp_path)
    for path in fixture_model_folder.iterdir():
        (tmp_path / path.name).write_bytes(path.read_bytes())
    card = (tmp_path / "README.md").read_text().replace("pipeline_tag: feature-extraction\n", "")
    (tmp_path / "README.md").write_text(card)
    with pytest.raises(ConversionError, match="metadata lacks pipeline_tag"):
        check_model_folder(tmp_path)


def test_a_damaged_folder_is_not_pushed(fixture_model_folder: Path, tmp_path: Path) -> None:
    """--push-to-hub checked the files' presence and the page, not their content."""
    folder = Path(shutil.copytree(fixture_model_folder, tmp_path / "model"))
    config = folder / "config.json"
    config.write_text(config.read_text().replace('"cell_clip": 3.0', '"cell_clip": 4.0'))
    with pytest.raises(ConversionError, match=rf"^{config}: its sha256 is [0-9a-f]{{16}}\.\.\., but SHA256SUMS"):
        check_model_folder(folder)
