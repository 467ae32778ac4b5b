"""`elmo-convert allennlp --archive MODEL.zip`: NLPL repository archives, built here from the bilm-tf fixture in the
layouts the repository and its users have (the files at the top level as NLPL ships them, one folder down as a
re-zipped extracted folder, a weights file with another name as simple_elmo accepts), convert to the same weights as
`--options`/`--weights`, with the archive's meta.json on the model page; a bad archive is one line naming the
missing or damaged member."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import pytest
import torch
from huggingface_hub import ModelCard
from safetensors.torch import load_file

from elmo_transformers.common.model_card import file_sha256
from elmo_transformers.conversion.cli import main

# A meta.json as the NLPL repository (version 2.0) writes it: the entry's id, its corpus (with the language) and
# the algorithm.
META = {
    "id": 209,
    "algorithm": {"name": "ELMo", "dimension": 1024, "url": "https://github.com/allenai/bilm-tf"},
    "corpus": [
        {
            "description": "Test fixture corpus",
            "language": "nob",
            "tokens": 1234567,
            "lemmatized": False,
            "case preserved": True,
        }
    ],
    "dimensions": 1024,
    "handle": "http://vectors.nlpl.eu/repository/20/209.zip",
}


def _archive(path: Path, members: dict[str, bytes | Path]) -> Path:
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name, content in members.items():
            archive.writestr(name, content.read_bytes() if isinstance(content, Path) else content)
    return path


def _nlpl_members(elmo_fixture: Path, folder: str = "", weights_name: str = "model.hdf5") -> dict[str, bytes | Path]:
    return {
        f"{folder}{weights_name}": elmo_fixture / "lm_weights.hdf5",
        f"{folder}options.json": elmo_fixture / "options.json",
        f"{folder}vocab.txt": elmo_fixture / "vocab_test.txt",
        f"{folder}meta.json": json.dumps(META, indent=2).encode(),
        f"{folder}README": b"ELMo model 209 of the NLPL repository.\n",
    }


def _error(capsys: pytest.CaptureFixture, *arguments: str) -> str:
    """The one error line (above it at most progress bars, which end before it), with no traceback."""
    assert main(["allennlp", *arguments]) == 2
    error = capsys.readouterr().err
    assert "Traceback" not in error and error.count("elmo-convert: error:") == 1, error
    last = error.strip().splitlines()[-1]
    assert last.startswith("elmo-convert: error: "), error
    return last


@pytest.mark.parametrize(
    "layout",
    ["nlpl", "one folder down", "other weights name, no metadata"],
)
def test_archive_converts_to_the_weights_of_its_files(
    layout: str, elmo_fixture: Path, fixture_model_folder: Path, tmp_path: Path
) -> None:
    members = {
        "nlpl": _nlpl_members(elmo_fixture),
        "one folder down": {"__MACOSX/209/._model.hdf5": b"\0", **_nlpl_members(elmo_fixture, folder="209/")},
        "other weights name, no metadata": {
            name: content
            for name, content in _nlpl_members(elmo_fixture, weights_name="elmo_weights.hdf5").items()
            if name != "meta.json"
        },
    }[layout]
    archive = _archive(tmp_path / "209.zip", members)
    output = tmp_path / "converted"
    assert main(["allennlp", "--archive", str(archive), "--output", str(output)]) == 0

    converted, expected = load_file(output / "model.safetensors"), load_file(fixture_model_folder / "model.safetensors")
    assert converted.keys() == expected.keys()
    assert all(torch.equal(converted[name], expected[name]) for name in expected)
    card = ModelCard.load(output / "README.md")
    assert card.data.source_weights == [{"file": "209.zip", "sha256": file_sha256(archive)}]
    assert card.data.source_options == {"file": "options.json", "sha256": file_sha256(elmo_fixture / "options.json")}
    assert 0 < card.data.parity_max_abs_difference < 5e-6
    if "no metadata" in layout:
        assert card.data.language == "en" and card.data.get("nlpl_metadata") is None
        assert "NLPL-style archive 209.zip" in card.text
    else:
        assert card.data.language == "nob"
        assert card.data.nlpl_metadata == META
        assert "the NLPL repository's ELMo model 209 (209.zip)" in card.text
        assert "Test fixture corpus (1,234,567 tokens, not lemmatized, case preserved)" in card.text
    assert sorted(path.name for path in tmp_path.iterdir()) == ["209.zip", "converted"], "no temporary leftovers"


def test_language_option_wins_over_the_metadata(elmo_fixture: Path, tmp_path: Path) -> None:
    archive = _archive(tmp_path / "209.zip", _nlpl_members(elmo_fixture))
    output = tmp_path / "converted"
    assert main(["allennlp", "--archive", str(archive), "--output", str(output), "--language", "no"]) == 0
    assert ModelCard.load(output / "README.md").data.language == "no"


def _damaged(archive: Path, member: str) -> None:
    """Flip bytes in the middle of a member's compressed data: its CRC (or inflate) check fails when read."""
    with zipfile.ZipFile(archive) as opened:
        info = opened.getinfo(member)
    data = bytearray(archive.read_bytes())
    start = info.header_offset + 30 + len(info.filename.encode()) + len(info.extra)
    middle = start + info.compress_size // 2
    data[middle : middle + 16] = bytes(byte ^ 0xFF for byte in data[middle : middle + 16])
    archive.write_bytes(bytes(data))


def test_bad_archives_are_one_line_naming_the_member(
    elmo_fixture: Path, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    output = str(tmp_path / "out")
    members = _nlpl_members(elmo_fixture)

    def convert(name: str, archive_members: dict[str, bytes | Path]) -> str:
        return _error(capsys, "--archive", str(_archive(tmp_path / name, archive_members)), "--output", output)

    no_options = convert("a.zip", {name: content for name, content in members.items() if name != "options.json"})
    assert "a.zip holds no options.json (it holds: model.hdf5, vocab.txt, meta.json, README)" in no_options
    no_weights = convert("b.zip", {name: content for name, content in members.items() if name != "model.hdf5"})
    assert "b.zip holds no model.hdf5 and no .hdf5 member" in no_weights
    two_weights = {**members, "a.hdf5": b"", "b.hdf5": b""}
    del two_weights["model.hdf5"]
    assert "holds no model.hdf5 and 2 other .hdf5 members (a.hdf5, b.hdf5)" in convert("c.zip", two_weights)
    assert "d.zip holds 2 members named options.json (options.json, x/options.json)" in convert(
        "d.zip", {**members, "x/options.json": b"{}"}
    )
    bad_meta = convert("e.zip", {**members, "meta.json": b"{not json"})
    assert "e.zip: member meta.json is not a JSON file (Expecting property name" in bad_meta
    bad_options = convert("f.zip", {**members, "options.json": b'{"lstm": {"dim": 32}, "char_cnn": {}}'})
    assert f"{tmp_path / 'f.zip'}:options.json: missing required option" in bad_options
    truncated_weights = convert("g.zip", {**members, "model.hdf5": b"not hdf5"})
    assert f"{tmp_path / 'g.zip'}:model.hdf5 is not an HDF5 weights file" in truncated_weights

    damaged = _archive(tmp_path / "h.zip", members)
    _damaged(damaged, "model.hdf5")
    assert "h.zip: member model.hdf5 is damaged" in _error(capsys, "--archive", str(damaged), "--output", output)
    not_zip = tmp_path / "i.zip"
    not_zip.write_bytes(b"PK but not really a zip")
    assert "i.zip is not a ZIP archive" in _error(capsys, "--archive", str(not_zip), "--output", output)
    assert "no such archive" in _error(capsys, "--archive", str(tmp_path / "absent.zip"), "--output", output)
    assert not (tmp_path / "out").exists()


def test_archive_and_weights_go_separately(elmo_fixture: Path, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    archive = str(_archive(tmp_path / "209.zip", _nlpl_members(elmo_fixture)))
    weights, output = str(elmo_fixture / "lm_weights.hdf5"), str(tmp_path / "out")
    assert "holds its weights" in _error(capsys, "--archive", archive, "--weights", weights, "--output", output)
    options = str(elmo_fixture / "options.json")
    assert "--weights is needed with --options" in _error(capsys, "--options", options, "--output", output)
