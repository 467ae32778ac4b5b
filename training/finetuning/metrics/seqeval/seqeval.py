"""Entity-level precision, recall and F1 of tag sequences (IOB/IOBES) with the `seqeval` package, plus token
accuracy: a local `evaluate` metric, loaded with `evaluate.load("<this folder>")` (no Hub access)."""

from __future__ import annotations

import datasets
import evaluate
from seqeval import scheme as schemes
from seqeval.metrics import accuracy_score, classification_report

_DESCRIPTION = """Chunk-level scores of sequence labelling (named entities, chunks) as in the CoNLL evaluation:
an entity counts as found only if its type and all its tokens match. `overall_*` are micro averages over the
entity types; `overall_accuracy` is the share of tokens with the right tag."""

_INPUTS = """
Args:
    predictions: list of tag sequences, e.g. [["B-PER", "I-PER", "O"]].
    references: list of gold tag sequences of the same lengths.
    scheme: None for seqeval's lenient default, or a `seqeval.scheme` name ("IOB1", "IOB2", "IOE1", "IOE2",
        "IOBES", "BILOU") for strict matching under that scheme.
    mode: "strict" with a scheme, or None.
    suffix: tags carry their prefix at the end ("PER-B").
    zero_division: value of a score with a zero denominator (0 or 1), or "warn" (0 with a warning).
Returns:
    One dict per entity type (precision, recall, f1, number), and overall_precision, overall_recall,
    overall_f1 and overall_accuracy.
"""

_CITATION = """@misc{seqeval, title={{seqeval}: A Python framework for sequence labeling evaluation},
  url={https://github.com/chakki-works/seqeval}, author={Hiroki Nakayama}, year={2018}}"""


class Seqeval(evaluate.Metric):
    def _info(self) -> evaluate.MetricInfo:
        return evaluate.MetricInfo(
            description=_DESCRIPTION,
            citation=_CITATION,
            inputs_description=_INPUTS,
            features=datasets.Features(
                {
                    "predictions": datasets.List(datasets.Value("string")),
                    "references": datasets.List(datasets.Value("string")),
                }
            ),
        )

    def _compute(
        self,
        predictions: list[list[str]],
        references: list[list[str]],
        scheme: str | None = None,
        mode: str | None = None,
        suffix: bool = False,
        zero_division: str | int = "warn",
    ) -> dict:
        scheme_class = None
        if scheme is not None:
            scheme_class = getattr(schemes, scheme, None)
            if not (isinstance(scheme_class, type) and issubclass(scheme_class, schemes.Token)):
                raise ValueError(f"unknown seqeval scheme {scheme!r} (IOB1, IOB2, IOE1, IOE2, IOBES, BILOU)")
        report = classification_report(
            y_true=references,
            y_pred=predictions,
            suffix=suffix,
            output_dict=True,
            scheme=scheme_class,
            mode=mode,
            zero_division=zero_division,
        )
        overall = report.pop("micro avg")
        results = {
            entity: {
                "precision": float(scores["precision"]),
                "recall": float(scores["recall"]),
                "f1": float(scores["f1-score"]),
                "number": int(scores["support"]),
            }
            for entity, scores in report.items()
            if not entity.endswith(" avg")
        }
        results["overall_precision"] = float(overall["precision"])
        results["overall_recall"] = float(overall["recall"])
        results["overall_f1"] = float(overall["f1-score"])
        results["overall_accuracy"] = float(accuracy_score(y_true=references, y_pred=predictions))
        return results
