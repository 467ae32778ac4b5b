"""PyTorch pickles from outside (ELMoForManyLangs' `*.pkl`, a model folder's `pytorch_model.bin`) are read with
`weights_only=True`; one that holds code, or is damaged, is refused in one line naming the file."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import torch
from bad_inputs import RunsAShellCommand, embed_one_line
from elmoformanylangs_files import write_small_model

from elmo_transformers.conversion.cli import main


def _convert(model_dir: Path, output: Path) -> int:
    return main(["elmoformanylangs", "--model", str(model_dir), "--output", str(output)])


def test_elmoformanylangs_pickle_that_holds_code(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    model_dir = write_small_model(tmp_path / "theirs")
    ran = tmp_path / "the-code-ran"
    torch.save({"weight": RunsAShellCommand(ran)}, model_dir / "encoder.pkl")
    assert _convert(model_dir, tmp_path / "ours") == 2
    assert capsys.readouterr().err == (
        f"elmo-convert: error: {model_dir / 'encoder.pkl'}: the file holds code (Python objects other than tensors),"
        " which is not loaded\n"
    )
    assert not ran.exists() and not (tmp_path / "ours").exists()


def test_damaged_elmoformanylangs_pickle(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    model_dir = write_small_model(tmp_path / "theirs")
    weights = model_dir / "encoder.pkl"
    weights.write_bytes(weights.read_bytes()[:100])
    assert _convert(model_dir, tmp_path / "ours") == 2
    error = capsys.readouterr().err
    assert error.startswith(f"elmo-convert: error: {weights}: not a PyTorch file, or a damaged one (")
    assert error.count("\n") == 1


@pytest.mark.slow
def test_elmo_embed_model_whose_pytorch_model_bin_holds_code(fixture_model_folder: Path, tmp_path: Path) -> None:
    folder = Path(shutil.copytree(fixture_model_folder, tmp_path / "model"))
    (folder / "model.safetensors").unlink()
    (folder / "SHA256SUMS").unlink()  # (it records the weights removed: a folder saved so by hand has none)
    ran = tmp_path / "the-code-ran"
    torch.save({"weight": RunsAShellCommand(ran)}, folder / "pytorch_model.bin")
    completed = embed_one_line(folder, tmp_path)
    assert completed.returncode == 2
    assert completed.stderr == (
        f"elmo-embed: error: {folder} (its pytorch_model.bin): the file holds code (Python objects other than"
        " tensors), which is not loaded\n"
    )
    assert not ran.exists()
