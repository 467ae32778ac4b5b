"""Every `elmo-convert` command that reads a model folder compares it with its SHA256SUMS before use, and every
folder it writes records its own files (`sha256sum -c SHA256SUMS` checks it without this package)."""

from __future__ import annotations

import hashlib
import shutil
import subprocess
from pathlib import Path

import pytest
from bad_inputs import flip_bytes_in_the_middle

from elmo_transformers.conversion.cli import main

# Each command that reads a model folder (--model) and writes a folder, with the module of the extra it needs.
COMMANDS = {"onnx": "onnxruntime", "to-allennlp": None, "sentence-transformers": "sentence_transformers"}


def _needs(module: str | None) -> None:
    if module is not None:
        pytest.importorskip(module)


@pytest.mark.parametrize("command", COMMANDS)
def test_a_damaged_source_folder_is_refused(
    command: str, fixture_model_folder: Path, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    """The source's SHA256SUMS was not compared: the ONNX and sentence-transformers outputs recorded a fresh
    SHA256SUMS of the damaged weights, which elmo-embed then accepted."""
    _needs(COMMANDS[command])
    source = Path(shutil.copytree(fixture_model_folder, tmp_path / "source"))
    weights = source / "model.safetensors"
    expected = hashlib.sha256(weights.read_bytes()).hexdigest()
    flip_bytes_in_the_middle(weights)
    actual = hashlib.sha256(weights.read_bytes()).hexdigest()
    output = tmp_path / "output"
    assert main([command, "--model", str(source), "--output", str(output)]) == 2
    assert capsys.readouterr().err == (
        f"elmo-convert: error: {weights}: its sha256 is {actual[:16]}..., but SHA256SUMS records {expected[:16]}...:"
        " the file is damaged; copy, convert or download the folder again (or, for a file changed on purpose, write"
        " its new sha256 into SHA256SUMS: sha256sum FILE)\n"
    )
    assert sorted(path.name for path in tmp_path.iterdir()) == ["source"], "nothing is written"


def _recorded(folder: Path) -> dict[str, str]:
    lines = (folder / "SHA256SUMS").read_text(encoding="utf-8").splitlines()
    return {line[66:]: line[:64] for line in lines}


@pytest.mark.parametrize("command", COMMANDS)
def test_each_written_folder_records_all_its_files(command: str, fixture_model_folder: Path, tmp_path: Path) -> None:
    """Every file but the model page (README.md, which the Hub edits), sub-folders' files included (the
    sentence-transformers pooling module); the ONNX folder recorded its graph alone, to-allennlp nothing."""
    _needs(COMMANDS[command])
    output = tmp_path / "output"
    assert main([command, "--model", str(fixture_model_folder), "--output", str(output)]) == 0
    files = {
        path.relative_to(output).as_posix()
        for path in output.rglob("*")
        if path.is_file() and path.name not in ("SHA256SUMS", "README.md")
    }
    recorded = _recorded(output)
    assert set(recorded) == files
    for name, sha256 in recorded.items():
        assert hashlib.sha256((output / name).read_bytes()).hexdigest() == sha256, name
    if shutil.which("sha256sum"):
        assert subprocess.run(["sha256sum", "--strict", "--quiet", "-c", "SHA256SUMS"], cwd=output).returncode == 0
