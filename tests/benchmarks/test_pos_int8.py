"""benchmarks/quality/pos_int8.py: the layers read from a graph are each sentence's layers of that graph, and the
float32 graph's equal the biLM's (the feature cache's) at every layer; the int8 graph's are close to them but not
equal; end to end on a few sentences, the table holds each run's accuracy and the difference; a folder without the
int8 graph is refused in one line."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pos_comparison  # the benchmark's files, found in its folder (pyproject.toml: pytest's `pythonpath`)
import pos_features
import pos_int8
import pos_sample_efficiency
import pytest

from elmo_transformers.serving import GraphEmbedder
from elmo_transformers.serving.graph_layout import FLOAT_GRAPH, graph_weights
from elmo_transformers.serving.onnx_export import export_onnx
from modeling_elmo import ElmoModel, ElmoTokenizer

pytest.importorskip("onnxruntime")  # the [onnx] extra

# Sentences of 1 to 9 words, non-ASCII and a word over 50 bytes included; every word has one tag.
TAGGED = [
    "the/DT dog/NN sings/VBZ ./.",
    "a/DT quiet/JJ old/JJ café/NN reads/VBZ ./.",
    "rivers/NNS",
    "the/DT naïve/JJ city/NN walks/VBZ and/CC the/DT river/NN sings/VBZ ./.",
    f"a/DT {'x' * 60}/NN ./.",
    "old/JJ houses/NNS",
]


@pytest.fixture(scope="module")
def onnx_folder(fixture_model_folder: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("pos_int8") / "onnx"
    export_onnx(fixture_model_folder, folder, quantize="int8")
    return folder


def _corpus_file(folder: Path, copies: int = 8) -> Path:
    path = folder / "tagged.txt"
    path.write_text("\n".join(TAGGED * copies) + "\n", encoding="utf-8")
    return path


def test_graph_layers_are_each_sentences_and_the_float_graphs_equal_the_biLMs(
    fixture_model_folder: Path, onnx_folder: Path, tmp_path: Path
) -> None:
    arguments = pos_sample_efficiency.parse_arguments(
        ["--model", str(fixture_model_folder), "--corpus", str(_corpus_file(tmp_path, copies=2)),
         "--test_sentences", "4", "--cache_dir", str(tmp_path / "cache"), "--features_dtype", "float32",
         "--bilm_batch_size", "5"]
    )  # fmt: skip
    corpus = pos_comparison.load_corpus(arguments)
    graphs = {quantized: GraphEmbedder(onnx_folder, quantized=quantized) for quantized in (False, True)}
    features = {
        quantized: pos_features.embedder_features(corpus, graphs[quantized], arguments)[0] for quantized in graphs
    }
    bilm = ElmoModel.from_pretrained(fixture_model_folder, mix_layers=None).eval()
    cached = pos_features.compute_features(corpus, bilm, ElmoTokenizer.from_pretrained(fixture_model_folder), arguments)
    assert (
        features[False].flat.shape
        == cached[0].flat.shape
        == (features[False].offsets[-1], 3, 2 * bilm.config.projection_dim)
    )
    np.testing.assert_allclose(features[False].flat.numpy(), cached[0].flat.numpy(), rtol=0, atol=1e-5)
    float_layers, int8_layers = (features[quantized].flat[:, 1:].numpy() for quantized in (False, True))  # biLSTM's
    assert _cosine(float_layers, int8_layers).mean() > 0.99
    assert np.abs(float_layers - int8_layers).max() > 1e-4  # close, but really the 8-bit graph's
    for index, sentence in enumerate(corpus.sentences):  # each sentence alone, no batch
        alone = {quantized: graph.embed([sentence.words])[0].transpose(1, 0, 2) for quantized, graph in graphs.items()}
        np.testing.assert_allclose(features[False].row(index).numpy(), alone[False], rtol=0, atol=1e-5)
        # int8 quantises the activations per call, over the batch: a sentence's vectors move with its batch mates
        assert _cosine(features[True].row(index).numpy(), alone[True]).min() > 0.99


def _cosine(first: np.ndarray, second: np.ndarray) -> np.ndarray:
    return (first * second).sum(-1) / np.linalg.norm(first, axis=-1) / np.linalg.norm(second, axis=-1)


def test_end_to_end_the_table_holds_each_runs_accuracy(
    fixture_model_folder: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    compare = pos_comparison.compare
    runs = {}

    def recording_compare(*args, **kwargs):
        scheme, results, seconds = compare(*args, **kwargs)
        runs.update(results)
        return scheme, results, seconds

    monkeypatch.setattr(pos_comparison, "compare", recording_compare)
    output = tmp_path / "out"
    pos_int8.main(
        ["--model", str(fixture_model_folder), "--corpus", str(_corpus_file(tmp_path)), "--output_dir", str(output),
         "--test_sentences", "12", "--fractions", "0.25", "1", "--seeds", "0", "1", "--min_steps", "3",
         "--batch_size", "8", "--task_hidden_size", "8"]
    )  # fmt: skip
    report = (output / "pos_int8.md").read_text(encoding="utf-8")
    assert "| biLM layers from | 25% (9 sentences) | 100% (36 sentences) |" in report
    assert list(runs) == ["float32", "int8"]
    means = {}
    for name, results in runs.items():
        assert sorted((run.fraction, run.seed) for run in results) == [(0.25, 0), (0.25, 1), (1.0, 0), (1.0, 1)]
        for fraction in (0.25, 1.0):
            accuracies = 100 * np.array([run.accuracy for run in results if run.fraction == fraction])
            means[name, fraction] = accuracies.mean()
            assert f" {accuracies.mean():.2f} ± {accuracies.std():.2f} " in report.split(f"| {name} |")[1]
    differences = [f"{means['int8', fraction] - means['float32', fraction]:+.2f}" for fraction in (0.25, 1.0)]
    assert f"| int8 - float32 (points) | {' | '.join(differences)} |" in report
    assert "--fractions 0.25 1" in report and "torch thread(s)" in report


def test_a_folder_without_the_int8_graph_is_one_line(
    fixture_model_folder: Path, onnx_folder: Path, tmp_path: Path
) -> None:
    float_only = tmp_path / "float-only"
    float_only.mkdir()
    for name in ("config.json", FLOAT_GRAPH, graph_weights(FLOAT_GRAPH).name, "tokenizer_config.json", "vocab.txt"):
        if (onnx_folder / name).is_file():
            (float_only / name).write_bytes((onnx_folder / name).read_bytes())
    with pytest.raises(SystemExit, match=r"^error: .*model_quantized\.onnx") as exit_info:
        pos_int8.main(
            ["--model", str(fixture_model_folder), "--onnx_model", str(float_only), "--corpus",
             str(_corpus_file(tmp_path)), "--test_sentences", "12", "--output_dir", str(tmp_path / "out")]
        )  # fmt: skip
    assert "\n" not in str(exit_info.value)
