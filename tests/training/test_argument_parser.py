"""The training commands' parser: dataclass fields become options as argparse's would be (a bool switch takes no
value, an unknown argument is a usage error), and pretrain's record keeps the order of its --help."""

from __future__ import annotations

from dataclasses import dataclass, field, fields

import pytest

from elmo_transformers.training.argument_parser import SWITCH, OneSpellingArgumentParser
from elmo_transformers.training.pretraining.pretrain import parse_args
from elmo_transformers.training.pretraining.pretrain_arguments import (
    LmDataArguments,
    LmModelArguments,
    LmTrainingArguments,
)


@dataclass(frozen=True)
class _Options:
    output_dir: str
    quiet: bool = field(default=False, metadata={"help": "Say less.", **SWITCH})


def _parser() -> OneSpellingArgumentParser:
    return OneSpellingArgumentParser.for_command((_Options,), doc="A command.\n\nMore.", examples="example: run")


def test_a_switch_takes_no_value(capsys: pytest.CaptureFixture[str]) -> None:
    assert _parser().parse_command_line(["--output_dir", "o"]) == (_Options("o", quiet=False),)
    assert _parser().parse_command_line(["--output_dir", "o", "--quiet"]) == (_Options("o", quiet=True),)
    with pytest.raises(SystemExit) as exit_info:
        _parser().parse_command_line(["--output_dir", "o", "--quiet", "false"])
    assert exit_info.value.code == 2
    assert "error: unrecognized arguments: false" in capsys.readouterr().err


def test_the_help_is_as_written(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        _parser().parse_command_line(["--help"])
    help_text = capsys.readouterr().out
    assert "[--quiet]\n" in help_text and "QUIET" not in help_text and "default" not in help_text
    assert "\nA command.\n" in help_text and "More." not in help_text and help_text.endswith("example: run\n")


def test_no_args_file_beside_the_script_is_read(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    # HfArgumentParser's parse_args_into_dataclasses reads SCRIPT.args by default; a command line is the whole input.
    script = tmp_path / "command.py"
    script.with_suffix(".args").write_text("--quiet")
    monkeypatch.setattr("sys.argv", [str(script)])
    assert _parser().parse_command_line(["--output_dir", "o"]) == (_Options("o", quiet=False),)


def test_pretrain_records_its_options_in_the_order_of_its_help() -> None:
    arguments = parse_args(["--train_files", "t", "--vocab_file", "v", "--output_dir", "o"])
    groups = (LmDataArguments, LmModelArguments, LmTrainingArguments)
    assert list(arguments.record()) == [option.name for group in groups for option in fields(group)]
    assert arguments.record()["train_files"] == ["t"] and arguments.record()["no_space_check"] is False
