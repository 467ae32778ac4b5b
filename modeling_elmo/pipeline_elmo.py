"""ELMo's pipelines: `pipeline("elmo-token-classification")`, one prediction per word, and
`pipeline("elmo-substitutes")`, the words the biLM proposes for a position of a sentence (fill-mask's output).

transformers' own token-classification pipeline reads each position as one token id, with a special-tokens mask;
ELMo's tokenizer gives one position of character ids per word instead (and refuses that pipeline's request for the
mask, naming this one), which makes the mapping back to the text simple.
"""

from __future__ import annotations

import numbers
from typing import Any

import numpy as np
import torch
from transformers import AutoModelForPreTraining, AutoModelForTokenClassification, Pipeline
from transformers.pipelines import PIPELINE_REGISTRY
from transformers.utils import cached_file

from .text_elmo import VOCABULARY_FILE

__all__ = ["ElmoSubstitutesPipeline", "ElmoTokenClassificationPipeline"]


class _ElmoWordsPipeline(Pipeline):
    """What ELMo's pipelines share: the input, a text (split like the tokenizer splits it) or a list of words, is
    encoded as one sentence; a list of inputs is a batch, and an empty one gives an empty list."""

    def __call__(self, inputs: Any, *args: Any, **kwargs: Any) -> Any:
        if isinstance(inputs, list | tuple) and not inputs:
            return []  # (transformers' Pipeline looks at inputs[0] to tell a chat from texts)
        return super().__call__(inputs, *args, **kwargs)

    def preprocess(self, inputs: str | list[str]) -> dict[str, Any]:
        words = self.tokenizer.tokenize(inputs) if isinstance(inputs, str) else list(inputs)
        encoded = self.tokenizer(words, is_split_into_words=True, return_tensors="pt")
        return {"model_inputs": encoded, "words": words, "text": inputs if isinstance(inputs, str) else None}


class ElmoTokenClassificationPipeline(_ElmoWordsPipeline):
    """Label every word of a text (split like the tokenizer splits it) or of a list of words (pass a list
    of such lists: a plain list is a batch of texts).

    Returns, per word, `{"word", "entity", "score", "index", "start", "end"}` as transformers'
    token-classification pipeline does; `start`/`end` are character offsets into the text (None for a list
    of words).
    """

    def _sanitize_parameters(self, **kwargs: Any) -> tuple[dict, dict, dict]:
        return {}, {}, {}

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


class ElmoSubstitutesPipeline(_ElmoWordsPipeline):
    """The words that fit a position of a sentence by both of the biLM's language models: the forward LM given the
    words to the left, the backward LM given the words to the right (`ElmoForBidirectionalLM.substitutes`; the
    word at the position plays no part). Needs a language-model folder, with its softmax and `vocab.txt`: a folder
    without the softmax (a biLM, a task head: `ElmoForBidirectionalLM.check_softmax_is_trained`) is refused with a
    ValueError, one without `vocab.txt` with a FileNotFoundError, each one line; so are scores that are NaN or
    infinite (a damaged weight: `ElmoForBidirectionalLM.substitutes`) and a `position` that is not an int.

    Call it on a text (split like the tokenizer splits it) or a list of words (pass a list of such lists: a plain
    list is a batch of texts), with `position` (the word's index), `top_k` (default 10) and `combination` (default
    `"product"`, see `substitutes_elmo`). Returns, as fill-mask does, `top_k` dicts `{"score", "token",
    "token_str", "sequence"}`, best first: the probability under the combination, the word's softmax row, the word,
    and the sentence with the word put in its place (words joined by spaces); without `position`, one such list per
    word (an empty list for a sentence without words, where a `position` is refused). The words come from the model
    folder's `vocab.txt`, or `vocabulary=` (one word per softmax row).
    """

    def __init__(self, *args: Any, vocabulary: list[str] | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.model.check_softmax_is_trained()
        if vocabulary is None:
            vocabulary = _softmax_vocabulary(self.model.name_or_path)
        if len(vocabulary) != self.model.config.vocab_size:
            raise ValueError(
                f"the vocabulary has {len(vocabulary)} words, the model's softmax {self.model.config.vocab_size} rows"
            )
        self.vocabulary = vocabulary

    def _sanitize_parameters(
        self, position: int | None = None, top_k: int | None = None, combination: str | None = None, **kwargs: Any
    ) -> tuple[dict, dict, dict]:
        # Only what the caller gave: the defaults are `ElmoForBidirectionalLM.substitutes`'.
        substitute_options = {"top_k": top_k, "combination": combination}
        return (
            {},
            {name: value for name, value in substitute_options.items() if value is not None},
            {"position": None if position is None else _word_index(position)},
        )

    def _forward(self, model_inputs: dict[str, Any], **substitute_options: Any) -> dict[str, Any]:
        output = self.model.substitutes(**model_inputs["model_inputs"], **substitute_options)
        return {"scores": output.scores, "word_ids": output.word_ids, "words": model_inputs["words"]}

    def postprocess(self, model_outputs: dict[str, Any], position: int | None = None) -> list:
        words = model_outputs["words"]
        if position is not None and not 0 <= position < len(words):
            positions = f"0..{len(words) - 1} (the sentence's words)" if words else "none: the sentence has no words"
            raise ValueError(f"position must be a word's index, {positions}; got {position}")
        positions = range(len(words)) if position is None else [position]
        results = [self._position_results(model_outputs, words, index) for index in positions]
        return results if position is None else results[0]

    def _position_results(self, model_outputs: dict[str, Any], words: list[str], index: int) -> list[dict[str, Any]]:
        scores: torch.Tensor = model_outputs["scores"][0, index]
        word_ids: torch.Tensor = model_outputs["word_ids"][0, index]
        results = []
        for score, word_id in zip(scores.tolist(), word_ids.tolist(), strict=True):
            word = self.vocabulary[word_id]
            sequence = " ".join([*words[:index], word, *words[index + 1 :]])
            results.append({"score": score, "token": word_id, "token_str": word, "sequence": sequence})
        return results


def _word_index(position: Any) -> int:
    """`position` as an int, or a ValueError: a bool or a list would index the scores' tensor as a mask or a
    gather, giving a list where a word id is read."""
    if isinstance(position, bool) or not isinstance(position, numbers.Integral):
        raise ValueError(
            f"position must be a word's index (an int: 0 for the first word), got {position!r} "
            f"({type(position).__name__}); leave it out for every word's substitutes"
        )
    return int(position)


def _softmax_vocabulary(folder: str) -> list[str]:
    """The words of the softmax rows of a language-model folder (or Hub id): its `vocab.txt`, one word per line."""
    path = cached_file(folder, VOCABULARY_FILE, _raise_exceptions_for_missing_entries=False)
    if path is None:
        raise FileNotFoundError(
            f"{folder or 'the model'} holds no {VOCABULARY_FILE}, the words of the softmax's rows (one per line): "
            f"use a language-model folder that has it, or pass vocabulary= (one word per softmax row)"
        )
    with open(path, encoding="utf-8") as file:
        return [line.strip() for line in file.read().splitlines()]


PIPELINE_REGISTRY.register_pipeline(
    "elmo-substitutes",
    pipeline_class=ElmoSubstitutesPipeline,
    pt_model=AutoModelForPreTraining,
    type="text",
)
PIPELINE_REGISTRY.register_pipeline(
    "elmo-token-classification",
    pipeline_class=ElmoTokenClassificationPipeline,
    pt_model=AutoModelForTokenClassification,
    type="text",
)
