"""Fixtures shared by the ONNX tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from elmo_transformers.conversion.cli import main
from modeling_elmo import DEFAULT_MODEL


@pytest.fixture(scope="session")
def default_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The bundled model (trained, 512 cells), exported with its int8 graph."""
    output = tmp_path_factory.mktemp("onnx") / "default-onnx"
    assert main(["onnx", "--model", str(DEFAULT_MODEL), "--output", str(output), "--quantize", "int8"]) == 0
    return output
