"""The frozen-biLM feature cache: stored layers give the live model's logits, a stored file is reused without
running the biLM, and the key follows the weights, the inputs and the stored layers, not the mixing."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from datasets import Dataset, concatenate_datasets
from transformers import AutoTokenizer, DataCollatorForTokenClassification

import modeling_elmo  # noqa: F401  (registers the Auto classes)
from elmo_transformers.training.finetuning.collator import ElmoCachedFeaturesCollator
from elmo_transformers.training.finetuning.feature_cache import _pad_inputs, bilm_features_key, cache_bilm_features
from modeling_elmo import ElmoForTokenClassification, ElmoModel
from modeling_elmo.configuration_elmo import ELMO_CONFIG_FIELDS, TASK_HEAD_FIELDS

SENTENCES = [
    ["The", "river", "sings", "."],
    [],
    ["übermäßig", "x" * 60, "Paris"],
    ["a"],
    ["green", "house", "walks", "to", "the", "quiet", "city", "today"],
    ["Hello", "!"],
]


@pytest.fixture
def tokenizer(fixture_model_folder: Path):
    return AutoTokenizer.from_pretrained(fixture_model_folder)


def _dataset(tokenizer, sentences: list[list[str]] = SENTENCES) -> Dataset:
    rows = [dict(tokenizer(words, is_split_into_words=True), labels=[1] * len(words)) for words in sentences]
    return Dataset.from_list(rows)


def _head(folder: Path, **config) -> ElmoForTokenClassification:
    torch.manual_seed(0)
    return ElmoForTokenClassification.from_pretrained(folder, num_labels=3, **config).eval()


def _layers(dataset: Dataset) -> list[np.ndarray]:
    return [np.asarray(row["bilm_layers"]) for row in dataset]


def _live_layers(bilm: ElmoModel, tokenizer, words: list[str]) -> np.ndarray:
    """The biLM's layers of one sentence computed alone, `(words, layers, 2P)`."""
    with torch.no_grad():
        layers = bilm(**tokenizer([words], is_split_into_words=True, return_tensors="pt"), output_hidden_states=True)
    return torch.stack(layers.hidden_states, dim=2)[0].numpy()


def _refuse_to_run(*args, **kwargs):
    raise AssertionError("the biLM ran although its layers are cached")


def test_cached_layers_give_the_live_logits(fixture_model_folder: Path, tokenizer, tmp_path: Path) -> None:
    model = _head(fixture_model_folder)
    dataset = _dataset(tokenizer)
    # One batch, as the live model gets it below: the same computation, so the same bits.
    cached = cache_bilm_features(dataset, model, tmp_path, batch_size=len(dataset))
    assert [Path(file["filename"]).parent for file in cached.cache_files] == [tmp_path]
    assert cached.column_names == [*dataset.column_names, "bilm_layers"]
    for row, words in zip(cached, SENTENCES, strict=True):
        assert row["bilm_layers"].shape == (len(words), 3, 32) and row["bilm_layers"].dtype == np.float32

    live_batch = DataCollatorForTokenClassification(tokenizer)(list(dataset))
    cached_batch = ElmoCachedFeaturesCollator()(list(cached))
    assert set(cached_batch) == {"bilm_layers", "attention_mask", "labels"}
    assert torch.equal(cached_batch["labels"], live_batch["labels"])
    assert torch.equal(cached_batch["attention_mask"], live_batch["attention_mask"])
    with torch.no_grad():
        hidden_states = model.elmo(live_batch["input_ids"], live_batch["attention_mask"], output_hidden_states=True)
        assert torch.equal(cached_batch["bilm_layers"], torch.stack(hidden_states.hidden_states, dim=1))
        live = model(input_ids=live_batch["input_ids"], attention_mask=live_batch["attention_mask"]).logits
        assert torch.equal(model(**cached_batch).logits, live)


def test_a_cached_file_is_reused_without_running_the_bilm(
    fixture_model_folder: Path, tokenizer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    dataset = _dataset(tokenizer)
    first = cache_bilm_features(dataset, _head(fixture_model_folder), tmp_path, batch_size=4)
    files = sorted(tmp_path.iterdir())
    assert [path.name.endswith("-3layers-float32.arrow") for path in files] == [True]

    monkeypatch.setattr(ElmoModel, "forward", _refuse_to_run)
    # Another mixing scheme of the same biLM, and one that mixes only layers 0 and 1 (a file with more serves it).
    for config in ({"mix_mode": "concat", "mix_layer_norm": True}, {"mix_layers": [0, 1]}):
        again = cache_bilm_features(dataset, _head(fixture_model_folder, **config), tmp_path, batch_size=4)
        assert all(np.array_equal(a, b) for a, b in zip(_layers(again), _layers(first), strict=True))
    assert sorted(tmp_path.iterdir()) == files


def test_the_key_follows_the_weights_the_inputs_and_the_stored_layers(
    fixture_model_folder: Path, tokenizer, tmp_path: Path
) -> None:
    dataset = _dataset(tokenizer)
    model = _head(fixture_model_folder)
    key = bilm_features_key(dataset, model.elmo, "float32")
    assert bilm_features_key(dataset, _head(fixture_model_folder, mix_mode="average").elmo, "float32") == key
    assert bilm_features_key(dataset, model.elmo, "float16") != key
    changed_input = _dataset(tokenizer, [*SENTENCES[:-1], ["Hello", "?"]])
    assert bilm_features_key(changed_input, model.elmo, "float32") != key
    # Each input column alone: the same characters with the last word masked out, or other word ids.
    masks = [row["attention_mask"] for row in dataset]
    masked = dataset.remove_columns("attention_mask").add_column("attention_mask", [*masks[:-1], [1, 0]])
    assert bilm_features_key(masked, model.elmo, "float32") != key
    with_word_ids = dataset.add_column("input_word_ids", [[7] * len(words) for words in SENTENCES])
    other_word_ids = dataset.add_column("input_word_ids", [[7] * len(words) for words in SENTENCES[:-1]] + [[7, 8]])
    assert bilm_features_key(with_word_ids, model.elmo, "float32") != bilm_features_key(
        other_word_ids, model.elmo, "float32"
    )
    # The key reads the inputs themselves, however they are chunked or indexed.
    rechunked = concatenate_datasets([dataset.select(range(2)), Dataset.from_list(list(dataset)[2:])])
    assert bilm_features_key(rechunked, model.elmo, "float32") == key

    # Only layers 0 and 1 are computed and stored for a head that mixes no more.
    truncated = cache_bilm_features(dataset, _head(fixture_model_folder, mix_layers=[0, 1]), tmp_path)
    assert [path.name.endswith("-2layers-float32.arrow") for path in tmp_path.iterdir()] == [True]
    full = cache_bilm_features(dataset, model, tmp_path)
    for short, long in zip(_layers(truncated), _layers(full), strict=True):
        assert short.shape[1] == 2 and np.array_equal(short, long[:, :2])

    with torch.no_grad():
        model.elmo.char_encoder.char_embedding.weight[1:] += 0.01
    assert bilm_features_key(dataset, model.elmo, "float32") != key
    changed = cache_bilm_features(dataset, model, tmp_path)
    assert len(list(tmp_path.iterdir())) == 3
    assert np.abs(_layers(changed)[0] - _layers(full)[0]).max() > 1e-3  # the check below tells old from new
    for stored, words in zip(_layers(changed), SENTENCES, strict=True):  # the changed biLM's layers, not the old
        np.testing.assert_allclose(stored, _live_layers(model.elmo, tokenizer, words), rtol=0, atol=1e-6)


def test_float16_storage_is_within_its_rounding(fixture_model_folder: Path, tokenizer, tmp_path: Path) -> None:
    dataset = _dataset(tokenizer)
    model = _head(fixture_model_folder)
    full = cache_bilm_features(dataset, model, tmp_path)
    half = cache_bilm_features(dataset, model, tmp_path, storage_dtype="float16")
    for exact, rounded in zip(_layers(full), _layers(half), strict=True):
        assert rounded.dtype == np.float16
        np.testing.assert_allclose(rounded.astype(np.float32), exact, rtol=1e-3, atol=1e-4)
    assert ElmoCachedFeaturesCollator()(list(half))["bilm_layers"].dtype == torch.float32


def test_the_collator_pads_sequence_labels_and_checks_token_labels(
    fixture_model_folder: Path, tokenizer, tmp_path: Path
) -> None:
    cached = cache_bilm_features(_dataset(tokenizer), _head(fixture_model_folder), tmp_path)
    rows = [{**row, "labels": label} for row, label in zip(cached, [0, 1, 2, 0, 1, 2], strict=True)]
    batch = ElmoCachedFeaturesCollator(pad_to_multiple_of=5)(rows)
    assert batch["bilm_layers"].shape == (6, 3, 10, 32)
    assert batch["attention_mask"].sum(dim=1).tolist() == [len(words) for words in SENTENCES]
    assert batch["labels"].tolist() == [0, 1, 2, 0, 1, 2]
    padding = ~batch["attention_mask"].bool()[:, None].expand(-1, 3, -1)
    assert not batch["bilm_layers"][padding].any()

    rows = list(cached)
    rows[0] = {**rows[0], "labels": [0, 1]}
    with pytest.raises(ValueError, match="row 0 of the batch has 2 labels for 4 words"):
        ElmoCachedFeaturesCollator()(rows)


def test_stored_encodings_are_padded_as_the_tokenizer_pads_them(tokenizer) -> None:
    rows = [dict(tokenizer(words, is_split_into_words=True)) for words in SENTENCES]
    batch = {key: [row[key] for row in rows] for key in rows[0]}
    chars = tokenizer.max_characters_per_token
    inputs, lengths = _pad_inputs(batch, chars, torch.device("cpu"))
    expected = tokenizer.pad(rows, return_tensors="pt")
    assert lengths == [len(words) for words in SENTENCES]
    assert set(inputs) == set(expected)
    for name, tensor in expected.items():
        assert torch.equal(inputs[name], tensor), name
    empty, lengths = _pad_inputs({"input_ids": [[], []]}, chars, torch.device("cpu"))
    assert lengths == [0, 0] and empty["input_ids"].shape == (2, 0, chars) and empty["attention_mask"].shape == (2, 0)


def test_the_key_reads_every_config_field_but_the_task_heads(fixture_model_folder: Path, tokenizer) -> None:
    """A field ElmoConfig gains later is in the key unless it is declared a task head's field."""
    dataset = _dataset(tokenizer)
    bilm = _head(fixture_model_folder).elmo
    key = bilm_features_key(dataset, bilm, "float32")
    other_head = _head(fixture_model_folder, mix_dropout=0.2, task_hidden_size=7, num_output_representations=2)
    assert bilm_features_key(dataset, other_head.elmo, "float32") == key
    for name in ELMO_CONFIG_FIELDS:
        value = getattr(bilm.config, name)
        vars(bilm.config)[name] = "changed"  # past the field's check, which refuses it on assignment
        changed_key = bilm_features_key(dataset, bilm, "float32")
        vars(bilm.config)[name] = value
        assert (changed_key == key) == (name in TASK_HEAD_FIELDS), name
