"""The error types of the package's commands: each message alone tells the user what is wrong with which input
(the file, the dataset, the line, the expected and actual shape), so a command prints it as one line."""

__all__ = ["ConversionError", "DataFileError"]


class ConversionError(Exception):
    """Bad input to a conversion: a missing or malformed file, dataset or option."""


class DataFileError(ValueError):
    """A data file that cannot be used: the message names the file (and the line, where there is one)."""
