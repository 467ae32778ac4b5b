"""Fixed mixing weights (`mix_trainable=False`, `mix_initial_weights`) stay fixed on every route a user takes:
the constructor, `from_pretrained` with overrides, a save/reload, a mix built on its own, and the training script."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from transformers import AutoModelForTokenClassification, AutoTokenizer

from modeling_elmo import ElmoConfig, ElmoLayerMix

INITIAL = [1.0, 2.0, 3.0]
FIXED = {"mix_initial_weights": INITIAL, "mix_trainable": False}


def _mix_parameters(model) -> dict[str, torch.Tensor]:
    return {name: parameter for name, parameter in model.named_parameters() if name.startswith("mixes.")}


def _adam_steps(model, tokenizer, steps: int = 3) -> None:
    """A few optimiser steps on a tagging loss, over every parameter that asks for a gradient (as Trainer does)."""
    batch = tokenizer(
        [["a", "green", "house"], ["rivers"]], is_split_into_words=True, padding=True, return_tensors="pt"
    )
    labels = torch.tensor([[0, 1, 2], [1, -100, -100]])
    optimizer = torch.optim.Adam([p for p in model.parameters() if p.requires_grad], lr=0.1)
    model.train()
    for _ in range(steps):
        optimizer.zero_grad()
        model(**batch, labels=labels).loss.backward()
        optimizer.step()


def _check_fixed(model, tokenizer, expected_weights: list[float]) -> None:
    mixes = _mix_parameters(model)
    assert mixes, "the head has no mixing parameters"
    assert not any(parameter.requires_grad for parameter in mixes.values()), sorted(
        name for name, parameter in mixes.items() if parameter.requires_grad
    )
    before = {name: parameter.detach().clone() for name, parameter in mixes.items()}
    classifier_before = model.classifier.weight.detach().clone()
    _adam_steps(model, tokenizer)
    for name, parameter in mixes.items():
        torch.testing.assert_close(parameter.detach(), before[name], rtol=0, atol=0, msg=f"{name} moved")
    assert not torch.allclose(model.classifier.weight, classifier_before), "the classifier should have trained"
    if "mixes.0.mix_weights" in mixes:
        assert mixes["mixes.0.mix_weights"].tolist() == expected_weights


def test_from_pretrained_overrides_keep_the_weights_fixed(fixture_model_folder: Path) -> None:
    model = AutoModelForTokenClassification.from_pretrained(fixture_model_folder, num_labels=3, **FIXED)
    _check_fixed(model, AutoTokenizer.from_pretrained(fixture_model_folder), INITIAL)


def test_fixed_weights_stay_fixed_after_save_and_reload(fixture_model_folder: Path, tmp_path: Path) -> None:
    AutoModelForTokenClassification.from_pretrained(fixture_model_folder, num_labels=3, **FIXED).save_pretrained(
        tmp_path / "head"
    )
    reloaded = AutoModelForTokenClassification.from_pretrained(tmp_path / "head")
    _check_fixed(reloaded, AutoTokenizer.from_pretrained(fixture_model_folder), INITIAL)


def test_per_token_scorer_and_scale_stay_fixed(fixture_model_folder: Path) -> None:
    model = AutoModelForTokenClassification.from_pretrained(
        fixture_model_folder, num_labels=3, mix_mode="per_token", mix_trainable=False
    )
    assert {"mixes.0.mix_scorer.weight", "mixes.0.mix_gamma"} <= set(_mix_parameters(model))
    _check_fixed(model, AutoTokenizer.from_pretrained(fixture_model_folder), INITIAL)


def test_trainable_weights_do_train(fixture_model_folder: Path) -> None:
    """The control: with the default `mix_trainable=True`, the same steps move the weights."""
    model = AutoModelForTokenClassification.from_pretrained(
        fixture_model_folder, num_labels=3, mix_initial_weights=INITIAL
    )
    weights = model.mixes[0].mix_weights
    assert weights.requires_grad and weights.tolist() == INITIAL
    _adam_steps(model, AutoTokenizer.from_pretrained(fixture_model_folder))
    assert (weights.detach() - torch.tensor(INITIAL)).abs().max() > 0.01  # moved (by 0.04 on torch 2.6)


@pytest.mark.parametrize("trainable", [True, False])
def test_a_mix_built_on_its_own_starts_as_configured(trainable: bool) -> None:
    config = ElmoConfig(mix_initial_weights=INITIAL, mix_trainable=trainable)
    mix = ElmoLayerMix(config)
    assert mix.mix_weights.tolist() == INITIAL and mix.mix_gamma.item() == 1.0
    assert mix.mix_weights.requires_grad is trainable and mix.mix_gamma.requires_grad is trainable
    scorer = ElmoLayerMix(ElmoConfig(mix_mode="per_token", mix_trainable=trainable)).mix_scorer
    assert scorer.weight.requires_grad is trainable and not scorer.weight.any() and not scorer.bias.any()


def test_the_training_script_keeps_the_weights_fixed(fixture_model_folder: Path, tmp_path: Path) -> None:
    from elmo_transformers.training.finetuning import run_token_classification

    rows = [
        {"tokens": ["a", "green", "house"], "tags": ["O", "B-ADJ", "B-NOUN"]},
        {"tokens": ["rivers"], "tags": ["O"]},
    ]
    train = tmp_path / "train.jsonl"
    train.write_text("".join(json.dumps(row) + "\n" for row in rows * 8), encoding="utf-8")
    output = tmp_path / "tagger"
    arguments = [
        "--model_name_or_path", str(fixture_model_folder), "--train_file", str(train), "--output_dir", str(output),
        "--do_train", "--num_train_epochs", "2", "--learning_rate", "0.1", "--per_device_train_batch_size", "4",
        "--mix_initial_weights", "1", "2", "3", "--mix_trainable", "False",
        "--save_strategy", "no", "--use_cpu", "--report_to", "none", "--disable_tqdm", "true",
    ]  # fmt: skip
    run_token_classification.main(arguments)
    trained = AutoModelForTokenClassification.from_pretrained(output)
    assert trained.mixes[0].mix_weights.tolist() == INITIAL
    assert trained.mixes[0].mix_gamma.item() == 1.0
