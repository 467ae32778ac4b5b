"""The scripts' metrics: local `evaluate` modules (`metrics/<name>/<name>.py` here), never fetched from the Hub."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import evaluate
import numpy as np
from transformers import EvalPrediction

__all__ = ["METRICS_DIR", "classification_metrics", "load_local_metric", "token_classification_metrics"]

METRICS_DIR = Path(__file__).resolve().parent / "metrics"


def load_local_metric(name: str) -> evaluate.EvaluationModule:
    """The metric module `metrics/<name>/<name>.py` (`seqeval` or `accuracy`), loaded from disk."""
    folder = METRICS_DIR / name
    if not (folder / f"{name}.py").is_file():
        raise ValueError(f"no local metric {name!r}: expected {folder / f'{name}.py'}")
    return evaluate.load(str(folder))


def token_classification_metrics(label_names: Sequence[str]) -> Callable[[EvalPrediction], dict[str, float]]:
    """`compute_metrics` for the Trainer: seqeval's entity precision, recall and F1 and the token accuracy.

    Predictions are logits (examples, words, labels) and label ids (examples, words), -100 where there is no
    word; the tags are `label_names[id]`."""
    seqeval = load_local_metric("seqeval")

    def compute(prediction: EvalPrediction) -> dict[str, float]:
        predicted = np.argmax(prediction.predictions, axis=-1)
        gold = prediction.label_ids
        predictions, references = [], []
        for predicted_row, gold_row in zip(predicted, gold, strict=True):
            words = gold_row != -100
            predictions.append([label_names[index] for index in predicted_row[words]])
            references.append([label_names[index] for index in gold_row[words]])
        scores = seqeval.compute(predictions=predictions, references=references, zero_division=0)
        return {name: scores[f"overall_{name}"] for name in ("precision", "recall", "f1", "accuracy")}

    return compute


def classification_metrics() -> Callable[[EvalPrediction], dict[str, float]]:
    """`compute_metrics` for the Trainer: accuracy of logits (examples, labels) against label ids (examples,)."""
    accuracy = load_local_metric("accuracy")

    def compute(prediction: EvalPrediction) -> dict[str, float]:
        predictions = np.argmax(prediction.predictions, axis=-1)
        return accuracy.compute(predictions=predictions.tolist(), references=prediction.label_ids.tolist())

    return compute
