"""Conversions between the original ELMo formats and transformers folders (`elmo-convert`)."""

from common.errors import ConversionError
from common.moved_modules import keep_old_paths

__all__ = ["ConversionError"]

# The shared plumbing that lived here before it got its own package, `common`.
keep_old_paths(
    {
        "conversion.errors": "common.errors",
        "conversion.atomic_output": "common.atomic_output",
        "conversion.options": "common.options",
    }
)
