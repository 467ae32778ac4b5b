"""A command's options as the fields of one frozen dataclass, each declared once with its check beside it, as
`modeling_elmo.ElmoConfig`'s fields are: the command line is built from the fields, and the checks run whenever the
dataclass is built (`__post_init__`), so that options built in Python are refused as the command line refuses them.

    @dataclass(frozen=True)
    class GreetOptions(CommandOptions, error=GreetError):
        name: str = positional("NAME", "who to greet")
        times: int = option(1, "how often (default %(default)s)", metavar="N", check=_at_least_once)
        language: str = option("en", "the greeting's language", choices=("en", "fr"))

    parser = argparse.ArgumentParser(prog="greet")
    GreetOptions.add_arguments(parser)
    options = GreetOptions.from_arguments(parser.parse_args())  # a refusal: a GreetError

On the command line argparse checks the choices and types first, with its own messages; the fields' checks then
run in the order of the fields. A check is given the whole options (every field set), so that its message may
name another option's value, and raises the command's error; a field with `choices` is also refused, outside the
command line, with "--FLAG must be one of A, B, got 'x'" (the command's `error`). Checks that concern options
only together (one contradicting another) belong to the command's run, not here: a dataclass built step by step
(`dataclasses.replace`) passes through states that the run would refuse.
"""

from __future__ import annotations

import argparse
import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import field
from typing import Any, TypeVar

__all__ = ["CommandOptions", "option", "positional"]

_Options = TypeVar("_Options", bound="CommandOptions")


def positional(metavar: str, help: str, *, check: Callable[[Any], None] | None = None) -> Any:
    """A positional argument (required): shown as `metavar` in the usage."""
    return field(metadata={"positional": True, "metavar": metavar, "help": help, "check": check})


def option(
    default: Any,
    help: str,
    *,
    flag: str | None = None,
    metavar: str | None = None,
    choices: tuple[str, ...] | list[str] | None = None,
    check: Callable[[Any], None] | None = None,
    metadata: Mapping[str, Any] | None = None,
) -> Any:
    """An option: `--NAME` (the field's name, dashed) unless `flag` says otherwise; a bool is a switch that turns
    its default over, an int takes an integer. `check(options)` refuses a value in the command's error; `metadata`
    holds the command's own facts about the option (read back from `dataclasses.fields`)."""
    facts = {"help": help, "flag": flag, "metavar": metavar, "choices": choices, "check": check}
    return field(default=default, metadata={**(metadata or {}), **facts})


def _flag(option: dataclasses.Field) -> str:
    return option.metadata["flag"] or "--" + option.name.replace("_", "-")


class CommandOptions:
    """The base of a frozen dataclass of options declared with `option` and `positional`; `error` (a class
    keyword) is the command's error type, which refuses a value outside the `choices`. A subclass's own
    `__post_init__` (converting a value, say) ends with `super().__post_init__()`, which runs the checks."""

    _error: type[Exception]

    def __init_subclass__(cls, *, error: type[Exception], **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls._error = error

    def __post_init__(self) -> None:
        """Run every field's checks, in the order of the fields."""
        for option in dataclasses.fields(self):
            choices, value = option.metadata.get("choices"), getattr(self, option.name)
            if choices is not None and value not in choices:
                raise self._error(f"{_flag(option)} must be one of {', '.join(choices)}, got {value!r}")
            if option.metadata.get("check") is not None:
                option.metadata["check"](self)

    @classmethod
    def add_arguments(cls, parser: argparse.ArgumentParser) -> None:
        """Add every field to `parser`, in their order, whose namespace then holds them under the fields' names
        (`from_arguments`)."""
        for option in dataclasses.fields(cls):
            metadata = option.metadata
            if metadata.get("positional"):
                parser.add_argument(option.name, metavar=metadata["metavar"], help=metadata["help"])
                continue
            arguments: dict[str, Any] = {"dest": option.name, "help": metadata["help"], "default": option.default}
            if isinstance(option.default, bool):
                arguments["action"] = "store_false" if option.default else "store_true"
            elif isinstance(option.default, int):
                arguments["type"] = int
            arguments.update((key, metadata[key]) for key in ("metavar", "choices") if metadata[key] is not None)
            parser.add_argument(_flag(option), **arguments)

    @classmethod
    def from_arguments(cls: type[_Options], arguments: argparse.Namespace) -> _Options:
        """The options of a namespace parsed by a parser that `add_arguments` built (checked: the command's
        error)."""
        return cls(**{option.name: getattr(arguments, option.name) for option in dataclasses.fields(cls)})
