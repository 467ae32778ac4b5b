"""How `elmo-embed` stores the vectors: their dtype (`--storage-dtype`) and HDF5 filter (`--compression`).

The model's float32 vectors are cast here, before h5py sees them, so that a float16 file holds exactly numpy's
rounding of the float32 one (`astype(np.float16)`). A compressed line is chunked along its words; readers of the
`elmo` layout see the same names, shapes and values (HDF5 decompresses as it reads), only the dtype differs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from elmo_transformers.common.errors import EmbedError

from .limits import EmbedLimits
from .options import COMPRESSIONS, STORAGE_DTYPES

__all__ = ["Storage"]


@dataclass(frozen=True)
class Storage:
    """The dtype and filter of every line's dataset: `STORAGE_DTYPES` and `COMPRESSIONS`, which `EmbedOptions`
    checks (its `--storage-dtype` and `--compression`)."""

    dtype: str = STORAGE_DTYPES[0]
    compression: str = COMPRESSIONS[0]

    @property
    def itemsize(self) -> int:
        """The bytes of one stored value."""
        return np.dtype(self.dtype).itemsize

    def dataset_options(self, shape: tuple[int, ...], chunk_bytes: int = EmbedLimits.chunk_bytes) -> dict[str, Any]:
        """`h5py.Group.create_dataset`'s options for a line's dataset of `shape` ([L+1,] words, width).

        Uncompressed, the dtype alone: a contiguous dataset, as before these options existed. Compressed, chunks of
        whole words (every layer and the whole width of up to `chunk_bytes // word bytes` words, at least one), with
        HDF5's byte shuffle before the filter (on the default model's vectors gzip kept 80% of the bytes with it,
        84% without; lzf 85% and 92%). An empty line stays contiguous: HDF5 refuses a chunk larger than a 0-word
        dataset, and there is nothing to compress.
        """
        options: dict[str, Any] = {"dtype": self.dtype}
        words = shape[-2]
        if self.compression == "none" or words == 0:
            return options
        word_bytes = int(np.prod(shape)) // words * self.itemsize
        chunk = list(shape)
        chunk[-2] = min(words, max(1, chunk_bytes // word_bytes))
        return {**options, "chunks": tuple(chunk), "compression": self.compression, "shuffle": True}

    def cast(self, vectors: np.ndarray, line: int) -> np.ndarray:
        """`vectors` (float32, of line `line`) in the stored dtype; a value beyond float16's range, which float16 would
        store as inf, is refused in one line rather than written."""
        with np.errstate(over="ignore"):  # numpy's warning would print before the refusal below
            stored = vectors.astype(self.dtype, copy=False)
        if stored.dtype == vectors.dtype:
            return stored
        if not np.isfinite(stored).all() and np.isfinite(vectors).all():
            largest = float(np.abs(vectors).max())
            limit = float(np.finfo(self.dtype).max)
            raise EmbedError(
                f"line {line + 1} (dataset {line}) has a value of magnitude {largest:.6g}, beyond {self.dtype}'s range"
                f" ({limit:g}): it would be stored as inf; store float32 (--storage-dtype float32, with --overwrite"
                " to start over)"
            )
        return stored
