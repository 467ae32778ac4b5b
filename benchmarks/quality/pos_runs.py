"""One run of pos_sample_efficiency.py: a tagger trained on a training sample with the shared recipe
(length-bucketed batches, Adam, clipping) and scored on the test split."""

from __future__ import annotations

import argparse
import math
import random
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

import numpy as np
import torch
from pos_corpus import Corpus, training_sample
from pos_features import BilmFeatures
from pos_taggers import (
    BASELINE,
    BASELINE_ELMO,
    Scheme,
    Vocabulary,
    WordEmbeddingElmoTagger,
    WordEmbeddingTagger,
    load_head,
)
from torch import nn

from elmo_transformers.training.finetuning.collator import ElmoCachedFeaturesCollator
from elmo_transformers.training.finetuning.feature_cache import FEATURES_COLUMN
from elmo_transformers.training.finetuning.layer_weights import layer_weights
from modeling_elmo import ElmoForTokenClassification

__all__ = ["GRADIENT_CLIP", "RunResult", "run_one"]

GRADIENT_CLIP = 5.0
EVAL_BATCH_SIZE = 128


Batcher = Callable[[list[int], bool], dict[str, torch.Tensor]]


def elmo_batcher(corpus: Corpus, features: BilmFeatures) -> Batcher:
    """The cached biLM layers, attention mask and labels (`ElmoCachedFeaturesCollator`)."""
    collator = ElmoCachedFeaturesCollator()

    def batch(indices: list[int], training: bool) -> dict[str, torch.Tensor]:
        rows = [{FEATURES_COLUMN: features.row(index), "labels": corpus.label_ids[index]} for index in indices]
        return collator(rows)

    return batch


def baseline_batcher(corpus: Corpus, vocabulary: Vocabulary, rng: random.Random) -> Batcher:
    """Word ids (training: singletons dropped to <unk> by `rng`), attention mask and labels."""

    def batch(indices: list[int], training: bool) -> dict[str, torch.Tensor]:
        words = max(len(corpus.sentences[index].words) for index in indices)
        word_ids = torch.zeros(len(indices), words, dtype=torch.long)
        attention_mask = torch.zeros(len(indices), words, dtype=torch.long)
        labels = torch.full((len(indices), words), -100, dtype=torch.long)
        for row, index in enumerate(indices):
            length = len(corpus.sentences[index].words)
            ids = vocabulary.encode(corpus.sentences[index].words, rng if training else None)
            word_ids[row, :length] = torch.tensor(ids)
            attention_mask[row, :length] = 1
            labels[row, :length] = torch.tensor(corpus.label_ids[index])
        return {"word_ids": word_ids, "attention_mask": attention_mask, "labels": labels}

    return batch


def combined_batcher(words: Batcher, elmo: Batcher) -> Batcher:
    """The batches of `words` (the baseline's) with the cached biLM layers of `elmo` added."""

    def batch(indices: list[int], training: bool) -> dict[str, torch.Tensor]:
        return {**words(indices, training), FEATURES_COLUMN: elmo(indices, training)[FEATURES_COLUMN]}

    return batch


def length_bucketed_batches(
    indices: Sequence[int], lengths: Sequence[int], batch_size: int, rng: random.Random
) -> Iterator[list[int]]:
    """Endless batches: each epoch shuffles, sorts pools of 20 batches by length, cuts and shuffles the batches."""
    while True:
        shuffled = list(indices)
        rng.shuffle(shuffled)
        pool = batch_size * 20
        batches = []
        for start in range(0, len(shuffled), pool):
            chunk = sorted(shuffled[start : start + pool], key=lengths.__getitem__)
            batches += [chunk[offset : offset + batch_size] for offset in range(0, len(chunk), batch_size)]
        rng.shuffle(batches)
        yield from batches


def training_steps(sentences: int, arguments: argparse.Namespace) -> int:
    return max(math.ceil(arguments.epochs * math.ceil(sentences / arguments.batch_size)), arguments.min_steps)


def train(model: nn.Module, batcher: Batcher, batches: Iterator[list[int]], steps: int, learning_rate: float) -> float:
    """`steps` Adam updates; returns the mean loss of the last 10% of them."""
    parameters = [parameter for parameter in model.parameters() if parameter.requires_grad]
    optimizer = torch.optim.Adam(parameters, lr=learning_rate)
    model.train()
    losses = []
    for _ in range(steps):
        loss = model(**batcher(next(batches), True)).loss
        loss.backward()
        nn.utils.clip_grad_norm_(parameters, GRADIENT_CLIP)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        losses.append(loss.item())
    tail = losses[-max(1, steps // 10) :]
    return sum(tail) / len(tail)


def predict(model: nn.Module, batcher: Batcher, corpus: Corpus) -> np.ndarray:
    """Per test token (in corpus order), whether the model's tag is right."""
    lengths = corpus.lengths()
    order = sorted(corpus.test, key=lengths.__getitem__)
    correct: dict[int, np.ndarray] = {}
    model.eval()
    with torch.no_grad():
        for start in range(0, len(order), EVAL_BATCH_SIZE):
            indices = order[start : start + EVAL_BATCH_SIZE]
            batch = batcher(indices, False)
            labels = batch.pop("labels")
            predictions = model(**batch).logits.argmax(dim=-1)
            for row, index in enumerate(indices):
                length = lengths[index]
                correct[index] = (predictions[row, :length] == labels[row, :length]).numpy()
    return np.concatenate([correct[index] for index in corpus.test])


@dataclass
class RunResult:
    scheme: str
    fraction: float
    seed: int
    sentences: int
    steps: int
    accuracy: float
    unseen_accuracy: float | None
    unseen_tokens: int
    seconds: float
    final_loss: float
    layer_weights: dict[int, float] | None = None  # biLM layer -> softmax weight in the ELMo scalar_mix


def build_model(
    scheme: Scheme,
    head: ElmoForTokenClassification,
    vocabulary: Vocabulary,
    corpus: Corpus,
    features: dict[bool, BilmFeatures],
    seed: int,
) -> tuple[nn.Module, Batcher]:
    """The model of `scheme` around `head`, and the batcher that feeds it (the word-embedding rows share the
    <unk> replacements of `seed`)."""
    if scheme.key in (BASELINE, BASELINE_ELMO):
        words = baseline_batcher(corpus, vocabulary, random.Random(f"unk-{seed}"))
        if scheme.key == BASELINE:
            return WordEmbeddingTagger(head, len(vocabulary)), words
        elmo = elmo_batcher(corpus, features[False])
        return WordEmbeddingElmoTagger(head, len(vocabulary)), combined_batcher(words, elmo)
    return head, elmo_batcher(corpus, features[scheme.shuffled_bilm])


def learned_layer_weights(model: nn.Module) -> dict[int, float] | None:
    """The softmax weight of each biLM layer in the model's ELMo scalar_mix; None for models without one."""
    if isinstance(model, WordEmbeddingElmoTagger):
        return model.layer_weights()
    if isinstance(model, ElmoForTokenClassification) and model.config.mix_mode == "scalar_mix":
        summary = layer_weights(model)
        return dict(zip(summary["layers"], summary["representations"][0]["weights"], strict=True))
    return None


def run_one(
    scheme: Scheme,
    fraction: float,
    seed: int,
    corpus: Corpus,
    features: dict[bool, BilmFeatures],
    arguments: argparse.Namespace,
) -> RunResult:
    start = time.perf_counter()
    sample = training_sample(corpus, fraction, seed)
    vocabulary = Vocabulary([corpus.sentences[index] for index in sample])
    unseen = np.array([word not in vocabulary for index in corpus.test for word in corpus.sentences[index].words])
    torch.manual_seed(seed)
    head = load_head(arguments.model, corpus, scheme, arguments)
    model, batcher = build_model(scheme, head, vocabulary, corpus, features, seed)
    steps = training_steps(len(sample), arguments)
    batches = length_bucketed_batches(sample, corpus.lengths(), arguments.batch_size, random.Random(f"batches-{seed}"))
    final_loss = train(model, batcher, batches, steps, arguments.learning_rate)
    correct = predict(model, batcher, corpus)
    return RunResult(
        scheme=scheme.key,
        fraction=fraction,
        seed=seed,
        sentences=len(sample),
        steps=steps,
        accuracy=float(correct.mean()),
        unseen_accuracy=float(correct[unseen].mean()) if unseen.any() else None,
        unseen_tokens=int(unseen.sum()),
        seconds=time.perf_counter() - start,
        final_loss=final_loss,
        layer_weights=learned_layer_weights(model),
    )
