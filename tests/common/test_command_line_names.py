"""One name per option. The `elmo-*` tools spell theirs with dashes (`--batch-size`, `--push-to-hub`); the scripts
under training/ follow Hugging Face's examples, with underscores (`--model_name_or_path`, `--output_dir`). No
option has a second name (an alias, or HfArgumentParser's dashed twin `--output-dir`), and none is accepted by
an abbreviation (`--output` for `--output_dir`): a new alias, or a name in the other style, fails here."""

from __future__ import annotations

import argparse
import re
from collections.abc import Callable, Iterator

import pytest

from elmo_transformers.conversion.cli import COMMANDS
from elmo_transformers.conversion.cli import build_parser as convert_parser
from elmo_transformers.inference.embed import build_parser as embed_parser
from elmo_transformers.training.finetuning.run_classification import ClassificationDataArguments
from elmo_transformers.training.finetuning.run_token_classification import TokenClassificationDataArguments
from elmo_transformers.training.finetuning.workflow import parse_arguments
from elmo_transformers.training.pretraining import build_vocab, evaluate_perplexity, model_card, pretrain
from elmo_transformers.training.recipes import prepare_default_corpus

DASHES = re.compile(r"--[a-z0-9]+(-[a-z0-9]+)*")
UNDERSCORES = re.compile(r"--[a-z0-9]+(_[a-z0-9]+)*")


class _Captured(Exception):
    def __init__(self, parser: argparse.ArgumentParser) -> None:
        self.parser = parser


def _parser_of(parse: Callable[[list[str]], object]) -> Callable[[], argparse.ArgumentParser]:
    """The parser a script's `main`/`parse_args` builds, caught as it starts parsing (nothing runs)."""

    def build() -> argparse.ArgumentParser:
        def capture(self: argparse.ArgumentParser, *args: object, **kwargs: object) -> None:
            raise _Captured(self)

        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(argparse.ArgumentParser, "parse_known_args", capture)
            try:
                parse([])
            except _Captured as captured:
                return captured.parser
        raise AssertionError(f"{parse} parsed no arguments")

    return build


def _convert(name: str) -> Callable[[], argparse.ArgumentParser]:
    def build() -> argparse.ArgumentParser:
        subparsers = next(a for a in convert_parser(COMMANDS)._actions if isinstance(a, argparse._SubParsersAction))
        return subparsers.choices[name]

    return build


def _fine_tuning(data_class: type) -> Callable[[list[str]], object]:
    return lambda argv: parse_arguments(data_class, argv)


# Each command: how to build its parser, and the style of its names.
TOOLS = {
    "elmo-convert": (lambda: convert_parser(COMMANDS), DASHES),
    **{f"elmo-convert {command.name}": (_convert(command.name), DASHES) for command in COMMANDS},
    "elmo-embed": (embed_parser, DASHES),
    "pretrain": (_parser_of(pretrain.parse_args), UNDERSCORES),
    "evaluate_perplexity": (_parser_of(evaluate_perplexity.parse_args), UNDERSCORES),
    "build_vocab": (_parser_of(build_vocab.main), UNDERSCORES),
    "model_card": (_parser_of(model_card.main), UNDERSCORES),
    "prepare_default_corpus": (_parser_of(prepare_default_corpus.parse_args), UNDERSCORES),
    "run_classification": (_parser_of(_fine_tuning(ClassificationDataArguments)), UNDERSCORES),
    "run_token_classification": (_parser_of(_fine_tuning(TokenClassificationDataArguments)), UNDERSCORES),
}


def _options(parser: argparse.ArgumentParser) -> Iterator[argparse.Action]:
    return (action for action in parser._actions if action.option_strings and action.dest != "help")


def _family_names(command: str) -> set[str]:
    """The names of the commands whose examples a command's --help may show: the other elmo-convert subcommands,
    or the other training scripts (pretrain.py's shows build_vocab.py's), and accelerate's --num_processes."""
    style = TOOLS[command][1]
    family = [name for name in TOOLS if name.startswith("elmo-convert") == command.startswith("elmo-convert")]
    names = {
        action.option_strings[0] for name in family if TOOLS[name][1] is style for action in _options(TOOLS[name][0]())
    }
    return {*names, "--help", "--num_processes"}


def test_the_parsers_are_found() -> None:
    assert len(list(_options(TOOLS["run_classification"][0]()))) > 50  # TrainingArguments' too
    assert {a.dest for a in _options(TOOLS["pretrain"][0]())} >= {"model_name_or_path", "vocab_file", "output_dir"}


@pytest.mark.parametrize("command", TOOLS)
def test_each_option_has_one_name_in_the_commands_style(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    build, style = TOOLS[command]
    parser = build()
    assert not parser.allow_abbrev, f"{command} accepts abbreviations: a prefix is a second name"
    names = {}
    for action in _options(parser):
        assert len(action.option_strings) == 1, f"{command}: {action.dest} has names {action.option_strings}"
        (name,) = action.option_strings
        assert style.fullmatch(name), f"{command}: {name} is not in the style of its other options"
        names[name] = action.dest
    help_action = next(action for action in parser._actions if action.dest == "help")
    assert help_action.option_strings == ["-h", "--help"]

    with pytest.raises(SystemExit):
        parser.parse_args(["--help"])
    help_text = capsys.readouterr().out
    listed = set(re.findall(r"(?<![\w-])--[\w-]+", help_text))
    for name in names:
        assert name in listed, f"{command} --help does not list {name}"
    # Only names the command takes appear in its --help (its epilog's examples included), each under one name.
    known = _family_names(command)
    assert listed <= known, f"{command} --help names {sorted(listed - known)}"
    assert not re.search(r"^\s+--[\w-]+(?: \S+)*, --(?!help)", help_text, re.MULTILINE), help_text


# The names these commands had beside their one name; each is refused now (not taken as an abbreviation).
RETIRED = [
    ("elmo-convert", ["elmoformanylangs", "--model", "m", "--output", "o"], "--model-dir"),
    ("pretrain", ["--train_files", "t", "--vocab_file", "v", "--output_dir", "o"], "--model"),
    ("pretrain", ["--train_files", "t", "--vocab_file", "v", "--output_dir", "o"], "--vocab"),
    ("pretrain", ["--train_files", "t", "--vocab_file", "v", "--output_dir", "o"], "--output"),
    ("evaluate_perplexity", ["--model_name_or_path", "m", "--files", "f"], "--model"),
    ("evaluate_perplexity", ["--model_name_or_path", "m", "--files", "f"], "--vocab"),
    ("prepare_default_corpus", ["--output_dir", "o"], "--out"),
    ("prepare_default_corpus", ["--output_dir", "o"], "--output"),
    ("prepare_default_corpus", ["--output_dir", "o"], "--heldout-fraction"),
    ("prepare_default_corpus", ["--output_dir", "o"], "--max-words"),
    *[
        (script, ["--model_name_or_path", "m", "--output_dir", "o", "--do_eval"], retired)
        for script in ("run_classification", "run_token_classification")
        for retired in ("--model", "--output", "--output-dir", "--train-file", "--model_name")
    ],
]
PARSE = {
    "elmo-convert": lambda argv: convert_parser(COMMANDS).parse_args(argv),
    "pretrain": pretrain.parse_args,
    "evaluate_perplexity": evaluate_perplexity.parse_args,
    "prepare_default_corpus": prepare_default_corpus.parse_args,
    "run_classification": _fine_tuning(ClassificationDataArguments),
    "run_token_classification": _fine_tuning(TokenClassificationDataArguments),
}


@pytest.mark.parametrize(("command", "required", "retired"), RETIRED, ids=[f"{c} {r}" for c, _, r in RETIRED])
def test_the_retired_names_are_refused(
    command: str, required: list[str], retired: str, capsys: pytest.CaptureFixture[str]
) -> None:
    PARSE[command]([*required, "--validation_file", "v"] if command.startswith("run_") else required)  # parses
    argv = [*required, retired, "1"]
    if command.startswith("run_"):
        with pytest.raises(ValueError, match="not used by the HfArgumentParser"):
            PARSE[command]([*argv, "--validation_file", "v"])
    else:
        with pytest.raises(SystemExit) as exit_info:
            PARSE[command](argv)
        assert exit_info.value.code == 2
        assert f"unrecognized arguments: {retired} 1" in capsys.readouterr().err
