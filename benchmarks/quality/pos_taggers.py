"""The taggers of pos_sample_efficiency.py: one row of its tables per scheme, the ELMo heads and the
word-embedding baselines around them, and the baselines' vocabulary."""

from __future__ import annotations

import argparse
import copy
import random
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import torch
from pos_corpus import Corpus, TaggedSentence
from torch import nn

from modeling_elmo import ElmoConfig, ElmoForTokenClassification, ElmoLayerMix

__all__ = [
    "BASELINE",
    "BASELINE_ELMO",
    "SCHEME_KEYS",
    "Scheme",
    "Vocabulary",
    "WordEmbeddingElmoTagger",
    "WordEmbeddingTagger",
    "load_head",
    "schemes",
]

BASELINE = "baseline"
BASELINE_ELMO = "baseline_elmo"  # the baseline's word embeddings concatenated with the ELMo scalar_mix
UNK_REPLACE_PROBABILITY = 0.5  # baseline: a word seen once in training becomes <unk> this often while training


@dataclass(frozen=True)
class Scheme:
    """One row of the tables: a model and how it is configured."""

    key: str
    title: str
    overrides: dict[str, Any] = field(default_factory=dict)  # ElmoConfig fields of the head
    shuffled_bilm: bool = False  # the control: layers of the biLM with its weights shuffled


def schemes(config: ElmoConfig, keys: Sequence[str], shuffled_control: bool) -> list[Scheme]:
    top = config.num_hidden_layers
    available = {
        BASELINE: Scheme(
            BASELINE, "no ELMo: word embeddings from the task data", {"mix_mode": "layer", "mix_layers": [0]}
        ),
        BASELINE_ELMO: Scheme(  # the head concatenates its two inputs: the word embeddings and the ELMo mix
            BASELINE_ELMO, "word embeddings + ELMo scalar_mix", {"mix_mode": "concat", "mix_layers": [0, 1]}
        ),
        "scalar_mix": Scheme("scalar_mix", "ELMo scalar_mix (learned weights)", {"mix_mode": "scalar_mix"}),
        "average": Scheme("average", "ELMo average", {"mix_mode": "average"}),
        "top": Scheme("top", f"ELMo top layer ({top})", {"mix_mode": "layer", "mix_layers": [top]}),
        "concat": Scheme("concat", "ELMo concat", {"mix_mode": "concat"}),
        "first_two": Scheme(
            "first_two", "ELMo scalar_mix of layers 0, 1", {"mix_mode": "scalar_mix", "mix_layers": [0, 1]}
        ),
    }
    chosen = [available[key] for key in keys]
    if shuffled_control:
        control = Scheme(
            "shuffled_control", "ELMo scalar_mix, shuffled biLM weights (control)", {"mix_mode": "scalar_mix"}, True
        )
        chosen.append(control)
    return chosen


SCHEME_KEYS = (BASELINE, BASELINE_ELMO, "scalar_mix", "average", "top", "concat", "first_two")


class WordEmbeddingTagger(nn.Module):
    """The baseline: word embeddings learned from the task data where the ELMo head reads the biLM's layers
    (`bilm_layers` of one layer, `mix_mode="layer"`), so dropout, task encoder and classifier are the same."""

    def __init__(self, head: ElmoForTokenClassification, vocabulary_size: int) -> None:
        super().__init__()
        self.head = head
        self.embedding = nn.Embedding(vocabulary_size, head.config.hidden_size, padding_idx=0)

    def forward(
        self,
        word_ids: torch.Tensor,
        attention_mask: torch.Tensor,
        labels: torch.Tensor | None = None,
        bilm_layers: torch.Tensor | None = None,
    ):
        inputs = self.head_inputs(word_ids, attention_mask, bilm_layers)
        return self.head(bilm_layers=inputs, attention_mask=attention_mask, labels=labels)

    def head_inputs(
        self, word_ids: torch.Tensor, attention_mask: torch.Tensor, bilm_layers: torch.Tensor | None
    ) -> torch.Tensor:
        """What the head reads as its layers, (batch, 1, words, D): the word embeddings."""
        return self.embedding(word_ids)[:, None]


class WordEmbeddingElmoTagger(WordEmbeddingTagger):
    """ELMo added to the baseline (Peters et al., 2018): the baseline's word embeddings and the scalar_mix of all
    the biLM's layers (`bilm_layers`), which the head (`mix_mode="concat"` over two inputs) puts side by side
    and drops out before the task encoder. The ELMo mix has no dropout of its own: the head's covers it."""

    def __init__(self, head: ElmoForTokenClassification, vocabulary_size: int) -> None:
        super().__init__(head, vocabulary_size)
        self.elmo_config = elmo_scalar_mix_config(head.config)
        self.elmo_mix = ElmoLayerMix(self.elmo_config)

    def head_inputs(
        self, word_ids: torch.Tensor, attention_mask: torch.Tensor, bilm_layers: torch.Tensor | None
    ) -> torch.Tensor:
        """(batch, 2, words, D): the word embeddings, then the ELMo scalar_mix."""
        if bilm_layers is None:
            raise ValueError("word embeddings + ELMo needs bilm_layers (the cached biLM layers)")
        elmo = self.elmo_mix(bilm_layers.unbind(dim=1), attention_mask.bool())
        return torch.cat([super().head_inputs(word_ids, attention_mask, bilm_layers), elmo[:, None]], dim=1)

    def layer_weights(self) -> dict[int, float]:
        """The softmax weight of each biLM layer in the ELMo scalar_mix."""
        weights = torch.softmax(self.elmo_mix.mix_weights.detach().float(), dim=0).tolist()
        return dict(zip(self.elmo_config.mixed_layers, weights, strict=True))


def elmo_scalar_mix_config(config: ElmoConfig) -> ElmoConfig:
    """`config` (a head's) with a scalar_mix of all the biLM's layers and no mix dropout."""
    mix_config = copy.deepcopy(config)
    mix_config.mix_mode, mix_config.mix_layers, mix_config.mix_dropout = "scalar_mix", None, 0.0
    return mix_config


class Vocabulary:
    """The words of a training sample: id 0 padding, 1 <unk>; words seen once may be dropped to <unk>."""

    PAD, UNK = 0, 1

    def __init__(self, sentences: Sequence[TaggedSentence]) -> None:
        counts = Counter(word for sentence in sentences for word in sentence.words)
        self.ids = {word: index for index, word in enumerate(counts, start=2)}
        self.singletons = {self.ids[word] for word, count in counts.items() if count == 1}

    def __len__(self) -> int:
        return len(self.ids) + 2

    def __contains__(self, word: str) -> bool:
        return word in self.ids

    def encode(self, words: Sequence[str], rng: random.Random | None = None) -> list[int]:
        """Word ids; with `rng` (training) each word seen once becomes <unk> with UNK_REPLACE_PROBABILITY."""
        ids = [self.ids.get(word, self.UNK) for word in words]
        if rng is not None:
            ids = [
                self.UNK if index in self.singletons and rng.random() < UNK_REPLACE_PROBABILITY else index
                for index in ids
            ]
        return ids


def load_head(model_dir: str, corpus: Corpus, scheme: Scheme, arguments: argparse.Namespace):
    """The token-classification head of `scheme`, the same recipe for every row (whatever the folder's config says)."""
    settings: dict[str, Any] = {
        "task_encoder": "bilstm",
        "task_hidden_size": arguments.task_hidden_size,
        "task_num_layers": 1,
        "mix_dropout": arguments.dropout,
        "classifier_dropout": arguments.dropout,
        "mix_layer_norm": False,
        "mix_l2_coefficient": 0.0,
        "mix_initial_weights": None,
        "mix_trainable": True,
        "num_output_representations": 1,
        "mix_layers": None,
        **scheme.overrides,
    }
    return ElmoForTokenClassification.from_pretrained(
        model_dir,
        num_labels=len(corpus.labels),
        id2label=dict(enumerate(corpus.labels)),
        label2id={label: index for index, label in enumerate(corpus.labels)},
        **settings,
    )
