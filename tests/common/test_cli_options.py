"""`common.cli_options`: a frozen dataclass of options builds its command line, and each field's check runs
whenever the dataclass is built, from the command line or in Python alike; argparse's own refusals stay its own."""

from __future__ import annotations

import argparse
import dataclasses
from dataclasses import dataclass
from pathlib import Path

import pytest

from elmo_transformers.common.cli_options import CommandOptions, option, positional


class _GreetError(Exception):
    pass


def _at_least_once(options: _GreetOptions) -> None:
    if options.times < 1:
        raise _GreetError(f"--times must be at least 1, got {options.times} (greeting {options.name})")


@dataclass(frozen=True)
class _GreetOptions(CommandOptions, error=_GreetError):
    name: str = positional("NAME", "who to greet")
    times: int = option(1, "how often (default %(default)s)", metavar="N", check=_at_least_once)
    language: str = option("en", "the greeting's language", choices=("en", "fr"), metadata={"recorded": True})
    shout: bool = option(False, "in capitals")
    polite: bool = option(True, "without please", flag="--rude")
    out: Path | None = option(None, "where to write", metavar="FILE")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="greet", allow_abbrev=False)
    _GreetOptions.add_arguments(parser)
    return parser


def _parse(argv: list[str]) -> _GreetOptions:
    return _GreetOptions.from_arguments(_parser().parse_args(argv))


def test_the_command_line_is_built_from_the_fields() -> None:
    assert _parse(["ada"]) == _GreetOptions("ada")
    argv = ["ada", "--times", "3", "--language", "fr", "--shout", "--rude", "--out", "o.txt"]
    assert _parse(argv) == _GreetOptions("ada", 3, "fr", True, False, "o.txt")
    usage = " ".join(_parser().format_usage().split())  # (wrapped to the terminal's width)
    assert usage == "usage: greet [-h] [--times N] [--language {en,fr}] [--shout] [--rude] [--out FILE] NAME"


def test_the_fields_keep_the_commands_own_facts() -> None:
    recorded = [field.name for field in dataclasses.fields(_GreetOptions) if field.metadata.get("recorded")]
    assert recorded == ["language"]


def test_checks_run_when_built_in_python_as_on_the_command_line() -> None:
    with pytest.raises(_GreetError, match=r"^--times must be at least 1, got 0 \(greeting ada\)$"):
        _GreetOptions("ada", times=0)
    with pytest.raises(_GreetError, match=r"^--times must be at least 1, got -2 \(greeting bo\)$"):
        _parse(["bo", "--times", "-2"])
    with pytest.raises(_GreetError, match=r"^--language must be one of en, fr, got 'de'$"):
        _GreetOptions("ada", language="de")
    with pytest.raises(_GreetError, match="--times"):
        dataclasses.replace(_GreetOptions("ada"), times=0)


def test_the_fields_are_checked_in_their_order() -> None:
    with pytest.raises(_GreetError, match=r"^--times"):
        _GreetOptions("ada", times=0, language="de")


def test_argparse_refuses_choices_and_types_in_its_own_words(capsys: pytest.CaptureFixture) -> None:
    for argv, message in (
        (["ada", "--language", "de"], "argument --language: invalid choice: 'de' (choose from "),
        (["ada", "--times", "x"], "argument --times: invalid int value: 'x'"),
    ):
        with pytest.raises(SystemExit) as stopped:
            _parse(argv)
        assert stopped.value.code == 2
        assert f"\ngreet: error: {message}" in capsys.readouterr().err  # (how it quotes the choices: Python's)
