"""AllenNLP's error type (`allennlp.common.checks.ConfigurationError`), which the compat module raises where AllenNLP
0.9 raised it and where it crashed: one line naming the input."""

from __future__ import annotations

from elmo_transformers.common.errors import ElmoError

__all__ = ["ConfigurationError"]


class ConfigurationError(ElmoError):
    """Bad input to the AllenNLP 0.9 API: the message is one line naming the file, option or sentence."""
