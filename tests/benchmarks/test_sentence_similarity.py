"""benchmarks/quality/sentence_similarity.py on a few made-up texts in the Lee files' format (no download): the
files are read as gensim ships them, the word-count baseline and the correlations are right where the answer is
known, and every row of the report is written."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "quality" / "sentence_similarity.py"
# Word-count cosines of these texts (lowercased): 0.75 for the first two, 0.25 for texts sharing one word of four,
# 0 otherwise; the ratings below are those cosines plus 0.2, so the counts' rho and r are exactly 1.
TEXTS = ["A b c d", "a B c e", "a f g h", "i j k l", "m n o £", "p q r s", "m t u v", "w x y z"]


@pytest.fixture(scope="module")
def benchmark():
    spec = importlib.util.spec_from_file_location("sentence_similarity", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    yield module
    sys.modules.pop(spec.name, None)


def _write_lee_files(folder: Path, texts: list[str], ratings: np.ndarray) -> Path:
    folder.mkdir()
    (folder / "lee.cor").write_bytes("\n".join(texts).encode("latin-1"))  # as gensim ships it: Latin-1
    lines = ["\t".join(f"{value:g}" if column >= row else "0" for column, value in enumerate(values))
             for row, values in enumerate(ratings)]  # fmt: skip
    (folder / "similarities0-1.txt").write_text("\n".join(lines) + "\n")
    return folder


def _ratings(benchmark) -> np.ndarray:
    ratings = benchmark.cosine_matrix(benchmark.count_vectors(TEXTS)) + 0.2
    np.fill_diagonal(ratings, 1.0)
    return ratings


def test_reading_counting_and_correlating(benchmark, tmp_path: Path) -> None:
    folder = _write_lee_files(tmp_path / "lee", TEXTS, _ratings(benchmark))
    data = benchmark.read_similarity_set(folder)
    assert data.texts[4] == "m n o £" and len(data.texts) == 8
    assert data.ratings[0, 1] == data.ratings[1, 0] == pytest.approx(0.95) and data.ratings[0, 0] == 0
    counts = benchmark.count_vectors(["The cat", "the dog the"])
    assert counts.tolist() == [[1, 0, 1], [0, 1, 2]]  # vocabulary: cat, dog, the
    counts_row = benchmark.score(benchmark.count_vectors(TEXTS), data.ratings)
    assert counts_row.spearman == pytest.approx(1.0) and counts_row.pearson == pytest.approx(1.0)
    reversed_similarity = 1 - benchmark.cosine_matrix(benchmark.count_vectors(TEXTS))
    assert benchmark.correlations(reversed_similarity, data.ratings)[0] == pytest.approx(-1.0)
    assert not benchmark.cosine_matrix(np.zeros((2, 3))).any()  # a text without words: cosine 0, not NaN

    (folder / "similarities0-1.txt").write_text("1\t0.5\n0\t1\n")
    with pytest.raises(SystemExit, match=r"must hold a 8 x 8 matrix .* got 2 rows"):
        benchmark.read_similarity_set(folder)
    (folder / "similarities0-1.txt").write_text("1\tx\n")
    with pytest.raises(SystemExit, match=r"similarities0-1.txt, line 1"):
        benchmark.read_similarity_set(folder)


def test_writes_every_row(benchmark, fixture_model_folder: Path, tmp_path: Path) -> None:
    folder = _write_lee_files(tmp_path / "lee", TEXTS, _ratings(benchmark))
    output = tmp_path / "docs"
    arguments = ["--model", str(fixture_model_folder), "--data_dir", str(folder), "--output_dir", str(output)]
    rows = benchmark.main([*arguments, "--layers", "average", "1", "--random_seeds", "0", "--bootstrap", "30"])
    names = [row.name for row in rows]
    assert names[:3] == [
        benchmark.COUNTS,
        "distinct words (one-hot, 1 per word present)",
        "tf-idf (idf from these 8 texts)",
    ]
    assert names[3].startswith("ELMo `--layers average`: the mean of all 3 layers")
    assert names[4:] == ["untrained ELMo `--layers average`", names[5], "untrained ELMo `--layers 1`"]
    assert rows[0].scores.spearman == pytest.approx(1.0)
    elmo = rows[3]
    assert elmo.difference[0] == pytest.approx(elmo.scores.spearman - 1.0)
    assert elmo.interval[0] <= elmo.interval[1] and rows[4].spread == 0.0  # one seed
    report = (output / "sentence_similarity.md").read_text()
    assert report.count("\n| ") == len(rows) + 2  # the header, its rule and one line per row
    assert "--layers average 1 --random_seeds 0" in report and "8 texts" in report
