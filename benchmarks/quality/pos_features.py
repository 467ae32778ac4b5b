"""The biLM's layers for pos_sample_efficiency.py: computed once for every corpus sentence through the
feature cache (or by an embedder, such as an ONNX graph's) and held in memory, and the control's biLM with its
weights shuffled."""

from __future__ import annotations

import argparse
import copy
import time
from pathlib import Path
from typing import TYPE_CHECKING

import datasets
import numpy as np
import torch
from datasets import Dataset, concatenate_datasets
from pos_corpus import Corpus
from tqdm.auto import tqdm

from elmo_transformers.training.finetuning.feature_cache import FEATURES_COLUMN, cache_bilm_features
from modeling_elmo import ElmoModel, ElmoTokenizer

if TYPE_CHECKING:
    from elmo_transformers.serving import GraphEmbedder

__all__ = ["DEFAULT_CACHE_DIR", "BilmFeatures", "compute_features", "embedder_features", "shuffled_bilm"]

DEFAULT_CACHE_DIR = Path(datasets.config.HF_DATASETS_CACHE) / "elmo_bilm_features"
TOKENIZE_CHUNK = 1000  # sentences


class BilmFeatures:
    """The biLM's layers of every corpus sentence in memory: `flat` (words, layers, 2P) and row offsets."""

    def __init__(self, flat: torch.Tensor, offsets: np.ndarray) -> None:
        self.flat = flat
        self.offsets = offsets

    def row(self, index: int) -> torch.Tensor:
        return self.flat[self.offsets[index] : self.offsets[index + 1]]


def compute_features(
    corpus: Corpus, bilm: ElmoModel, tokenizer: ElmoTokenizer, arguments: argparse.Namespace
) -> tuple[BilmFeatures, float, bool]:
    """The biLM's layers of all sentences through the feature cache (computed once, reused on later runs);
    returns them, the seconds taken and whether the cache already held them."""
    start = time.perf_counter()
    order, offsets = _layout(corpus)
    parts = []  # tokenized in chunks: the tokenizer's Python lists of the whole corpus would take ~1 GB
    for first in range(0, len(order), TOKENIZE_CHUNK):
        words = [corpus.sentences[index].words for index in order[first : first + TOKENIZE_CHUNK]]
        encoding = tokenizer(words, is_split_into_words=True)
        parts.append(Dataset.from_dict({name: encoding[name] for name in ("input_ids", "attention_mask")}))
    dataset = concatenate_datasets(parts)
    files_before = set(Path(arguments.cache_dir).glob("*.arrow"))
    cached = cache_bilm_features(
        dataset, bilm, arguments.cache_dir, batch_size=arguments.bilm_batch_size, storage_dtype=arguments.features_dtype
    )
    reused = set(Path(arguments.cache_dir).glob("*.arrow")) <= files_before and bool(files_before)
    num_layers, width = bilm.config.mix_depth + 1, bilm.config.hidden_size
    flat = np.empty((offsets[-1], num_layers, width), dtype=arguments.features_dtype)
    position = 0
    for batch in cached.select_columns([FEATURES_COLUMN]).iter(batch_size=512):
        for layers in batch[FEATURES_COLUMN]:
            index = order[position]
            flat[offsets[index] : offsets[index + 1]] = layers
            position += 1
    return BilmFeatures(torch.from_numpy(flat), offsets), time.perf_counter() - start, reused


def embedder_features(
    corpus: Corpus, embedder: GraphEmbedder, arguments: argparse.Namespace
) -> tuple[BilmFeatures, float]:
    """The layers of all sentences from `embedder` (layers="all"; no feature cache), --bilm_batch_size sentences of
    similar length a call, stored in --features_dtype as `compute_features` stores them; and the seconds taken."""
    start = time.perf_counter()
    order, offsets = _layout(corpus)
    flat = np.empty((offsets[-1], embedder.num_layers, embedder.width), dtype=arguments.features_dtype)
    batches = range(0, len(order), arguments.bilm_batch_size)
    for first in tqdm(batches, desc=f"layers of {embedder.graph.name}", unit="batch"):
        indices = order[first : first + arguments.bilm_batch_size]
        vectors = embedder.embed([corpus.sentences[index].words for index in indices], batch_size=len(indices))
        for index, layers in zip(indices, vectors, strict=True):
            flat[offsets[index] : offsets[index + 1]] = layers.transpose(1, 0, 2)  # (words, L+1, 2P)
    return BilmFeatures(torch.from_numpy(flat), offsets), time.perf_counter() - start


def _layout(corpus: Corpus) -> tuple[list[int], np.ndarray]:
    """The sentences in order of length (the biLM's batches), and each sentence's first word in the flat array."""
    order = sorted(range(len(corpus.sentences)), key=lambda index: len(corpus.sentences[index].words))
    lengths = np.array([len(sentence.words) for sentence in corpus.sentences])
    return order, np.concatenate([[0], np.cumsum(lengths)])


def shuffled_bilm(bilm: ElmoModel, seed: int = 0) -> ElmoModel:
    """The control's biLM: a copy of `bilm` with the entries of each weight tensor randomly permuted, so that its
    activations keep the trained model's scale and the architecture stays, but nothing learned survives."""
    shuffled = copy.deepcopy(bilm).eval()
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for parameter in shuffled.parameters():
            flat = parameter.reshape(-1)
            parameter.copy_(flat[torch.randperm(flat.numel(), generator=generator)].reshape(parameter.shape))
    return shuffled
