"""Task heads with the stock Trainer: they learn, the frozen biLM stays bit-identical, the loss is right
under gradient accumulation, and saved heads reload with identical logits."""

from __future__ import annotations

import dataclasses
import random
from pathlib import Path

import pytest
import torch
from datasets import Dataset
from transformers import (
    AutoModel,
    AutoModelForSequenceClassification,
    AutoModelForTokenClassification,
    AutoTokenizer,
    DataCollatorForTokenClassification,
    DataCollatorWithPadding,
    Trainer,
    TrainingArguments,
    pipeline,
)

import modeling_elmo.modeling_elmo  # (also registers the Auto classes)
from modeling_elmo import (
    DEFAULT_MODEL,
    ElmoForSequenceClassification,
    ElmoForTokenClassification,
    ElmoModel,
    ElmoTokenizer,
)

# An empty sentence, padding, an empty-string word, a word over the 48 bytes kept, multi-byte characters.
AWKWARD = [["a", "bb"], [], ["", "x" * 60, "é", "日本語"], ["The", "café", "is", "open", "."]]

# A toy part-of-speech task: the class of each word.
WORD_CLASSES = {
    "house": 0,
    "river": 0,
    "table": 0,
    "city": 0,
    "green": 1,
    "open": 1,
    "quiet": 1,
    "walks": 2,
    "sings": 2,
    "reads": 2,
}


def test_a_heads_folder_loads_as_the_whole_base_model(tmp_path: Path) -> None:
    """A head's `mix_layers` decide what the head runs, not what `AutoModel` of its folder computes."""
    head = AutoModelForTokenClassification.from_pretrained(DEFAULT_MODEL, num_labels=3, mix_layers=[0, 1])
    head.save_pretrained(tmp_path / "head")
    base = AutoModel.from_pretrained(tmp_path / "head").eval()
    plain = AutoModel.from_pretrained(DEFAULT_MODEL).eval()
    inputs = ElmoTokenizer.from_pretrained(DEFAULT_MODEL)(
        AWKWARD, is_split_into_words=True, padding=True, return_tensors="pt"
    )
    with torch.no_grad():
        output = base(**inputs, output_hidden_states=True, use_cache=True)
        expected = plain(**inputs, output_hidden_states=True, use_cache=True)
    assert len(output.hidden_states) == base.config.num_hidden_layers + 1 == 3
    assert torch.equal(output.last_hidden_state, output.hidden_states[-1])
    actual, reference = [*output.hidden_states, *output.state], [*expected.hidden_states, *expected.state]
    assert all(torch.equal(a, e) for a, e in zip(actual, reference, strict=True))


def _lstm_steps(model, inputs: dict[str, torch.Tensor], **kwargs) -> dict[int, int]:
    """How many LSTM cell steps each biLSTM layer (1, 2, ...) of `model`'s biLM ran, both directions together:
    each layer's own steps when the layers run one after another (the layer last called), the wavefront's steps
    when they run together (one cell call steps `gates.shape[0]` layers of both directions at once, the lowest
    first)."""
    elmo = model.elmo if hasattr(model, "elmo") else model
    index_of = {
        id(layer): index
        for stack in (elmo.forward_lstm, elmo.backward_lstm)
        for index, layer in enumerate(stack.layers, start=1)
    }
    steps: dict[int, int] = {}
    running, options, run_layer = [1], elmo.lstm_options, modeling_elmo.modeling_elmo.lstm_layer_forward

    def counting(gates, c, clip):
        lowest, groups = (1, gates.shape[0] // 2) if gates.dim() == 3 else (running[0], 1)
        for stepped in range(lowest, lowest + groups):
            steps[stepped] = steps.get(stepped, 0) + 1
        return options.cell(gates, c, clip)

    def running_layer(layer, *args, **options):
        running[0] = index_of[id(layer)]
        return run_layer(layer, *args, **options)

    elmo.lstm_options = dataclasses.replace(options, cell=counting)
    modeling_elmo.modeling_elmo.lstm_layer_forward = running_layer
    try:
        with torch.no_grad():
            model(**inputs, **kwargs)
    finally:
        elmo.lstm_options, modeling_elmo.modeling_elmo.lstm_layer_forward = options, run_layer
    return steps


@pytest.mark.parametrize("implementation", ["layer_by_layer", "wavefront"])
def test_a_head_mixing_the_lower_layers_runs_no_layer_above_them(implementation: str) -> None:
    inputs = ElmoTokenizer.from_pretrained(DEFAULT_MODEL)(
        AWKWARD, is_split_into_words=True, padding=True, return_tensors="pt"
    )
    plain = ElmoModel.from_pretrained(DEFAULT_MODEL, lstm_implementation=implementation).eval()
    everything, first_only = _lstm_steps(plain, inputs), _lstm_steps(plain, inputs, num_layers=1)
    assert sorted(everything) == [1, 2] and sorted(first_only) == [1]
    for mix_layers, expected in (([0, 1], first_only), ([0], {}), (None, everything)):
        head = ElmoForTokenClassification.from_pretrained(
            DEFAULT_MODEL, num_labels=3, mix_layers=mix_layers, lstm_implementation=implementation
        ).eval()
        assert _lstm_steps(head, inputs) == expected, f"mix_layers={mix_layers}"


def _sentences(count: int, seed: int) -> list[list[str]]:
    rng = random.Random(seed)
    return [[rng.choice(list(WORD_CLASSES)) for _ in range(rng.randint(2, 8))] for _ in range(count)]


def _token_dataset(tokenizer, count: int, seed: int) -> Dataset:
    """Label each word with its class."""
    rows = [
        dict(tokenizer(words, is_split_into_words=True), labels=[WORD_CLASSES[word] for word in words])
        for words in _sentences(count, seed)
    ]
    return Dataset.from_list(rows)


def _sequence_dataset(tokenizer, count: int, seed: int) -> Dataset:
    """Label a sentence 1 if it has a verb."""
    rows = [
        dict(tokenizer(words, is_split_into_words=True), labels=int(any(WORD_CLASSES[word] == 2 for word in words)))
        for words in _sentences(count, seed)
    ]
    return Dataset.from_list(rows)


def _train(model, tokenizer, train: Dataset, collator, output_dir: Path, epochs: int = 6) -> Trainer:
    arguments = TrainingArguments(
        output_dir=str(output_dir),
        num_train_epochs=epochs,
        per_device_train_batch_size=16,
        learning_rate=1e-2,
        report_to=[],
        save_strategy="no",
        logging_strategy="no",
        seed=0,
        use_cpu=True,
        gradient_accumulation_steps=2,
    )
    trainer = Trainer(
        model=model, args=arguments, train_dataset=train, data_collator=collator, processing_class=tokenizer
    )
    trainer.train()
    return trainer


def _accuracy(model, tokenizer, dataset: Dataset, collator) -> float:
    batch = collator([dataset[index] for index in range(len(dataset))])
    model.eval()
    with torch.no_grad():
        logits = model(**{key: value for key, value in batch.items() if key != "labels"}).logits
    labels = batch["labels"]
    predictions = logits.argmax(-1)
    valid = labels != -100
    return float((predictions[valid] == labels[valid]).float().mean())


def _bilm_state(model) -> dict[str, torch.Tensor]:
    return {name: tensor.clone() for name, tensor in model.elmo.state_dict().items()}


@pytest.mark.parametrize(
    "mix",
    [
        {"mix_mode": "scalar_mix", "mix_l2_coefficient": 0.01, "mix_layer_norm": True},
        {"mix_mode": "concat"},
        {"mix_mode": "per_token"},
        {"mix_mode": "scalar_mix", "mix_layers": [0, 1]},
    ],
)
@pytest.mark.slow
def test_token_classification_learns_with_a_frozen_bilm(fixture_model_folder: Path, tmp_path: Path, mix) -> None:
    tokenizer = AutoTokenizer.from_pretrained(fixture_model_folder)
    model = AutoModelForTokenClassification.from_pretrained(fixture_model_folder, num_labels=3, **mix)
    assert isinstance(model, ElmoForTokenClassification)
    bilm = ElmoModel.from_pretrained(fixture_model_folder)
    for name, tensor in bilm.state_dict().items():
        assert torch.equal(model.elmo.state_dict()[name], tensor), f"{name} not loaded from the biLM"
    before = _bilm_state(model)
    collator = DataCollatorForTokenClassification(tokenizer)
    _train(model, tokenizer, _token_dataset(tokenizer, 160, seed=1), collator, tmp_path)
    accuracy = _accuracy(model, tokenizer, _token_dataset(tokenizer, 80, seed=2), collator)
    assert accuracy > 0.95, accuracy
    for name, tensor in _bilm_state(model).items():
        assert torch.equal(tensor, before[name]), f"frozen biLM weight {name} changed"


def test_sequence_classification_learns_and_reloads(fixture_model_folder: Path, tmp_path: Path) -> None:
    tokenizer = AutoTokenizer.from_pretrained(fixture_model_folder)
    model = AutoModelForSequenceClassification.from_pretrained(
        fixture_model_folder, num_labels=2, num_output_representations=2, mix_l2_coefficient=0.001
    )
    assert isinstance(model, ElmoForSequenceClassification)
    before = _bilm_state(model)
    collator = DataCollatorWithPadding(tokenizer)
    trainer = _train(
        model, tokenizer, _sequence_dataset(tokenizer, 160, seed=3), collator, tmp_path / "train", epochs=12
    )
    test = _sequence_dataset(tokenizer, 80, seed=4)
    assert _accuracy(model, tokenizer, test, collator) > 0.9
    for name, tensor in _bilm_state(model).items():
        assert torch.equal(tensor, before[name]), f"frozen biLM weight {name} changed"

    trainer.save_model(str(tmp_path / "saved"))
    reloaded = AutoModelForSequenceClassification.from_pretrained(tmp_path / "saved").eval()
    batch = collator([test[index] for index in range(8)])
    inputs = {key: value for key, value in batch.items() if key != "labels"}
    model.eval()
    with torch.no_grad():
        assert torch.equal(model(**inputs).logits, reloaded(**inputs).logits)
    assert (tmp_path / "saved" / "mixing_elmo.py").is_file(), "remote code includes the mixing module"


def test_loss_is_the_same_whole_or_accumulated(fixture_model_folder: Path) -> None:
    """Under gradient accumulation the Trainer sums micro-batch losses divided by the items of all of them:
    the sum must equal the whole batch's loss, L2 penalty included (counted once)."""
    tokenizer = AutoTokenizer.from_pretrained(fixture_model_folder)
    model = ElmoForTokenClassification.from_pretrained(
        fixture_model_folder,
        num_labels=3,
        mix_l2_coefficient=0.5,
        mix_initial_weights=[1.0, 0.0, -1.0],
        mix_dropout=0.0,
        classifier_dropout=0.0,
    ).eval()
    collator = DataCollatorForTokenClassification(tokenizer)
    dataset = _token_dataset(tokenizer, 6, seed=5)
    whole = collator([dataset[index] for index in range(6)])
    halves = [collator([dataset[index] for index in part]) for part in (range(3), range(3, 6))]
    items = (whole["labels"] != -100).sum()
    with torch.no_grad():
        expected = model(**whole).loss
        accumulated = sum(model(**half, num_items_in_batch=items).loss for half in halves)
    torch.testing.assert_close(accumulated, expected)
    assert float(expected) > 0.5 * 2.0  # the penalty (0.5 * (1 + 1)) is in it


def test_precomputed_bilm_layers_give_the_same_logits(fixture_model_folder: Path) -> None:
    tokenizer = AutoTokenizer.from_pretrained(fixture_model_folder)
    model = ElmoForTokenClassification.from_pretrained(fixture_model_folder, num_labels=3).eval()
    inputs = tokenizer(
        [["a", "Paris"], ["river", "x", "y"], []], is_split_into_words=True, padding=True, return_tensors="pt"
    )
    with torch.no_grad():
        layers = torch.stack(model.elmo(**inputs, output_hidden_states=True).hidden_states, dim=1)
        live = model(**inputs).logits
        cached = model(bilm_layers=layers, attention_mask=inputs["attention_mask"]).logits
    assert torch.equal(live, cached)


def _tags_from_the_model(model, tokenizer, words: list[str]) -> list[tuple[str, float]]:
    """Each word's label and its probability, from the model's logits on the words alone (float64 softmax)."""
    inputs = tokenizer(words, is_split_into_words=True, return_tensors="pt")
    with torch.no_grad():
        probabilities = model(**inputs).logits[0].double().softmax(dim=-1)
    scores, labels = probabilities.max(dim=-1)
    return [
        (model.config.id2label[label], score) for label, score in zip(labels.tolist(), scores.tolist(), strict=True)
    ]


def test_transformers_own_token_classification_pipeline_says_to_use_elmos(
    fixture_model_folder: Path, tmp_path: Path
) -> None:
    """`pipeline("token-classification", head_folder)` raised a bare `KeyError: 'special_tokens_mask'` (ELMo's
    tokenizer gives one position of 50 character ids per word, which that pipeline cannot read as a token id)."""
    ElmoForTokenClassification.from_pretrained(fixture_model_folder, num_labels=2).save_pretrained(tmp_path)
    AutoTokenizer.from_pretrained(fixture_model_folder).save_pretrained(tmp_path)
    tagger = pipeline("token-classification", model=str(tmp_path))
    with pytest.raises(ValueError, match=r'has no special_tokens_mask, .* use pipeline\("elmo-token-classification"'):
        tagger("The river, quiet.")
    with pytest.raises(ValueError, match="has no special_tokens_mask"):
        AutoTokenizer.from_pretrained(tmp_path)(["a", "b"], return_special_tokens_mask=True)


def test_token_classification_pipeline(fixture_model_folder: Path, tmp_path: Path) -> None:
    model = ElmoForTokenClassification.from_pretrained(
        fixture_model_folder, num_labels=3, id2label={0: "NOUN", 1: "ADJ", 2: "VERB"}
    ).eval()
    # A seeded head (N(0, 0.5^2) weights) that gives these words all three labels, with probabilities far from 1/3.
    generator = torch.Generator().manual_seed(2)
    with torch.no_grad():
        for name, parameter in model.named_parameters():
            if not name.startswith("elmo."):
                parameter.copy_(0.5 * torch.randn(parameter.shape, generator=generator))
    model.save_pretrained(tmp_path)
    tokenizer = AutoTokenizer.from_pretrained(fixture_model_folder)
    tokenizer.save_pretrained(tmp_path)
    tagger = pipeline("elmo-token-classification", model=str(tmp_path))
    text = "The river, quiet."
    results = tagger(text)
    words = ["The", "river", ",", "quiet", "."]
    assert [result["word"] for result in results] == words and [r["index"] for r in results] == list(range(5))
    assert all(text[r["start"] : r["end"]] == r["word"] for r in results)
    expected = _tags_from_the_model(model, tokenizer, words)
    assert len({label for label, _ in expected}) == 3 and max(score for _, score in expected) > 0.9
    assert [(r["entity"], pytest.approx(r["score"], abs=1e-6)) for r in results] == expected
    (pre_split,) = tagger([["New York", ""]])  # a list is a batch: pre-split words come as a list of lists
    assert [r["word"] for r in pre_split] == ["New York", ""]
    assert [(r["start"], r["end"]) for r in pre_split] == [(None, None)] * 2
    expected = _tags_from_the_model(model, tokenizer, ["New York", ""])
    assert [(r["entity"], pytest.approx(r["score"], abs=1e-6)) for r in pre_split] == expected
    assert tagger("") == [] and tagger([]) == []  # an empty text, an empty batch


def test_a_batch_of_only_empty_sentences_is_classified() -> None:
    """A batch whose sentences are all empty has no word to pool over: each gets the pooled vector of an empty
    sentence in a mixed batch (zeros), not amax's error on a words axis of size 0."""
    model = ElmoForSequenceClassification.from_pretrained(DEFAULT_MODEL, num_labels=3).eval()
    tokenizer = ElmoTokenizer.from_pretrained(DEFAULT_MODEL)
    with torch.no_grad():
        alone = model(**tokenizer([[], []], is_split_into_words=True, return_tensors="pt")).logits
        mixed = model(**tokenizer([[], ["a", "bb"]], is_split_into_words=True, padding=True, return_tensors="pt"))
    assert alone.shape == (2, 3)
    assert torch.equal(alone[0], mixed.logits[0]) and torch.equal(alone[1], mixed.logits[0])
