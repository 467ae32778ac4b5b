"""Accuracy, the share of predictions equal to their reference: a local `evaluate` metric, loaded with
`evaluate.load("<this folder>")` (no Hub access)."""

from __future__ import annotations

import datasets
import evaluate


class Accuracy(evaluate.Metric):
    def _info(self) -> evaluate.MetricInfo:
        return evaluate.MetricInfo(
            description="The share of predictions that equal their reference.",
            citation="",
            inputs_description="predictions, references: lists of class ids of the same length.",
            features=datasets.Features({"predictions": datasets.Value("int64"), "references": datasets.Value("int64")}),
        )

    def _compute(self, predictions: list[int], references: list[int]) -> dict[str, float]:
        if not references:
            raise ValueError("accuracy of no predictions")
        correct = sum(prediction == reference for prediction, reference in zip(predictions, references, strict=True))
        return {"accuracy": correct / len(references)}
