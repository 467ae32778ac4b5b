"""`finite_elmo`: the one search for a NaN or an infinity (issue 51), shared by the model's check of its weights
(`non_finite_entry`, torch), the conversions' `check_finite` and `elmo-embed`'s `refuse_overflow` (numpy): the same
first index and value from each, across chunk boundaries, in every float dtype."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from elmo_transformers.common.errors import ConversionError, EmbedError
from elmo_transformers.conversion.weight_mapping import check_finite
from elmo_transformers.inference.overflow import refuse_overflow
from modeling_elmo import finite_elmo
from modeling_elmo.modeling_elmo import non_finite_entry

SHAPE = (5, 7, 3)


def _chunks_of(monkeypatch: pytest.MonkeyPatch, elements: int) -> None:
    """Search `elements` at a time, in numpy and in the torch tensors' chunks (the public chunk size)."""
    monkeypatch.setattr(finite_elmo, "FINITE_CHECK_ELEMENTS", elements)


def _damaged(dtype: type, cells: dict[tuple[int, ...], float]) -> np.ndarray:
    array = np.linspace(-2.0, 2.0, np.prod(SHAPE)).reshape(SHAPE).astype(dtype)
    for cell, value in cells.items():
        array[cell] = value
    return array


@pytest.mark.parametrize("chunk", [1 << 24, 4, 1])  # one chunk, a boundary inside, every element its own chunk
@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_every_path_finds_the_first_non_finite_element(
    monkeypatch: pytest.MonkeyPatch, chunk: int, dtype: type
) -> None:
    _chunks_of(monkeypatch, chunk)
    array = _damaged(dtype, {(3, 1, 2): np.nan, (1, 4, 0): -np.inf, (4, 6, 2): np.inf})
    expected = ([1, 4, 0], float("-inf"))
    assert finite_elmo.first_non_finite(array) == expected
    assert non_finite_entry(torch.from_numpy(array)) == expected
    with pytest.raises(ConversionError, match=r"^x holds a non-finite value \(-inf\) at index \[1, 4, 0\]: "):
        check_finite(array, "x")
    with pytest.raises(EmbedError, match=r"^line 3 \(dataset 2\) has a vector holding -inf computed in float32"):
        refuse_overflow(2, array, "float32")
    assert finite_elmo.first_non_finite(_damaged(dtype, {})) is None
    assert non_finite_entry(torch.from_numpy(_damaged(dtype, {}))) is None
    refuse_overflow(2, _damaged(dtype, {}), "float32")


def test_bfloat16_a_view_and_an_empty_tensor(monkeypatch: pytest.MonkeyPatch) -> None:
    """bfloat16 (which numpy lacks) is searched as float32; a non-contiguous view in its own index order."""
    _chunks_of(monkeypatch, 4)
    tensor = torch.from_numpy(_damaged(np.float32, {(2, 5, 1): np.nan})).to(torch.bfloat16)
    found = non_finite_entry(tensor)
    assert found is not None and found[0] == [2, 5, 1] and np.isnan(found[1])
    assert non_finite_entry(tensor.transpose(0, 2))[0] == [1, 5, 2]
    assert finite_elmo.first_non_finite(np.zeros((0, 3), np.float32)) is None
    assert non_finite_entry(torch.zeros(0, 3)) is None
