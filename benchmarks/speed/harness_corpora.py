"""The text the speed benchmarks run: generated sentences (Zipf over the bundled model's vocabulary with awkward words,
or uniform over a word list), cut into batches and written one sentence a line for the commands.

A corpus here is a list of sentences, each a list of words; a benchmark that times a command writes it with
``write_sentences``. The speed scripts import it from their own folder (a script run puts that folder first on
``sys.path``).
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path

from modeling_elmo.text_elmo import BILM_TF_SPECIAL_WORDS, VOCABULARY_FILE

__all__ = [
    "AWKWARD_WORDS",
    "RANKED_WORDS",
    "REPOSITORY",
    "batches_of",
    "make_sentences",
    "sentence_batches",
    "uniform_sentences",
    "vocabulary_words",
    "write_sentences",
]

REPOSITORY = Path(__file__).resolve().parents[2]


def vocabulary_words(model_folder: str | Path) -> list[str]:
    """The words of a model folder's ``vocab.txt`` in its order (bilm-tf's: most frequent first), without the
    sentence markers, ``<UNK>`` and blank lines."""
    lines = (Path(model_folder) / VOCABULARY_FILE).read_text(encoding="utf-8").splitlines()
    return [line.strip() for line in lines if line.strip() not in (*BILM_TF_SPECIAL_WORDS, "")]


# Words a tokenizer must survive: non-ASCII, punctuation, clitics, numbers and a word over 48 UTF-8 bytes (cut).
AWKWARD_WORDS = [
    "naïve", "café", "Zürich", "São", "Paulo", "Straße", "façade", "résumé", "Москва", "Ελληνικά", "東京",
    "日本語", "한국어", "עברית", "😀", "—", "…", ",", ".", ";", "'s", "n't", "(", ")", "$", "3.14", "1,000",
    "U.S.", "e-mail", "O'Neill", "supercalifragilisticexpialidocious-antidisestablishmentarianism",
]  # fmt: skip
# The bundled default model's vocabulary: 16,000 words of English text, most frequent first.
RANKED_WORDS = vocabulary_words(REPOSITORY / "modeling_elmo" / "default_model")


def make_sentences(seed: int, batch_size: int, count: int, min_words: int, max_words: int) -> list[list[str]]:
    """Random sentences whose words repeat as in real text: Zipf's law (the word of rank r with probability
    ~ 1/r) over ``RANKED_WORDS``, and one word in 20 from ``AWKWARD_WORDS``.

    How often words repeat matters because each distinct word of a batch goes through the character CNN once.
    With 10-30 words per sentence, 58% of a batch of 32's words are distinct here; in the default model's
    held-out text (Wikipedia, Shakespeare, the King James Bible) 53% are: these batches repeat a little less.
    """
    rng = random.Random(f"elmo-bench-{seed}-{batch_size}")
    cumulative = list(itertools.accumulate(1.0 / rank for rank in range(1, len(RANKED_WORDS) + 1)))

    def word() -> str:
        if rng.random() < 0.05:
            return rng.choice(AWKWARD_WORDS)
        return rng.choices(RANKED_WORDS, cum_weights=cumulative)[0]

    return [[word() for _ in range(rng.randint(min_words, max_words))] for _ in range(count)]


def uniform_sentences(
    words: Sequence[str], count: int, rng: random.Random, min_words: int, max_words: int, *, empty_share: float = 0.0
) -> list[list[str]]:
    """``count`` sentences of ``min_words`` to ``max_words`` words drawn uniformly from ``words``; with
    ``empty_share``, that share of them empty (an empty line of the input)."""

    def length() -> int:
        if empty_share and rng.random() < empty_share:
            return 0
        return rng.randint(min_words, max_words)

    return [rng.choices(words, k=length()) for _ in range(count)]


def batches_of(sentences: list[list[str]], batch_size: int) -> list[list[list[str]]]:
    """``sentences`` cut into batches of ``batch_size`` in their order (the last one may be shorter)."""
    return [sentences[start : start + batch_size] for start in range(0, len(sentences), batch_size)]


def sentence_batches(
    spec: str,
    seed: int,
    min_words: int,
    max_words: int,
    edit: Callable[[list[list[str]]], list[list[str]]] = lambda sentences: sentences,
) -> Iterator[tuple[int, list[list[list[str]]], list[list[str]]]]:
    """For each ``SIZE:COUNT`` of ``spec`` (``32:20,128:5``): the batch size, COUNT batches of generated sentences
    (all of them passed through ``edit`` first) and a warm-up batch of other sentences."""
    for item in spec.split(","):
        size, _, count = item.partition(":")
        batch_size, n_batches = int(size), int(count or 1)
        sentences = edit(make_sentences(seed, batch_size, batch_size * n_batches, min_words, max_words))
        warmup = make_sentences(seed + 1, batch_size, min(batch_size, 8), min_words, max_words)
        yield batch_size, batches_of(sentences, batch_size), warmup


def write_sentences(path: Path, sentences: Iterable[Sequence[str]]) -> Path:
    """``sentences`` as an input file of the commands: one a line, its words separated by spaces."""
    path.write_text("".join(" ".join(words) + "\n" for words in sentences), encoding="utf-8")
    return path
