"""benchmarks/quality/pos_sample_efficiency.py on a few synthetic word/TAG sentences (no download): end to end,
every row trains and the table (holding each run's accuracy) and the plot are written; a word-to-tag mapping is
learned, and the accuracies are those of the trained models recomputed sentence by sentence; the word embeddings +
ELMo model's inputs."""

from __future__ import annotations

import random
from pathlib import Path

# pos_*: the benchmark's files, found in its folder (pyproject.toml: pytest's `pythonpath`), as a script run finds them
import numpy as np
import pos_corpus
import pos_features
import pos_runs
import pos_sample_efficiency
import pos_taggers
import pytest
import torch

from modeling_elmo import ElmoConfig, ElmoModel, ElmoTokenizer

WORDS = {
    "NN": ["house", "river", "table", "city", "dog"],
    "JJ": ["green", "open", "quiet", "old"],
    "VBZ": ["walks", "sings", "reads"],
    "DT": ["the", "a"],
    ".": ["."],
}


def _corpus_lines(count: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    lines = []
    for _ in range(count):
        tags = ["DT", *rng.choices(["JJ", "NN"], k=rng.randint(0, 2)), "NN", "VBZ", "."]
        lines.append(" ".join(f"{rng.choice(WORDS[tag])}/{tag}" for tag in tags))
    return lines


def test_parsing_split_and_samples() -> None:
    sentences = pos_corpus.parse_tagged_lines(["1/2/CD cups/NNS ./.", "", "Hi/UH"])
    assert sentences == [(["1/2", "cups", "."], ["CD", "NNS", "."]), (["Hi"], ["UH"])]
    with pytest.raises(ValueError, match="line 1"):
        pos_corpus.parse_tagged_lines(["no-tag here/RB"])
    corpus = pos_corpus.split_corpus(pos_corpus.parse_tagged_lines(_corpus_lines(50, 0)), 10, seed=0)
    assert (len(corpus.train), len(corpus.test)) == (40, 10)
    small, large = (pos_corpus.training_sample(corpus, fraction, seed=3) for fraction in (0.1, 0.5))
    assert len(small) == 4 and len(large) == 20 and set(small) <= set(large) <= set(corpus.train)


def test_runs_every_row_and_writes_table_and_plot(fixture_model_folder: Path, tmp_path: Path) -> None:
    corpus = tmp_path / "tagged.txt"
    corpus.write_text("\n".join(_corpus_lines(60, 1)) + "\n", encoding="utf-8")
    output = tmp_path / "docs"
    arguments = [
        "--model", str(fixture_model_folder), "--corpus", str(corpus), "--output_dir", str(output),
        "--cache_dir", str(tmp_path / "cache"), "--test_sentences", "20", "--fractions", "0.25", "1",
        "--seeds", "0", "--min_steps", "3", "--epochs", "1", "--batch_size", "8", "--task_hidden_size", "8",
        "--shuffled_control",
    ]  # fmt: skip
    results = pos_sample_efficiency.main(arguments)

    rows = [*pos_taggers.SCHEME_KEYS, "shuffled_control"]
    assert sorted((r.scheme, r.fraction) for r in results) == sorted((s, f) for s in rows for f in (0.25, 1.0))
    for result in results:
        assert result.sentences == (10 if result.fraction == 0.25 else 40)
        assert result.steps == (3 if result.fraction == 0.25 else 5)
        if result.scheme in ("scalar_mix", pos_taggers.BASELINE_ELMO):  # the ELMo scalar_mix over all 3 layers
            assert list(result.layer_weights) == [0, 1, 2] and sum(result.layer_weights.values()) == pytest.approx(1)
        elif result.scheme == pos_taggers.BASELINE:
            assert result.layer_weights is None
    report = (output / "pos_sample_efficiency.md").read_text(encoding="utf-8")
    assert "| model | 25% (10 sentences) | 100% (40 sentences) |" in report
    config = ElmoConfig.from_pretrained(fixture_model_folder)
    for scheme in pos_taggers.schemes(config, pos_taggers.SCHEME_KEYS, shuffled_control=True):
        row = next(line for line in report.splitlines() if line.startswith(f"| {scheme.title} | "))  # accuracy table
        accuracies = {r.fraction: r.accuracy for r in results if r.scheme == scheme.key}
        assert row == f"| {scheme.title} | {100 * accuracies[0.25]:.1f} | {100 * accuracies[1.0]:.1f} |"
    baseline, with_elmo = "| no ELMo: word embeddings from the task data |", "| word embeddings + ELMo scalar_mix |"
    assert report.index(baseline) < report.index(with_elmo) < report.index("| ELMo scalar_mix (learned weights) |")
    assert "| word embeddings + ELMo scalar_mix | 100% | layer 0 " in report  # its learned layer weights
    assert "| ELMo scalar_mix of layers 0, 1 |" in report
    assert "shuffled biLM weights (control)" in report
    assert "--shuffled_control" in report  # the command
    assert str(fixture_model_folder) in report
    plot = output / "pos_sample_efficiency.png"
    assert plot.read_bytes().startswith(b"\x89PNG")


def _tagged_right_alone(model, batcher, index: int) -> np.ndarray:
    """Whether `model` tags each word of test sentence `index` right, given that sentence alone (no batch, no
    padding)."""
    inputs = batcher([index], False)
    labels = inputs.pop("labels")[0]
    with torch.no_grad():
        return (model(**inputs).logits[0].argmax(dim=-1) == labels).numpy()


def test_a_word_to_tag_mapping_is_learned_and_scored_per_test_token(
    fixture_model_folder: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each word of this corpus has one tag: trained on all of the training split (which holds every test word),
    the baseline and ELMo tag the test split right. Each run's accuracies are the shares of test tokens (of all,
    and of those whose word the fraction's sentences lack) that its trained model tags right sentence by sentence."""
    arguments = pos_sample_efficiency.parse_arguments(
        ["--model", str(fixture_model_folder), "--cache_dir", str(tmp_path), "--min_steps", "40",
         "--batch_size", "8", "--task_hidden_size", "8", "--dropout", "0", "--learning_rate", "0.05"]
    )  # fmt: skip
    corpus = pos_corpus.split_corpus(pos_corpus.parse_tagged_lines(_corpus_lines(60, 1)), 20, seed=0)
    bilm = ElmoModel.from_pretrained(fixture_model_folder, mix_layers=None).eval()
    tokenizer = ElmoTokenizer.from_pretrained(fixture_model_folder)
    features = {False: pos_features.compute_features(corpus, bilm, tokenizer, arguments)[0]}
    trained = []  # the model and batcher of each run, as the benchmark hands them to predict
    predict = pos_runs.predict

    def recording_predict(model, batcher, corpus):
        trained.append((model, batcher))
        return predict(model, batcher, corpus)

    monkeypatch.setattr(pos_runs, "predict", recording_predict)

    for scheme in pos_taggers.schemes(bilm.config, [pos_taggers.BASELINE, "scalar_mix"], shuffled_control=False):
        for fraction in (0.1, 1.0):
            result = pos_runs.run_one(scheme, fraction, 0, corpus, features, arguments)
            model, batcher = trained.pop()
            seen = {
                word
                for index in pos_corpus.training_sample(corpus, fraction, 0)
                for word in corpus.sentences[index].words
            }
            unseen = np.array([word not in seen for index in corpus.test for word in corpus.sentences[index].words])
            right = np.concatenate([_tagged_right_alone(model, batcher, index) for index in corpus.test])
            assert result.accuracy == pytest.approx(right.mean(), abs=1e-12)
            assert result.unseen_tokens == unseen.sum()
            if fraction < 1:
                assert unseen.any() and result.unseen_accuracy == pytest.approx(right[unseen].mean(), abs=1e-12)
        assert result.unseen_tokens == 0 and result.unseen_accuracy is None  # fraction 1: every test word seen
        assert result.accuracy >= 0.95, (scheme.key, result.accuracy)


def test_word_embeddings_plus_elmo_feeds_both_to_the_task_encoder(fixture_model_folder: Path) -> None:
    corpus = pos_corpus.split_corpus(pos_corpus.parse_tagged_lines(_corpus_lines(12, 2)), 4, seed=0)
    arguments = pos_sample_efficiency.parse_arguments(["--model", str(fixture_model_folder), "--task_hidden_size", "8"])
    config = ElmoConfig.from_pretrained(fixture_model_folder)
    (scheme,) = pos_taggers.schemes(config, [pos_taggers.BASELINE_ELMO], shuffled_control=False)
    head = pos_taggers.load_head(arguments.model, corpus, scheme, arguments)
    vocabulary = pos_taggers.Vocabulary(corpus.sentences[: corpus.num_train])
    model = pos_taggers.WordEmbeddingElmoTagger(head, len(vocabulary)).eval()
    width = head.config.hidden_size
    assert head.task_encoder.input_size == 2 * width  # [word embedding; ELMo mix]

    word_ids = torch.tensor([vocabulary.encode(corpus.sentences[0].words)])
    mask = torch.ones_like(word_ids)
    bilm_layers = torch.randn(1, 3, word_ids.shape[1], width)
    inputs = model.head_inputs(word_ids, mask, bilm_layers)
    assert torch.equal(inputs[:, 0], model.embedding(word_ids))
    torch.testing.assert_close(inputs[:, 1], bilm_layers.mean(dim=1))  # uniform softmax weights, scale 1
    labels = torch.tensor([corpus.label_ids[0]])
    with torch.no_grad():
        output = model(word_ids=word_ids, attention_mask=mask, labels=labels, bilm_layers=bilm_layers)
        assert torch.equal(output.logits, head(bilm_layers=inputs, attention_mask=mask).logits)
    assert output.logits.shape == (1, word_ids.shape[1], len(corpus.labels))
    expected_loss = torch.nn.functional.cross_entropy(output.logits[0].double(), labels[0])  # no L2 term: 0 here
    assert output.loss.item() == pytest.approx(expected_loss.item(), abs=1e-6)
