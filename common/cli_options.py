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
(`dataclasses.replace`) passes through states that the run would refuse. An option without a default (`required`)
must be given; the dataclass then declares its fields `kw_only`.

A family of commands (elmo-convert's subcommands) shares options through a base dataclass; the command line lists a
class's own options before those it inherits, the base's last, so that the family's common options close each
command's `--help` (a field a class declares again keeps its base's place).
"""

from __future__ import annotations

import argparse
import dataclasses
import inspect
from collections.abc import Callable, Mapping
from dataclasses import field
from typing import Any, TypeVar

__all__ = ["CommandOptions", "option", "positional", "required"]

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
    one_of: str | None = None,
    type: Callable[[str], Any] | None = None,
) -> Any:
    """An option: `--NAME` (the field's name, dashed) unless `flag` says otherwise; a bool is a switch that turns
    its default over, an int takes an integer; `type` converts the value where the default does not tell its type
    (None: not given). `check(options)` refuses a value in the command's error; `metadata` holds the command's own
    facts about the option (read back from `dataclasses.fields`). The options of one `one_of` name are alternatives:
    the command line takes exactly one of them (argparse's required mutually exclusive group)."""
    facts = dict(help=help, flag=flag, metavar=metavar, choices=choices, type=type, check=check, one_of=one_of)
    return field(default=default, metadata={**(metadata or {}), **facts})


def required(help: str, *, flag: str | None = None, metavar: str | None = None) -> Any:
    """An option that must be given (`--NAME VALUE`, `flag` as for `option`): a field without a default."""
    return field(metadata={"help": help, "flag": flag, "metavar": metavar, "choices": None, "check": None})


def _flag(option: dataclasses.Field) -> str:
    return option.metadata["flag"] or "--" + option.name.replace("_", "-")


class CommandOptions:
    """The base of a frozen dataclass of options declared with `option` and `positional`; `error` (a class
    keyword) is the command's error type, which refuses a value outside the `choices`. A subclass's own
    `__post_init__` (converting a value, say) ends with `super().__post_init__()`, which runs the checks."""

    _error: type[Exception]

    def __init_subclass__(cls, *, error: type[Exception] | None = None, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if error is not None:  # (else its base's)
            cls._error = error

    def __post_init__(self) -> None:
        """Run every field's checks, in the order of the fields."""
        for option in dataclasses.fields(self):
            choices, value = option.metadata.get("choices"), getattr(self, option.name)
            if choices is not None and value not in choices and value != option.default:  # (None: not given)
                raise self._error(f"{_flag(option)} must be one of {', '.join(choices)}, got {value!r}")
            if option.metadata.get("check") is not None:
                option.metadata["check"](self)

    @classmethod
    def add_arguments(cls, parser: argparse.ArgumentParser) -> None:
        """Add every field to `parser`, in their order (a class's own before those it inherits), whose namespace
        then holds them under the fields' names (`from_arguments`)."""
        alternatives: dict[str, argparse._MutuallyExclusiveGroup] = {}  # each `one_of`, where its first option stands
        for option in cls._listed():
            metadata = option.metadata
            if metadata.get("positional"):
                parser.add_argument(option.name, metavar=metadata["metavar"], help=metadata["help"])
                continue
            arguments: dict[str, Any] = {"dest": option.name, "help": metadata["help"], "default": option.default}
            if option.default is dataclasses.MISSING:  # (`required`)
                del arguments["default"]
                arguments["required"] = True
            elif isinstance(option.default, bool):
                arguments["action"] = "store_false" if option.default else "store_true"
            elif isinstance(option.default, int):
                arguments["type"] = int
            given = ("metavar", "choices", "type")
            arguments.update((key, metadata[key]) for key in given if metadata.get(key) is not None)
            one_of = metadata.get("one_of")
            if one_of is not None and one_of not in alternatives:
                alternatives[one_of] = parser.add_mutually_exclusive_group(required=True)
            (alternatives[one_of] if one_of is not None else parser).add_argument(_flag(option), **arguments)

    @classmethod
    def _listed(cls) -> list[dataclasses.Field]:
        """The fields in the order the command line lists them: by the class that first declares each, the most
        derived first, and in their order within one class."""

        def base_declaring(option: dataclasses.Field) -> int:
            return max(
                index
                for index, klass in enumerate(cls.__mro__)
                if option.name in inspect.get_annotations(klass)  # (the class's own, on every Python)
            )

        return sorted(dataclasses.fields(cls), key=base_declaring)

    @classmethod
    def from_arguments(cls: type[_Options], arguments: argparse.Namespace) -> _Options:
        """The options of a namespace parsed by a parser that `add_arguments` built (checked: the command's
        error)."""
        return cls(**{option.name: getattr(arguments, option.name) for option in dataclasses.fields(cls)})
