"""A new task head on the bundled model: every weight it adds is initialised (finite, at its scheme's scale), and a
head saved then reloaded in a fresh Python (the package installed, and as remote code without it) gives the same
logits. CI also runs this file on the oldest transformers `pyproject.toml` admits, where the task encoder's
nn.LSTM was left as uninitialised memory (NaN logits) before `ElmoPreTrainedModel._init_weights` took it over."""

from __future__ import annotations

import math
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch
from transformers import AutoModelForSequenceClassification, AutoModelForTokenClassification, AutoTokenizer
from without_the_package import run_without_the_package

from modeling_elmo import DEFAULT_MODEL

SENTENCES = [["The", "naïve", "café", ""], ["x" * 60], [], ["Hello", "!"]]
HEADS = {"token": AutoModelForTokenClassification, "sequence": AutoModelForSequenceClassification}

# Saved logits are compared in a fresh Python: the head reloaded from its folder, the same sentences.
_RELOAD = """
    import sys, torch
    from transformers import {auto_class}, AutoTokenizer
    {register}
    folder, expected = sys.argv[1], torch.load(sys.argv[2], weights_only=True)
    model = {auto_class}.from_pretrained(folder{trust}).eval()
    tokenizer = AutoTokenizer.from_pretrained(folder{trust})
    batch = tokenizer({sentences!r}, is_split_into_words=True, padding=True, return_tensors="pt")
    with torch.no_grad():
        logits = model(**batch).logits
    assert type(model).__module__.startswith({module!r}), type(model).__module__
    # (equal up to float32 rounding: the test's process may run other kernels, e.g. after other tests set threads)
    assert torch.allclose(logits, expected, rtol=0, atol=1e-6), (logits - expected).abs().max()
    print("equal")
"""


def _new_head(kind: str) -> torch.nn.Module:
    torch.manual_seed(0)
    return HEADS[kind].from_pretrained(DEFAULT_MODEL, num_labels=3, mix_layers=[0, 1]).eval()


@pytest.mark.parametrize("kind", HEADS)
def test_a_new_heads_weights_are_finite_and_at_their_schemes_scale(kind: str) -> None:
    model = _new_head(kind)
    for name, parameter in model.named_parameters():
        assert torch.isfinite(parameter).all(), name
    encoder = model.task_encoder
    for name, parameter in encoder.named_parameters():
        if name.startswith("bias"):
            assert torch.equal(parameter, torch.zeros_like(parameter)), name
            continue
        fan_out, fan_in = parameter.shape  # Glorot uniform: U(-b, b), b = sqrt(6 / (in + out)), std b / sqrt(3)
        bound = math.sqrt(6.0 / (fan_in + fan_out))
        assert parameter.abs().max() <= bound, name
        assert abs(parameter.std().item() - bound / math.sqrt(3)) < 0.05 * bound, name
    classifier = model.classifier.weight
    assert abs(classifier.std().item() - model.config.initializer_range) < 0.2 * model.config.initializer_range
    assert torch.equal(model.classifier.bias, torch.zeros_like(model.classifier.bias))


@pytest.mark.slow
@pytest.mark.parametrize("kind", HEADS)
@pytest.mark.parametrize("remote_code", [False, True], ids=["installed", "remote-code"])
def test_a_saved_head_reloads_with_equal_logits_in_a_fresh_python(kind: str, remote_code: bool, tmp_path: Path) -> None:
    model = _new_head(kind)
    tokenizer = AutoTokenizer.from_pretrained(DEFAULT_MODEL)
    folder = tmp_path / "head"
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    batch = tokenizer(SENTENCES, is_split_into_words=True, padding=True, return_tensors="pt")
    with torch.no_grad():
        logits = model(**batch).logits
    assert torch.isfinite(logits).all()
    torch.save(logits, tmp_path / "logits.pt")
    module = "transformers_modules" if remote_code else "modeling_elmo"
    register = "" if remote_code else "import modeling_elmo  # registers the classes: the folder loads natively"
    trust = ", trust_remote_code=True" if remote_code else ""
    script = _RELOAD.format(
        auto_class=HEADS[kind].__name__, sentences=SENTENCES, module=module, register=register, trust=trust
    )
    arguments = (str(folder), str(tmp_path / "logits.pt"))
    if remote_code:
        completed = run_without_the_package(script, *arguments, work=tmp_path)
    else:
        command = [sys.executable, "-c", textwrap.dedent(script), *arguments]
        completed = subprocess.run(command, capture_output=True, text=True, cwd=tmp_path)
    assert completed.returncode == 0 and completed.stdout.strip() == "equal", completed.stderr[-3000:]
