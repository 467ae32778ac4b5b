"""The one error type of `elmo-embed`: its message alone tells the user what is wrong with which input."""

__all__ = ["EmbedError", "first_line"]


class EmbedError(Exception):
    """What stops `elmo-embed`: bad input or options, an unusable model, an output in the way, or a failure in the
    middle of the file (whose message says how to resume)."""


def first_line(error: BaseException) -> str:
    """The first line of an exception's message, for a one-line error."""
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__
