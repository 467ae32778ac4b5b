"""`common.cli_options` for a family of commands (elmo-convert's subcommands): options shared through a base
dataclass close each command's --help, an option may be required, and a few may be alternatives of which the
command line takes exactly one."""

from __future__ import annotations

import argparse
from dataclasses import dataclass

import pytest

from elmo_transformers.common.cli_options import CommandOptions, option, required


class _ToolError(Exception):
    pass


@dataclass(frozen=True, kw_only=True)
class _Shared(CommandOptions, error=_ToolError):
    overwrite: bool = option(False, "replace the output")
    mode: str | None = option(None, "how", choices=("fast", "slow"))


@dataclass(frozen=True, kw_only=True)
class _Copy(_Shared):
    source: str | None = option(None, "a file", one_of="from")
    url: str | None = option(None, "a URL", one_of="from")
    output: str = required("where to", metavar="OUT")
    mode: str | None = option("fast", "how (default %(default)s)", choices=("fast", "slow"))  # declared again


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="copy", allow_abbrev=False)
    _Copy.add_arguments(parser)
    return parser


def test_a_class_lists_its_own_options_before_those_it_inherits() -> None:
    usage = " ".join(_parser().format_usage().split())
    assert usage == "usage: copy [-h] (--source SOURCE | --url URL) --output OUT [--overwrite] [--mode {fast,slow}]"


def test_the_command_line_gives_the_options_built_in_python() -> None:
    parsed = _Copy.from_arguments(_parser().parse_args(["--url", "u", "--output", "o", "--mode", "slow"]))
    assert parsed == _Copy(url="u", output="o", mode="slow")
    assert _Copy(source="s", output="o").mode == "fast"


def test_the_base_gives_its_error_and_a_choices_default_is_allowed() -> None:
    assert _Shared().mode is None  # (not given)
    with pytest.raises(_ToolError, match=r"^--mode must be one of fast, slow, got 'medium'$"):
        _Copy(source="s", output="o", mode="medium")
    with pytest.raises(TypeError, match="output"):
        _Copy(source="s")


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--output", "o"], "one of the arguments --source --url is required"),
        (["--source", "s", "--url", "u", "--output", "o"], "argument --url: not allowed with argument --source"),
        (["--source", "s"], "the following arguments are required: --output"),
    ],
)
def test_argparse_refuses_a_missing_or_second_alternative(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit):
        _parser().parse_args(argv)
    assert message in capsys.readouterr().err
