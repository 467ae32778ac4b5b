"""Import names that cannot collide: an installed wheel holds exactly two top-level import names, `modeling_elmo`
and `elmo_transformers` (the repository's `common/`, `conversion/`, `inference/` and `training/` are its
subpackages), and the commands work from a folder that holds its own `common/`, `conversion.py` and `training.py`
(the current folder comes first on `sys.path` for `python -m`; a user's project may well have those names)."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import h5py
import pytest
from wheels import build_wheel

REPOSITORY = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
DECOYS = ("common/__init__.py", "conversion.py", "inference.py", "training.py")


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_wheel(tmp_path_factory.mktemp("build"))


@pytest.fixture
def decoy_folder(tmp_path: Path) -> Path:
    """A user's project whose own modules are named like our old top-level packages; importing any fails."""
    for name in DECOYS:
        (tmp_path / name).parent.mkdir(exist_ok=True)
        (tmp_path / name).write_text(f"raise ImportError('the user project\\'s {name} was imported')\n")
    return tmp_path


def test_a_wheel_holds_two_top_level_names(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
    top = {name.split("/")[0] for name in names if not name.split("/")[0].endswith(".dist-info")}
    assert top == {"modeling_elmo", "elmo_transformers"}
    assert "elmo_transformers/__init__.py" not in names  # a namespace package: no folder of its own in the checkout
    for data in [
        "modeling_elmo/default_model/config.json",
        "elmo_transformers/common/model_card.md",
        "elmo_transformers/conversion/sentence_model_card.md",
        "elmo_transformers/serving/triton_text_model.py",  # copied, not imported: the Triton front end's model.py
        "elmo_transformers/serving/onnx_model_page.md",  # the page template of elmo-convert onnx folders
        "elmo_transformers/training/pretraining/pretrain.py",
        "elmo_transformers/training/finetuning/run_classification.py",
        "elmo_transformers/compat/allennlp/elmo_embedder.py",  # a subpackage of compat/, named in pyproject.toml
    ]:
        assert data in names
    assert any(name.startswith("elmo_transformers/training/finetuning/metrics/") for name in names)


@pytest.mark.slow
def test_the_installed_wheel_imports_from_a_folder_with_the_old_names(wheel: Path, tmp_path: Path, decoy_folder):
    target = tmp_path / "site"
    install = [sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--target", str(target), str(wheel)]
    subprocess.run(install, check=True, capture_output=True, timeout=600)
    script = (
        "import elmo_transformers.common.errors, elmo_transformers.conversion.cli, elmo_transformers.inference.embed,"
        " elmo_transformers.serving.graph_layout,"
        " elmo_transformers.training.pretraining.pretrain as p; print(p.__file__)"
    )
    environment = {**os.environ, "PYTHONPATH": str(target)}
    result = subprocess.run(
        [sys.executable, "-c", script], cwd=decoy_folder, env=environment, capture_output=True, text=True, timeout=600
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert Path(result.stdout.strip()).is_relative_to(target)


def _run(command: list[str], folder: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, cwd=folder, capture_output=True, text=True, timeout=600)


@pytest.mark.slow
def test_the_commands_run_from_a_folder_with_the_old_names(decoy_folder: Path) -> None:
    result = _run([str(BIN / "elmo-convert"), "--help"], decoy_folder)
    assert result.returncode == 0 and result.stdout.startswith("usage: elmo-convert"), result.stderr[-3000:]

    (decoy_folder / "in.txt").write_text("The cat sat .\n", encoding="utf-8")
    result = _run([str(BIN / "elmo-embed"), "in.txt", "out.hdf5"], decoy_folder)  # the bundled default model
    assert result.returncode == 0, result.stderr[-3000:]
    with h5py.File(decoy_folder / "out.hdf5") as output:
        assert output["0"].shape[:2] == (3, 4)

    for command in (
        [sys.executable, str(REPOSITORY / "training" / "build_vocab.py"), "--help"],
        [sys.executable, "-m", "elmo_transformers.training.build_vocab", "--help"],  # the folder first on sys.path
    ):
        result = _run(command, decoy_folder)
        assert result.returncode == 0 and result.stdout.startswith("usage: build_vocab.py"), result.stderr[-3000:]
