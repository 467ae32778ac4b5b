"""Conversions between the original ELMo formats and transformers folders (`elmo-convert`)."""

from .errors import ConversionError

__all__ = ["ConversionError"]
