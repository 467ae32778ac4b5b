"""Conversions between the original ELMo formats and transformers folders (`elmo-convert`)."""

from common.errors import ConversionError

__all__ = ["ConversionError"]
