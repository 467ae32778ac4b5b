"""`ElmoPreTrainedModel.from_pretrained` warns of a weight that holds a NaN or an infinity (transformers' logging),
which would make the outputs computed with it NaN in silence; `non_finite_weight()` is the check itself."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file, save_file
from transformers import AutoModel


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_from_pretrained_warns_of_a_non_finite_weight(
    dtype: torch.dtype, fixture_model_folder: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """AutoModel.from_pretrained of a folder holding one NaN weight gave NaN vectors with no word; elmo-embed's
    check of the folder is not on this path, the model's own warning is."""
    folder = Path(shutil.copytree(fixture_model_folder, tmp_path / "nan"))
    with caplog.at_level("WARNING"):
        AutoModel.from_pretrained(folder, dtype=dtype)
    assert not caplog.records, "a finite model loads without a word"
    weights = folder / "model.safetensors"
    (folder / "SHA256SUMS").unlink()  # (the record's own warning: the next test)
    tensors = load_file(weights)
    name = "char_encoder.highways.0.carry.weight"
    tensors[name][4, 1] = float("nan")
    save_file(tensors, weights, metadata={"format": "pt"})
    with caplog.at_level("WARNING"):
        model = AutoModel.from_pretrained(folder, dtype=dtype)
    assert [record.getMessage() for record in caplog.records] == [
        f"{folder}: the weight {name} holds a non-finite value (nan) at index [4, 1]: the weights are damaged, and"
        " the outputs computed with it will be NaN; download or convert the model again"
    ]
    assert model.non_finite_weight() == f"the weight {name} holds a non-finite value (nan) at index [4, 1]"


@pytest.mark.parametrize("changed", ["model.safetensors", "config.json"])
def test_from_pretrained_warns_of_a_file_that_differs_from_its_record(
    changed: str, fixture_model_folder: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """transformers never reads SHA256SUMS: a folder whose weights had a flipped byte (finite, wrong vectors) or
    whose config was changed loaded in silence."""
    folder = Path(shutil.copytree(fixture_model_folder, tmp_path / "model"))
    with caplog.at_level("WARNING"):
        AutoModel.from_pretrained(folder)
    assert not caplog.records, "a folder that matches its record loads without a word"
    path = folder / changed
    if changed == "config.json":  # a value changed by hand
        data = json.dumps({**json.loads(path.read_text(encoding="utf-8")), "dropout": 0.25}).encode()
    else:  # a bit of the last weight's lowest byte: the weights load and compute finite values
        data = bytearray(path.read_bytes())
        data[-4] ^= 0x01
    path.write_bytes(bytes(data))
    with caplog.at_level("WARNING"):
        AutoModel.from_pretrained(folder)
    sha256 = hashlib.sha256(bytes(data)).hexdigest()
    assert [record.getMessage() for record in caplog.records] == [
        f"{path}: its sha256 {sha256[:16]}... is not the one {folder / 'SHA256SUMS'} records: the file is damaged or"
        " was changed; download or convert the model again (or, for a file changed on purpose, write its new sha256"
        " into SHA256SUMS: sha256sum FILE)"
    ]
