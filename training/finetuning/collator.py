"""Batches of cached biLM layers for the task heads (the frozen-biLM workflow:
`elmo_transformers.training.finetuning.feature_cache`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch

from .feature_cache import FEATURES_COLUMN

__all__ = ["ElmoCachedFeaturesCollator"]


@dataclass
class ElmoCachedFeaturesCollator:
    """Pad rows of `cache_bilm_features` into the inputs of an ELMo head that skip the biLM.

    Each row holds `bilm_layers` of shape (words, layers, 2P), optionally `attention_mask` (words,) and
    `labels`: a list (words,) for token classification or one value for sequence classification. The batch
    holds `bilm_layers` (batch, layers, words, 2P) in `dtype`, zero at padding, `attention_mask` (batch, words)
    and `labels`: (batch, words) padded with `label_pad_token_id`, or (batch,). Every other column
    (`input_ids`, `input_word_ids`, text) is left out, so the head uses the cached layers.

    Args:
        label_pad_token_id: the label of padding positions (ignored by the loss).
        pad_to_multiple_of: round the number of words up to a multiple of this.
        dtype: the dtype of `bilm_layers` in the batch (rows stored as float16 are cast).
    """

    label_pad_token_id: int = -100
    pad_to_multiple_of: int | None = None
    dtype: torch.dtype = torch.float32

    def __call__(self, rows: Sequence[dict[str, Any]]) -> dict[str, torch.Tensor]:
        if not rows:
            raise ValueError("cannot collate an empty batch")
        if any(FEATURES_COLUMN not in row for row in rows):
            raise KeyError(f"every row needs {FEATURES_COLUMN!r}: pass the dataset from cache_bilm_features")
        layers = [torch.as_tensor(row[FEATURES_COLUMN]) for row in rows]
        lengths = [row_layers.shape[0] for row_layers in layers]
        words = max(lengths)
        if self.pad_to_multiple_of:
            words = -(-words // self.pad_to_multiple_of) * self.pad_to_multiple_of
        num_layers, width = layers[0].shape[1:]
        bilm_layers = torch.zeros(len(rows), num_layers, words, width, dtype=self.dtype)
        attention_mask = torch.zeros(len(rows), words, dtype=torch.long)
        for index, (row, row_layers, length) in enumerate(zip(rows, layers, lengths, strict=True)):
            bilm_layers[index, :, :length] = row_layers.transpose(0, 1)
            attention_mask[index, :length] = torch.as_tensor(row["attention_mask"]) if "attention_mask" in row else 1
        batch = {FEATURES_COLUMN: bilm_layers, "attention_mask": attention_mask}
        if "labels" in rows[0]:
            batch["labels"] = self._labels([row["labels"] for row in rows], lengths, words)
        return batch

    def _labels(self, labels: list[Any], lengths: list[int], words: int) -> torch.Tensor:
        """(batch, words) padded token labels, or (batch,) sequence labels."""
        if torch.as_tensor(labels[0]).dim() == 0:
            return torch.as_tensor(labels)
        padded = torch.full((len(labels), words), self.label_pad_token_id, dtype=torch.long)
        for index, (row_labels, length) in enumerate(zip(labels, lengths, strict=True)):
            if len(row_labels) != length:
                raise ValueError(f"row {index} of the batch has {len(row_labels)} labels for {length} words")
            padded[index, :length] = torch.as_tensor(row_labels)
        return padded
