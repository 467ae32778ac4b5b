"""What are averaged ELMo vectors worth for text similarity? Correlation with human similarity ratings of the
sentence-transformers folders `elmo-convert sentence-transformers` writes, against task-independent baselines.

    python benchmarks/quality/sentence_similarity.py
    python benchmarks/quality/sentence_similarity.py --model elmo-original --layers average first-two --random_seeds 0
    python benchmarks/quality/sentence_similarity.py --model elmo-fixture --data_dir my-lee-files --output_dir /tmp/sim

Data: the Lee, Pincombe & Welsh (2005) document-similarity set as gensim 4.4.0's wheel ships it in its test data
(LGPL-2.1 package; `gensim/test/test_data/lee.cor`: 50 short news documents, one per line, and
`similarities0-1.txt`: the mean human similarity rating of every pair, scaled to 0..1, upper triangle). It is
fetched at run time with `pip download --no-deps gensim==4.4.0` into --download_dir and never part of this
repository; --data_dir reads the two files from a folder instead. No sentence-level similarity or paraphrase set
ships in a PyPI package that we found (searched: STS, SICK, SentEval, MRPC, paraphrase corpora): these are short
documents (a few sentences each), encoded whole, as `encode()` does with any text.

Rows (each text is one vector; the score of a pair is the cosine of the two vectors):

- ELMo: --model converted with `--layers` each of --layers, the sentence-transformers model `encode()` runs.
- untrained ELMo: the same architecture with fresh random weights (bilm-tf's initialisation, one model per
  --random_seeds), the same layers: what the character CNN and the LSTMs give without language-model training.
- word counts: the mean of one-hot vectors of the lowercased words (the same word split), i.e. bag-of-words counts.

Metric: Spearman's rho (and Pearson's r) between the cosines and the human ratings over all 1,225 pairs, with a 95%
interval from --bootstrap resamples of the documents (pairs of one document are not independent); the same
resamples give an interval for each row's difference to the word counts. Written to --output_dir:
`sentence_similarity.md`.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
import warnings
import zipfile
from collections import Counter
from collections.abc import Sequence
from dataclasses import astuple, dataclass
from pathlib import Path

import numpy as np
import torch
from harness_quality import quiet_run, report_command
from scipy.stats import ConstantInputWarning, pearsonr, spearmanr

from elmo_transformers.common.pip_download import GENSIM, PipDownloadError, gensim_wheel
from elmo_transformers.conversion.sentence_embeddings import convert_to_sentence_transformers, describe_layers
from modeling_elmo import DEFAULT_MODEL, ElmoConfig, ElmoModel, ElmoTokenizer, split_words

DOCUMENTS_MEMBER = "gensim/test/test_data/lee.cor"
RATINGS_MEMBER = "gensim/test/test_data/similarities0-1.txt"
DATA_DESCRIPTION = (
    f"Lee, Pincombe & Welsh (2005): 50 short news documents and the mean human similarity rating of each pair, "
    f"from the {GENSIM} wheel's test data (`{DOCUMENTS_MEMBER}`, `{RATINGS_MEMBER}`)"
)
DEFAULT_DOWNLOAD_DIR = Path.home() / ".cache" / "elmo-transformers-benchmarks" / "gensim"
OUTPUT_NAME = "sentence_similarity"
COUNTS = "word counts (the mean of one-hot vectors of the lowercased words)"


@dataclass(frozen=True)
class SimilaritySet:
    texts: list[str]
    ratings: np.ndarray  # (texts, texts), symmetric: the human rating of each pair


@dataclass(frozen=True)
class Scores:
    """Correlations of the pairs' cosines with the human ratings, as they are and after centring."""

    spearman: float
    pearson: float
    centred_spearman: float  # each vector minus the mean vector of all texts, before the cosine
    centred_pearson: float
    mean_cosine: float  # over all pairs, before centring


@dataclass(frozen=True)
class Row:
    name: str
    scores: Scores
    interval: tuple[float, float] | None = None  # 95% bootstrap interval of Spearman's rho
    difference: tuple[float, float, float] | None = None  # rho minus the word counts' rho: value, 95% interval
    spread: float | None = None  # std of rho over random seeds


def parse_arguments(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], epilog=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--model", default=DEFAULT_MODEL, help="ELMo model folder (default: the bundled model)")
    parser.add_argument(
        "--layers", nargs="+", default=None, help="--layers choices to compare (default: average first-two concat 0..L)"
    )
    parser.add_argument("--random_seeds", nargs="*", type=int, default=[0, 1, 2], help="untrained models, one each")
    parser.add_argument("--data_dir", help="a folder with lee.cor and similarities0-1.txt (instead of downloading)")
    parser.add_argument("--download_dir", default=str(DEFAULT_DOWNLOAD_DIR), help="where gensim's wheel is kept")
    parser.add_argument("--bootstrap", type=int, default=1000, help="resamples of the documents for the intervals")
    parser.add_argument("--batch_size", type=int, default=16, help="texts per encode() batch")
    parser.add_argument("--threads", type=int, default=0, help="torch threads (0: torch's default)")
    parser.add_argument("--output_dir", default="docs", help=f"where {OUTPUT_NAME}.md is written")
    return parser.parse_args(argv)


# ---------------------------------------------------------------------------------------------------- data


def fetch_data(download_dir: str | os.PathLike) -> Path:
    """A folder with lee.cor and similarities0-1.txt, extracted from gensim's wheel (pip download on first call)."""
    download_dir = Path(download_dir)
    names = [Path(member).name for member in (DOCUMENTS_MEMBER, RATINGS_MEMBER)]
    if all((download_dir / name).is_file() for name in names):
        return download_dir
    try:
        wheel_path = gensim_wheel(download_dir)
    except PipDownloadError as error:
        sys.exit(f"error: {error}")
    with zipfile.ZipFile(wheel_path) as wheel:
        for member, name in zip((DOCUMENTS_MEMBER, RATINGS_MEMBER), names, strict=True):
            with tempfile.NamedTemporaryFile(dir=download_dir, delete=False) as partial:
                partial.write(wheel.read(member))
            os.replace(partial.name, download_dir / name)
    return download_dir


def read_similarity_set(folder: Path) -> SimilaritySet:
    """lee.cor (one text per line, Latin-1: its pound signs are byte 0xA3) and similarities0-1.txt (a square
    matrix of ratings, upper triangle used)."""
    documents, ratings_file = folder / Path(DOCUMENTS_MEMBER).name, folder / Path(RATINGS_MEMBER).name
    texts = [line.strip() for line in documents.read_text(encoding="latin-1").splitlines() if line.strip()]
    rows = []
    for number, line in enumerate(ratings_file.read_text(encoding="utf-8").splitlines(), start=1):
        try:
            rows.append([float(value) for value in line.split()])
        except ValueError as error:
            sys.exit(f"error: {ratings_file}, line {number}: {error}")
    if len(rows) != len(texts) or any(len(row) != len(texts) for row in rows):
        sys.exit(
            f"error: {ratings_file} must hold a {len(texts)} x {len(texts)} matrix (one row and column per text of "
            f"{documents}), got {len(rows)} rows of {sorted({len(row) for row in rows})} values"
        )
    upper = np.triu(np.array(rows), k=1)
    return SimilaritySet(texts, upper + upper.T)


# ------------------------------------------------------------------------------------------- representations


def count_vectors(texts: Sequence[str]) -> np.ndarray:
    """(texts, vocabulary) counts of the lowercased words of each text (`split_words`, as ELMo's tokenizer)."""
    counts = [Counter(word.lower() for word in split_words(text)) for text in texts]
    vocabulary = {word: index for index, word in enumerate(sorted(set().union(*counts)))}
    vectors = np.zeros((len(texts), len(vocabulary)))
    for row, counter in enumerate(counts):
        for word, count in counter.items():
            vectors[row, vocabulary[word]] = count
    return vectors


def bag_of_words_baselines(texts: Sequence[str]) -> dict[str, np.ndarray]:
    """The task-independent word-level vectors, by name; the first is the reference of the report."""
    counts = count_vectors(texts)
    document_frequency = (counts > 0).sum(axis=0)
    return {
        COUNTS: counts,
        "distinct words (one-hot, 1 per word present)": (counts > 0).astype(float),
        f"tf-idf (idf from these {len(texts)} texts)": counts * np.log(len(texts) / document_frequency),
    }


def elmo_vectors(model_dir: Path, layers: str, texts: Sequence[str], work: Path, batch_size: int) -> np.ndarray:
    """`encode()` of the sentence-transformers model that `elmo-convert sentence-transformers` makes."""
    model = convert_to_sentence_transformers(model_dir, work / f"st-{model_dir.name}-{layers}", layers=layers)
    return model.encode(list(texts), batch_size=batch_size)


def untrained_model(model_dir: Path, seed: int, work: Path) -> Path:
    """A folder with --model's architecture and tokenizer, and fresh random weights (bilm-tf's initialisation)."""
    config = ElmoConfig.from_pretrained(model_dir)
    torch.manual_seed(seed)
    folder = work / f"untrained-{seed}"
    ElmoModel(config).save_pretrained(folder)
    ElmoTokenizer.from_pretrained(model_dir).save_pretrained(folder)
    return folder


# ------------------------------------------------------------------------------------------------ metrics


def cosine_matrix(vectors: np.ndarray) -> np.ndarray:
    """(texts, texts) cosines; a zero vector (a text without words) has cosine 0 with everything."""
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    unit = vectors / np.where(norms > 0, norms, 1.0)
    return unit @ unit.T


def correlations(similarity: np.ndarray, ratings: np.ndarray) -> tuple[float, float]:
    """(Spearman's rho, Pearson's r) over the pairs of distinct texts."""
    first, second = np.triu_indices(len(ratings), k=1)
    return (
        float(spearmanr(similarity[first, second], ratings[first, second]).statistic),
        float(pearsonr(similarity[first, second], ratings[first, second]).statistic),
    )


def score(vectors: np.ndarray, ratings: np.ndarray) -> Scores:
    similarity = cosine_matrix(vectors)
    first, second = np.triu_indices(len(ratings), k=1)
    return Scores(
        *correlations(similarity, ratings),
        *correlations(cosine_matrix(vectors - vectors.mean(axis=0)), ratings),
        mean_cosine=float(similarity[first, second].mean()),
    )


def mean_scores(scores: Sequence[Scores]) -> Scores:
    return Scores(*(float(np.mean(values)) for values in zip(*(astuple(item) for item in scores), strict=True)))


def bootstrap_spearman(similarity: np.ndarray, ratings: np.ndarray, resamples: list[np.ndarray]) -> np.ndarray:
    """Spearman's rho on each resample of the texts (the pairs of two distinct drawn texts)."""
    first, second = np.triu_indices(len(ratings), k=1)
    values = []
    with warnings.catch_warnings():  # a resample of few texts may tie every cosine: rho is NaN there, left out
        warnings.simplefilter("ignore", ConstantInputWarning)
        for texts in resamples:
            a, b = texts[first], texts[second]
            keep = a != b
            values.append(spearmanr(similarity[a[keep], b[keep]], ratings[a[keep], b[keep]]).statistic)
    return np.array(values)


def interval(values: np.ndarray) -> tuple[float, float]:
    """The central 95% of `values`, leaving out resamples where rho is undefined (all cosines tied)."""
    low, high = np.nanpercentile(values, [2.5, 97.5])
    return float(low), float(high)


# ------------------------------------------------------------------------------------------------ report


def describe_model(model_dir: Path) -> str:
    config = ElmoConfig.from_pretrained(model_dir)
    parameters = sum(parameter.numel() for parameter in ElmoModel(config).parameters())
    name = "the bundled `modeling_elmo.DEFAULT_MODEL`" if model_dir == Path(DEFAULT_MODEL) else f"`{model_dir}`"
    return (
        f"{name}: {parameters:,} biLM parameters, {config.num_hidden_layers} biLSTM layers of "
        f"{config.cell_size} cells, projection {config.projection_dim} (layers {config.hidden_size} wide)"
    )


def format_row(row: Row) -> str:
    scores = row.scores
    spearman = f"{scores.spearman:.3f}" + (f" ± {row.spread:.3f}" if row.spread is not None else "")
    interval_text = f"[{row.interval[0]:.3f}, {row.interval[1]:.3f}]" if row.interval else ""
    difference = (
        f"{row.difference[0]:+.3f} [{row.difference[1]:+.3f}, {row.difference[2]:+.3f}]" if row.difference else ""
    )
    return (
        f"| {row.name} | {spearman} | {interval_text} | {difference} | {scores.pearson:.3f} | "
        f"{scores.centred_spearman:.3f} | {scores.centred_pearson:.3f} | {scores.mean_cosine:.3f} |"
    )


def write_report(path: Path, *, command: str, model_line: str, data: SimilaritySet, data_source: str, rows: list[Row],
                 arguments: argparse.Namespace, seconds: float) -> str:  # fmt: skip
    pairs = len(data.texts) * (len(data.texts) - 1) // 2
    words = sum(len(split_words(text)) for text in data.texts)
    seeds = " ".join(map(str, arguments.random_seeds)) or "none"
    lines = [
        "# Averaged ELMo vectors for text similarity",
        "",
        f"Command: `{command}`",
        "",
        f"- model: {model_line}",
        f"- data: {data_source}; {len(data.texts)} texts ({words:,} words, {words / len(data.texts):.0f} per text), "
        f"{pairs:,} rated pairs",
        "- score of a pair: cosine of the two texts' vectors; metric: Spearman's rho with the human ratings "
        f"(Pearson's r also shown); 95% intervals from {arguments.bootstrap} bootstrap resamples of the texts, "
        "the same resamples for every row",
        "- centred: each vector minus the mean vector of all the texts before the cosine (removes the direction "
        "that every text shares; uses no rating)",
        f"- untrained ELMo: the same architecture with fresh random weights, seeds {seeds} (rho: mean ± std over "
        "seeds)",
        f"- run time: {seconds:.0f} s on {torch.get_num_threads()} torch thread(s)",
        "",
        "| vectors | Spearman | 95% interval | minus word counts [95% interval] | Pearson | Spearman, centred "
        "| Pearson, centred | mean cosine |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
        *(format_row(row) for row in rows),
        "",
        "How to read it: a text's vector is the mean of its words' vectors, what the sentence-transformers model's",
        "`encode()` returns; `--layers` says which ELMo layers make a word's vector (see `elmo-convert",
        "sentence-transformers --help`). No row was trained or tuned on this data. With "
        f"{len(data.texts)} texts the intervals are",
        "wide: differences smaller than them are noise.",
        "",
    ]
    table = "\n".join(lines)
    path.write_text(table, encoding="utf-8")
    return table


# ------------------------------------------------------------------------------------------------ main


def main(argv: Sequence[str] | None = None) -> list[Row]:
    arguments = parse_arguments(argv)
    quiet_run(arguments.threads)
    started = time.perf_counter()
    command = report_command("sentence_similarity.py", argv)
    if arguments.data_dir:
        folder, data_source = Path(arguments.data_dir), f"`{arguments.data_dir}`"
    else:
        folder, data_source = fetch_data(arguments.download_dir), DATA_DESCRIPTION
    data = read_similarity_set(folder)
    baselines = bag_of_words_baselines(data.texts)
    rows_of = _RowScorer.against_counts(data.ratings, baselines[COUNTS], arguments.bootstrap)
    rows = []
    for name, vectors in baselines.items():
        rows.append(rows_of.row(name, vectors))
        print(format_row(rows[-1]))
    rows += _elmo_rows(Path(arguments.model), data, rows_of, arguments)
    output_dir = Path(arguments.output_dir)
    output_dir.mkdir(parents=True, exist_ok=True)
    report = output_dir / f"{OUTPUT_NAME}.md"
    seconds = time.perf_counter() - started
    print(write_report(report, command=command, model_line=describe_model(Path(arguments.model)), data=data,
                       data_source=data_source, rows=rows, arguments=arguments, seconds=seconds))  # fmt: skip
    print(f"wrote {report}")
    return rows


@dataclass(frozen=True)
class _RowScorer:
    """Scores vectors into a row: the same bootstrap resamples of the texts for every row, and the word counts'
    rho on the full set and on each resample, which each row's difference is taken to."""

    ratings: np.ndarray
    resamples: list[np.ndarray]
    counts_rho: float
    counts_resampled: np.ndarray

    @classmethod
    def against_counts(cls, ratings: np.ndarray, counts: np.ndarray, bootstrap: int) -> _RowScorer:
        texts = len(counts)
        generator = np.random.default_rng(0)
        resamples = [generator.integers(0, texts, texts) for _ in range(bootstrap)]
        counts_similarity = cosine_matrix(counts)
        counts_rho = correlations(counts_similarity, ratings)[0]
        return cls(ratings, resamples, counts_rho, bootstrap_spearman(counts_similarity, ratings, resamples))

    def row(self, name: str, vectors: np.ndarray) -> Row:
        """A row with its interval, and its difference to the word counts on the same resamples."""
        scores = score(vectors, self.ratings)
        values = bootstrap_spearman(cosine_matrix(vectors), self.ratings, self.resamples)
        difference = (scores.spearman - self.counts_rho, *interval(values - self.counts_resampled))
        return Row(name, scores, interval(values), None if name == COUNTS else difference)


def _elmo_rows(model_dir: Path, data: SimilaritySet, rows_of: _RowScorer, arguments: argparse.Namespace) -> list[Row]:
    """The rows of each --layers choice (all by default) of the model, each followed by its untrained twin's
    (mean over --random_seeds), printed as they come."""
    num_hidden_layers = ElmoConfig.from_pretrained(model_dir).num_hidden_layers
    layer_choices = arguments.layers or ["average", "first-two", "concat", *map(str, range(num_hidden_layers + 1))]
    rows = []
    with tempfile.TemporaryDirectory() as work:
        work = Path(work)
        untrained = [untrained_model(model_dir, seed, work) for seed in arguments.random_seeds]
        for layers in layer_choices:
            description = describe_layers(int(layers) if layers.isdigit() else layers, num_hidden_layers)[0]
            vectors = elmo_vectors(model_dir, layers, data.texts, work, arguments.batch_size)
            rows.append(rows_of.row(f"ELMo `--layers {layers}`: {description}", vectors))
            print(format_row(rows[-1]))
            if untrained:
                seeds = [
                    score(elmo_vectors(folder, layers, data.texts, work, arguments.batch_size), data.ratings)
                    for folder in untrained
                ]
                spread = float(np.std([scores.spearman for scores in seeds]))
                rows.append(Row(f"untrained ELMo `--layers {layers}`", mean_scores(seeds), spread=spread))
                print(format_row(rows[-1]))
    return rows


if __name__ == "__main__":
    main()
