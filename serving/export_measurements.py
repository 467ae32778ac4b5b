"""What `elmo-convert onnx` measures of the graphs it writes, and the bars a graph must pass to be kept: the float32
graph against PyTorch float32 (`pytorch_parity`), the int8 graph's per-word cosine to the float32 graph
(`graph_cosine`) and its outputs for a sentence alone and in a batch (`batch_difference`), all on
`PARITY_SENTENCES`; `measurement_problem` refuses an export that misses a bar.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from elmo_transformers.common.parity_sentences import PARITY_SENTENCES
from modeling_elmo import ElmoModel
from modeling_elmo.tokenization_elmo import ElmoTokenizer

__all__ = [
    "FLOAT_PARITY_BAR",
    "INT8_BATCH_BAR",
    "INT8_COSINE_BAR",
    "OnnxExport",
    "batch_difference",
    "graph_cosine",
    "measurement_problem",
    "per_word_cosine",
    "pytorch_parity",
]

# What the export requires of a graph before it keeps it (`measurement_problem`): the float32 graph within this of
# PyTorch float32 on `PARITY_SENTENCES` (every biLM layer, or a head's logits), times the largest |value| PyTorch
# gives where that exceeds 1 (float32's rounding grows with the values: an absolute bar refused a model whose values
# reach 4e5 at 2.2e-1, a few float32 steps), the int8 graph's mean per-word
# cosine to the float32 graph at least this (`graph_cosine`), and the int8 graph's outputs for each of those
# sentences the same alone and in their batch within this (`batch_difference`).
FLOAT_PARITY_BAR = 1e-5
INT8_COSINE_BAR = 0.99
INT8_BATCH_BAR = 1e-4


@dataclass(frozen=True)
class OnnxExport:
    """What an export wrote and measured: the largest difference to PyTorch float32 on `PARITY_SENTENCES` (and the
    largest |value| PyTorch gave there, `magnitude`), and with int8 the per-word cosine (mean, min) of the biLSTM
    layers to the float32 graph (of the biLM) and the largest difference between a sentence's outputs alone and in a
    batch (`batch_difference`)."""

    architecture: str
    parity: float
    graph_bytes: int
    magnitude: float = 1.0
    quantized_bytes: int | None = None
    cosine: tuple[float, float] | None = None
    batch_difference: float | None = None


def measurement_problem(result: OnnxExport) -> str | None:
    """The line refusing an export whose measurements miss their bars (`FLOAT_PARITY_BAR`, `INT8_COSINE_BAR`,
    `INT8_BATCH_BAR`), and the way on; None when they pass. A NaN measurement misses."""
    bar = FLOAT_PARITY_BAR * max(1.0, result.magnitude)
    if not result.parity <= bar:
        shown = f"{FLOAT_PARITY_BAR:.0e}"
        if result.magnitude > 1:
            shown = f"{bar:.2e} ({shown} x the largest |value|, {result.magnitude:.2e})"
        return (
            f"the float32 graph differs from PyTorch float32 by {result.parity:.2e} on the parity sentences, above"
            f" the bar of {shown}: nothing was written; the graph does not compute this model, report it with the"
            " model folder"
        )
    if result.cosine is not None and not result.cosine[0] >= INT8_COSINE_BAR:
        return (
            f"the int8 graph's mean per-word cosine to float32 is {result.cosine[0]:.4f}, below the bar of"
            f" {INT8_COSINE_BAR}: nothing was written; export without --quantize"
        )
    if result.batch_difference is not None and not result.batch_difference <= INT8_BATCH_BAR:
        return (
            f"the int8 graph's outputs for a sentence alone and in a batch differ by {result.batch_difference:.2e} on"
            f" the parity sentences, above the bar of {INT8_BATCH_BAR:.0e}: nothing was written; export without"
            " --quantize"
        )
    return None


def graph_cosine(float_graph, quantized_graph, tokenizer: ElmoTokenizer, sentences) -> tuple[float, float]:
    """Per-word cosine between two biLM graphs' biLSTM layers (each word's vector of each layer): (mean, min)."""
    inputs = dict(tokenizer(sentences, is_split_into_words=True, padding=True, return_tensors="np"))
    reference, mask = float_graph.run(["hidden_states", "word_mask"], inputs)
    (other,) = quantized_graph.run(["hidden_states"], inputs)
    cosine = per_word_cosine(other, reference, mask)
    return float(cosine.mean()), float(cosine.min())


def batch_difference(session, tokenizer: ElmoTokenizer, sentences) -> float:
    """The largest difference between a graph's outputs for each of `sentences` alone and in one batch of them all:
    every output, at the sentence's own row and words (its outputs are batch-first, padded to the longest)."""

    def run(batch) -> list[np.ndarray]:
        return session.run(None, dict(tokenizer(batch, is_split_into_words=True, padding=True, return_tensors="np")))

    together, worst = run(sentences), 0.0
    for row, sentence in enumerate(sentences):
        for batched, alone in zip(together, run([sentence]), strict=True):
            mine = batched[row : row + 1][tuple(slice(0, size) for size in alone.shape)]
            worst = max(worst, float(np.abs(mine.astype(np.float32) - alone.astype(np.float32)).max(initial=0.0)))
    return worst


def per_word_cosine(layers: np.ndarray, reference: np.ndarray, word_mask: np.ndarray) -> np.ndarray:
    """The cosine of each word's vector in each biLSTM layer, (words, L), between two `hidden_states` outputs
    (batch, L+1, words, 2P) at the words of `word_mask` (batch, words)."""
    layers, reference = (array.transpose(0, 2, 1, 3)[word_mask][:, 1:] for array in (layers, reference))
    products = (layers * reference).sum(-1)
    norms = np.linalg.norm(layers, axis=-1) * np.linalg.norm(reference, axis=-1)
    return products / np.maximum(norms, np.finfo(np.float32).tiny)


def pytorch_parity(model: torch.nn.Module, session, tokenizer: ElmoTokenizer) -> tuple[float, float]:
    """Largest |graph - PyTorch| over `PARITY_SENTENCES` (every biLM layer, or a head's logits), and the largest
    |PyTorch| there, which the bar scales with."""
    inputs = tokenizer(PARITY_SENTENCES, is_split_into_words=True, padding=True, return_tensors="pt")
    with torch.no_grad():
        if isinstance(model, ElmoModel):
            expected = torch.stack(model(**inputs, output_hidden_states=True).hidden_states, dim=1)
            name = "hidden_states"
        else:
            expected, name = model(**inputs).logits, "logits"
    (actual,) = session.run([name], {key: tensor.numpy() for key, tensor in inputs.items()})
    return float(np.abs(actual - expected.numpy()).max()), float(expected.abs().max())
