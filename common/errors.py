"""The error types of the package's commands: each message alone tells the user what is wrong with which input
(the file, the dataset, the line, the expected and actual shape), so a command prints it as one line.

Every type derives from `ElmoError`, the one type the commands catch; the subtypes say which workflow raised it.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = [
    "ConversionError",
    "DataFileError",
    "ElmoError",
    "EmbedError",
    "TrainingError",
    "exit_on_error",
    "first_line",
    "report_error",
    "report_interruption",
]


class ElmoError(Exception):
    """Bad input to one of the package's commands; the message is the whole explanation, printed as one line."""


class ConversionError(ElmoError):
    """Bad input to a conversion: a missing or malformed file, dataset or option."""


class DataFileError(ElmoError, ValueError):
    """A data file that cannot be used: the message names the file (and the line, where there is one)."""


class EmbedError(ElmoError):
    """What stops `elmo-embed`: bad input or options, an unusable model, an output in the way, or a failure in the
    middle of the file (whose message says how to resume)."""


class TrainingError(ElmoError):
    """What stops a training script: its output folder in use or in the way, a damaged checkpoint, a full disk
    (the message names what was saved and how to resume)."""


def first_line(error: BaseException) -> str:
    """The first line of an exception's message, for a one-line error."""
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__


def report_error(program: str, error: ElmoError) -> int:
    """Print `error` as the console commands (`elmo-convert`, `elmo-embed`) do, `PROGRAM: error: MESSAGE` on stderr,
    and return their exit status for bad input, 2 (argparse's)."""
    print(f"{program}: error: {error}", file=sys.stderr)
    return 2


def report_interruption(program: str, kept: str) -> int:
    """Print a Ctrl-C as the console commands do, `PROGRAM: interrupted: KEPT` on stderr, where `kept` says what
    is kept and how to go on, and return the exit status of a process that SIGINT ended, 130 (128 + 2)."""
    print(f"{program}: interrupted: {kept}", file=sys.stderr)
    return 130


@contextmanager
def exit_on_error(*also: type[Exception]) -> Iterator[None]:
    """For the training scripts: an `ElmoError` (or one of the types `also`) raised inside ends the program with
    `error: MESSAGE` on stderr and exit status 1, not a traceback."""
    try:
        yield
    except (ElmoError, *also) as error:
        sys.exit(f"error: {error}")
