"""What `elmo-embed` uses of a model, whatever runs it (`BatchEmbedder`): PyTorch (`torch_runner.TorchEmbedder`) or
onnxruntime (`onnx_runner.OnnxEmbedder`). Neither torch nor transformers is imported here, so that a run on a graph
goes without them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from elmo_transformers.common.checksums import CHECKSUM_WAY_ON, checksum_problem, file_sha256
from elmo_transformers.common.errors import EmbedError

if TYPE_CHECKING:
    import torch

__all__ = ["BatchEmbedder", "PendingVectors", "PreparedBatch", "recorded_sha256"]


def recorded_sha256(path: Path) -> str:
    """The sha256 of the file `path`, refused in one line when its folder's SHA256SUMS (`elmo-convert` records it)
    says the file was another: a flipped byte that loads and computes finite, wrong vectors."""
    sha256 = file_sha256(path)
    problem = checksum_problem(path, sha256)
    if problem:
        raise EmbedError(f"{problem}; {CHECKSUM_WAY_ON}")
    return sha256


class BatchEmbedder:
    """What `elmo-embed` uses of a model, whatever runs it: the split of raw text into words (`split_words`, for
    --tokenize), the type of its device (`device_type`: "cpu", "cuda", ...), the vectors' `width` and `num_layers`,
    and the vectors of `layers` for batches of sentences (`prepare`, then `run`), computed in `compute_dtype`.
    `backend` names what runs the model and `weights_file` the file it reads (None for a Hub model), for the output's
    attributes."""

    backend: str
    compute_dtype: str
    layers: str
    width: int
    num_layers: int
    device_type: str
    weights_file: Path | None

    def split_words(self, text: str) -> list[str]:
        """The words of a line of raw text, as the model's tokenizer splits it (--tokenize)."""
        raise NotImplementedError

    def shape(self, words: int) -> tuple[int, ...]:
        """Shape of one sentence's output: (L+1, words, width) for "all", (words, width) otherwise."""
        return (self.num_layers, words, self.width) if self.layers == "all" else (words, self.width)

    def embed(self, sentences: Sequence[Sequence[str]]) -> list[np.ndarray]:
        """The float32 vectors of each sentence (a non-empty list of words), of shape `self.shape(len(words))`.

        The sentences are padded into one batch; the model computes every row on its own (no state is carried
        from sentence to sentence). The ONNX graphs give a sentence the same bits in any batch (docs/onnx.md);
        PyTorch's native kernels block a product by the batch's shape, so that another batch may move a vector's
        last float32 bits (1 ulp measured: tests/inference/test_embed_batch_size.py).
        """
        return self.run(self.prepare(sentences)).result()

    def prepare(self, sentences: Sequence[Sequence[str]]) -> PreparedBatch:
        raise NotImplementedError

    def run(self, prepared: PreparedBatch) -> PendingVectors:
        raise NotImplementedError


@dataclass
class PreparedBatch:
    """A batch ready for `BatchEmbedder.run`: the tokenizer's arrays (batch, words, ...), torch tensors or numpy
    arrays as the backend takes them, and each sentence's length."""

    tensors: Mapping[str, Any]
    lengths: list[int]


@dataclass
class PendingVectors:
    """The vectors of a batch, (batch, [L+1,] words, width) float32 on the host, once `copied` (a CUDA event, on a
    GPU) has passed."""

    vectors: np.ndarray
    lengths: list[int]
    copied: torch.cuda.Event | None = None

    def result(self) -> list[np.ndarray]:
        """Each sentence's float32 vectors, (L+1, words, width) or (words, width); waits for the copy first."""
        if self.copied is not None:
            self.copied.synchronize()  # reading the pinned memory before the copy has landed would read garbage
        return [self.vectors[row, ..., :length, :] for row, length in enumerate(self.lengths)]
