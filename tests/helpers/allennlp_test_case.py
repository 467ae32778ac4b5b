"""The base class that AllenNLP 0.9.0's own tests of its ELMo modules run on here, in place of
`allennlp.common.testing.AllenNlpTestCase`: the same attributes (`FIXTURES_ROOT`, `TEST_DIR`), the fixtures taken
from `$ALLENNLP_FIXTURES` (the wheel's `allennlp/tests/fixtures`, extracted by tests/conftest.py)."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path
from unittest import TestCase

__all__ = ["AllenNlpTestCase"]


class AllenNlpTestCase(TestCase):
    FIXTURES_ROOT = Path(os.environ.get("ALLENNLP_FIXTURES", "allennlp-fixtures-not-set"))

    def setUp(self) -> None:
        self.TEST_DIR = Path(tempfile.mkdtemp(prefix="allennlp_tests"))

    def tearDown(self) -> None:
        shutil.rmtree(self.TEST_DIR, ignore_errors=True)
