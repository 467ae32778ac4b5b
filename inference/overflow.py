"""The refusal of vectors that the model computed by overflowing (a NaN or an infinity: the weights are finite,
`require_model_folder` checks them), in one line that names the line and says what to do. (A value that the stored
dtype would hold as inf is the storage's to refuse: `Storage.cast`.)"""

from __future__ import annotations

import numpy as np

from elmo_transformers.common.errors import EmbedError
from modeling_elmo.finite_elmo import first_non_finite

__all__ = ["refuse_overflow"]


def refuse_overflow(line: int, vectors: np.ndarray, compute_dtype: str) -> None:
    """Refuse the `vectors` of line `line`, computed in `compute_dtype`, if any of them is not finite."""
    found = first_non_finite(vectors)
    if found is None:
        return
    _, value = found
    problem = f"line {line + 1} (dataset {line}) has a vector holding {value} computed in {compute_dtype}"
    if compute_dtype == "float32":
        raise EmbedError(f"{problem}: the model's activations overflow float32's range; check the model's weights")
    import torch  # (PyTorch computed, in another dtype)

    from .torch_runner import TORCH_DTYPES

    limit = float(torch.finfo(TORCH_DTYPES[compute_dtype]).max)
    raise EmbedError(
        f"{problem}: the model's activations went beyond {compute_dtype}'s range ({limit:g}); compute in float32"
        " (--dtype float32, with --overwrite to start over)"
    )
