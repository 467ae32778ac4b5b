"""`ElmoPreTrainedModel.from_pretrained` warns of a weight that holds a NaN or an infinity (transformers' logging),
which would make the outputs computed with it NaN in silence; `non_finite_weight()` is the check itself."""

from __future__ import annotations

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
