"""What an `elmo-convert` subcommand is: each converter module defines its own `COMMAND` (name, summary, the
function that adds its arguments, the function that runs it), and `conversion.cli` lists them."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from .model_card import SourceDescription

__all__ = ["ConverterCommand", "add_model_page_arguments", "model_page_source"]


@dataclass(frozen=True)
class ConverterCommand:
    """One subcommand: `run` carries it out on the parsed arguments and returns the line it prints."""

    name: str
    summary: str
    add_arguments: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], str]


def add_model_page_arguments(parser: argparse.ArgumentParser) -> None:
    """The model page's license and language, and the upload, of a converter that writes a new model folder."""
    parser.add_argument(
        "--license", default="apache-2.0", help="license of the weights, for the model page (default %(default)s)"
    )
    parser.add_argument(
        "--language", default="en", help="language of the weights, for the model page (default %(default)s)"
    )
    parser.add_argument("--push-to-hub", metavar="REPO", help="upload the folder to this Hub model repo")


def model_page_source(
    args: argparse.Namespace,
    description: str,
    files: tuple[Path, ...],
    training_data: str,
    options_file: str | None = None,
) -> SourceDescription:
    """What the model page says of the source: `description`, `files` (named with their checksums), the
    `training_data`, the options file where one was read, and the license and language the arguments give."""
    return SourceDescription(
        description,
        files,
        args.license,
        args.language,
        training_data,
        options_file=None if options_file is None else Path(options_file),
    )
