"""`pipeline("elmo-token-classification")`: one prediction per word.

transformers' own token-classification pipeline needs a fast tokenizer's offsets; ELMo's tokenizer gives
one position per word instead, which makes the mapping back to the text simple.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from transformers import AutoModelForTokenClassification, Pipeline
from transformers.pipelines import PIPELINE_REGISTRY

__all__ = ["ElmoTokenClassificationPipeline"]


class ElmoTokenClassificationPipeline(Pipeline):
    """Label every word of a text (split like the tokenizer splits it) or of a list of words (pass a list
    of such lists: a plain list is a batch of texts).

    Returns, per word, `{"word", "entity", "score", "index", "start", "end"}` as transformers'
    token-classification pipeline does; `start`/`end` are character offsets into the text (None for a list
    of words).
    """

    def _sanitize_parameters(self, **kwargs: Any) -> tuple[dict, dict, dict]:
        return {}, {}, {}

    def preprocess(self, inputs: str | list[str]) -> dict[str, Any]:
        words = self.tokenizer.tokenize(inputs) if isinstance(inputs, str) else list(inputs)
        encoded = self.tokenizer(words, is_split_into_words=True, return_tensors="pt")
        return {"model_inputs": encoded, "words": words, "text": inputs if isinstance(inputs, str) else None}

    def _forward(self, model_inputs: dict[str, Any]) -> dict[str, Any]:
        logits = self.model(**model_inputs["model_inputs"]).logits
        return {"logits": logits, "words": model_inputs["words"], "text": model_inputs["text"]}

    def postprocess(self, model_outputs: dict[str, Any]) -> list[dict[str, Any]]:
        logits = model_outputs["logits"][0].float().numpy()
        probabilities = np.exp(logits - logits.max(axis=-1, keepdims=True))
        probabilities /= probabilities.sum(axis=-1, keepdims=True)
        text, position, results = model_outputs["text"], 0, []
        for index, (word, scores) in enumerate(zip(model_outputs["words"], probabilities, strict=True)):
            start = end = None
            if text is not None:
                start = text.find(word, position)
                end = start + len(word)
                position = end
            label = int(scores.argmax())
            results.append(
                {
                    "word": word,
                    "entity": self.model.config.id2label[label],
                    "score": float(scores[label]),
                    "index": index,
                    "start": start,
                    "end": end,
                }
            )
        return results


PIPELINE_REGISTRY.register_pipeline(
    "elmo-token-classification",
    pipeline_class=ElmoTokenClassificationPipeline,
    pt_model=AutoModelForTokenClassification,
    type="text",
)
