"""The command-line parser of the training commands: Hugging Face's `HfArgumentParser` over each command's option
dataclasses, as the Trainer's users know it from Hugging Face's example scripts, with one name per option.

pretrain.py and the fine-tuning scripts declare their options as dataclass fields (type, default, help, choices);
this parser turns them into argparse options, each `_argument_group_name` into a group of `--help`.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any

from transformers import HfArgumentParser

__all__ = ["SWITCH", "OneSpellingArgumentParser"]


class OneSpellingArgumentParser(HfArgumentParser):
    """HfArgumentParser with one name per option: the field's own, as in Hugging Face's examples (`--output_dir`).
    HfArgumentParser also accepts each underscored name with dashes (`--output-dir`); that second spelling is
    dropped, from parsing and from `--help`; and no abbreviation (`--output` for `--output_dir`) is accepted."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, allow_abbrev=False, **kwargs)
        for action in self._actions:
            twins = [
                name
                for name in action.option_strings
                if "-" in name[2:] and "--" + name[2:].replace("-", "_") in action.option_strings
            ]
            for name in twins:
                action.option_strings.remove(name)
                del self._option_string_actions[name]

    @classmethod
    def for_command(cls, dataclass_types: Sequence[type], *, doc: str, examples: str) -> OneSpellingArgumentParser:
        """The parser of a command whose `--help` opens with the first paragraph of its module's docstring `doc`
        and ends with its `examples`, both as written, and shows no defaults that the help does not state."""
        return cls(
            dataclass_types,
            description=doc.split("\n\n")[0],
            epilog=examples,
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )

    def parse_command_line(self, args: Sequence[str] | None = None) -> tuple[Any, ...]:
        """The dataclasses, filled from `args` (default: the command line) as argparse's `parse_args` reads it: an
        argument no option takes is a usage error (exit status 2, not the ValueError of
        `parse_args_into_dataclasses`), and no `.args` file beside the script is read in."""
        *dataclasses, unknown = self.parse_args_into_dataclasses(
            args=args, return_remaining_strings=True, look_for_args_file=False
        )
        if unknown:
            self.error(f"unrecognized arguments: {' '.join(unknown)}")
        return tuple(dataclasses)


class _Switch(argparse.Action):
    """An option that takes no value, as argparse's `store_true`: given, it sets True. HfArgumentParser makes a
    bool field an option with an optional value (`--flag [FLAG]`, which also takes `--flag false`) and hands the
    action that value's type, nargs and const; this action sets them aside."""

    def __init__(
        self,
        option_strings: list[str],
        dest: str,
        default: bool = False,
        required: bool = False,
        help: str | None = None,
        **_optional_value: Any,
    ) -> None:
        super().__init__(option_strings, dest, nargs=0, default=default, required=required, help=help)

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, *_: Any) -> None:
        setattr(namespace, self.dest, True)


# The metadata of a bool field (default False) that is a switch: `--flag`, no value, as `action="store_true"`.
SWITCH: dict[str, Any] = {"action": _Switch}
