"""The one error type of the converters: its message alone tells the user what is wrong with which input."""

__all__ = ["ConversionError"]


class ConversionError(Exception):
    """Bad input to a conversion: a missing or malformed file, dataset or option."""
