"""The native libraries' settings that make products bit-stable (`modeling_elmo.native_elmo`): what they do, and that
every command that computes sets them before its first kernel."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from elmo_transformers.conversion.cli import main as convert
from elmo_transformers.inference.embed import main as embed
from elmo_transformers.training.finetuning.run_classification import main as run_classification
from elmo_transformers.training.finetuning.run_token_classification import main as run_token_classification
from elmo_transformers.training.pretraining.evaluate_perplexity import main as evaluate_perplexity
from elmo_transformers.training.pretraining.model_card import main as model_card
from elmo_transformers.training.pretraining.pretrain import main as pretrain
from modeling_elmo.native_elmo import NATIVE_LIBRARY_SETTINGS

# Run in a fresh process, with the settings or without: one product of the same numbers at 16 memory alignments.
_ALIGNMENT_PROBE = """
import sys, torch
from modeling_elmo.native_elmo import set_native_libraries
if sys.argv[1] == "set":
    set_native_libraries()
generator = torch.Generator().manual_seed(0)
weight, bias = torch.randn(2048, 1024, generator=generator), torch.randn(2048, generator=generator)
differing = 0
for rows in (1, 7, 64):
    x = torch.randn(rows, 1024, generator=generator)
    expected = torch.nn.functional.linear(x, weight, bias)
    for offset in range(1, 16):
        moved = torch.empty(rows * 1024 + 16)[offset : offset + rows * 1024].view(rows, 1024).copy_(x)
        differing += not torch.equal(torch.nn.functional.linear(moved, weight, bias), expected)
print(differing)
"""


def test_a_product_does_not_depend_on_where_its_operands_lie() -> None:
    """The cause of runs of one command that differed (by up to 2.9e-5): MKL's results depend on the operands'
    memory alignment unless MKL_CBWR says otherwise, which `set_native_libraries` sets before the first kernel.
    (Without it, 13 of these 45 products differed on this project's machines, when MKL serves them.)"""
    environment = {name: value for name, value in os.environ.items() if name != "MKL_CBWR"}
    probe = [sys.executable, "-c", _ALIGNMENT_PROBE, "set"]
    completed = subprocess.run(probe, env=environment, capture_output=True, text=True)
    assert completed.returncode == 0, completed.stderr[-2000:]
    assert completed.stdout.strip() == "0"


# Each command that computes, with arguments that stop it early: after its arguments are parsed (elmo-embed's and
# elmo-convert's --help load no torch, so those stop at a missing input), before anything computes.
COMMANDS: dict[str, tuple[Callable[[list[str]], object], list[str]]] = {
    "elmo-embed": (embed, ["absent.txt", "out.hdf5"]),
    "elmo-convert": (convert, ["allennlp", "--options", "absent.json", "--weights", "absent.hdf5", "--output", "o"]),
    "pretrain": (pretrain, ["--help"]),
    "evaluate_perplexity": (evaluate_perplexity, ["--help"]),
    "model_card": (model_card, ["--help"]),
    "run_token_classification": (run_token_classification, ["--help"]),
    "run_classification": (run_classification, ["--help"]),
}


@pytest.mark.parametrize("name", COMMANDS)
def test_every_command_that_computes_sets_the_native_libraries(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    monkeypatch.chdir(tmp_path)
    for variable in NATIVE_LIBRARY_SETTINGS:
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setenv("MKL_CBWR", "COMPATIBLE")  # the user's own setting is kept
    main, argv = COMMANDS[name]
    try:
        main(argv)
    except SystemExit:
        pass
    capsys.readouterr()
    assert {variable: os.environ.get(variable) for variable in NATIVE_LIBRARY_SETTINGS} == {
        **NATIVE_LIBRARY_SETTINGS,
        "MKL_CBWR": "COMPATIBLE",
    }


# elmo-embed's main up to the native libraries' settings, in a fresh process: whether torch was imported by then.
_TORCH_BEFORE_SETTINGS_PROBE = """
import sys
import modeling_elmo.native_elmo as native
def probe():
    print("torch" in sys.modules)
    raise SystemExit(0)
native.set_native_libraries = probe
from elmo_transformers.inference.embed import main
main([sys.argv[1], sys.argv[2]])
"""


def test_elmo_embed_sets_the_native_libraries_before_torch_is_imported(tmp_path: Path) -> None:
    """OpenMP reads OMP_WAIT_POLICY when torch loads it (issue 55): set after `import torch`, it would be ignored in
    silence, and torch's threads would spin on a shared machine."""
    lines = tmp_path / "lines.txt"
    lines.write_text("a line\n", encoding="utf-8")
    probe = [sys.executable, "-c", _TORCH_BEFORE_SETTINGS_PROBE, str(lines), str(tmp_path / "out.hdf5")]
    completed = subprocess.run(probe, capture_output=True, text=True, cwd=tmp_path)
    assert completed.returncode == 0, completed.stderr[-2000:]
    assert completed.stdout.strip() == "False"
