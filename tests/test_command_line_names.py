"""Every command names what it reads and writes the same way: `--model` the model it reads, `--vocab` a
vocabulary file, `--output` what it writes. The spellings the README documents (`--model_name_or_path`,
`--vocab_file`, `--output_dir`, `--out`) keep working: each pair parses to the same value."""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest

from training.finetuning.run_classification import ClassificationDataArguments
from training.finetuning.run_token_classification import TokenClassificationDataArguments
from training.finetuning.workflow import parse_arguments
from training.pretraining import evaluate_perplexity, pretrain
from training.recipes import prepare_default_corpus


def _fine_tuning(data_class: type) -> Callable[[list[str]], dict]:
    def parse(argv: list[str]) -> dict:
        model_args, data_args, training_args = parse_arguments(
            data_class, [*argv, "--do_eval", "--validation_file", "v"]
        )
        return {**vars(model_args), **vars(data_args), "output_dir": training_args.output_dir}

    return parse


def _argparse(parse_args: Callable, *required: str) -> Callable[[list[str]], dict]:
    return lambda argv: vars(parse_args([*required, *argv]))


PRETRAIN = _argparse(pretrain.parse_args, "--train_files", "t.txt")
PARSERS = {
    "pretrain": PRETRAIN,
    "evaluate_perplexity": _argparse(evaluate_perplexity.parse_args, "--files", "heldout.txt"),
    "prepare_default_corpus": _argparse(prepare_default_corpus.parse_args),
    "run_token_classification": _fine_tuning(TokenClassificationDataArguments),
    "run_classification": _fine_tuning(ClassificationDataArguments),
}
# (command, the documented spelling, the consistent one); each command is also given the other options it needs.
NAMES = [
    ("pretrain", ["--model_name_or_path", "m", "--vocab_file", "v.txt", "--output_dir", "o"]),
    ("evaluate_perplexity", ["--model_name_or_path", "m", "--vocab_file", "v.txt"]),
    ("prepare_default_corpus", ["--out", "o"]),
    ("run_token_classification", ["--model_name_or_path", "m", "--output_dir", "o"]),
    ("run_classification", ["--model_name_or_path", "m", "--output_dir", "o"]),
]
CONSISTENT = {
    "--model_name_or_path": "--model",
    "--vocab_file": "--vocab",
    "--output_dir": "--output",
    "--out": "--output",
}


@pytest.mark.parametrize(("command", "documented"), NAMES, ids=[command for command, _ in NAMES])
def test_the_consistent_names_parse_as_the_documented_ones(command: str, documented: list[str]) -> None:
    parse = PARSERS[command]
    expected = parse(documented)
    for index in range(0, len(documented), 2):
        option, value = documented[index : index + 2]
        renamed = [*documented[:index], CONSISTENT[option], value, *documented[index + 2 :]]
        assert parse(renamed) == expected, f"{command}: {CONSISTENT[option]} instead of {option}"
    changed = [value + "x" if index % 2 else value for index, value in enumerate(documented)]
    assert parse(changed) != expected  # the values above are read, not defaults


@pytest.mark.parametrize(("command", "documented"), NAMES, ids=[command for command, _ in NAMES])
def test_the_help_lists_the_consistent_names(
    command: str, documented: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    """Each name is an option of its own, not only an abbreviation argparse happens to accept."""
    with pytest.raises(SystemExit):
        PARSERS[command](["--help"])
    help_text = capsys.readouterr().out
    for option in documented[::2]:
        assert re.search(rf"(?<![\w-]){CONSISTENT[option]}(?![\w-])", help_text), f"{command}: {CONSISTENT[option]}"
