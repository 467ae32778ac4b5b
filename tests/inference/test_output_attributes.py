"""The output file's root attributes are named in one module (`output_attributes`): the writer records those, in
that order, and docs/elmo-embed.md's table (where `--help` points) holds each with its meaning."""

from __future__ import annotations

import re
from pathlib import Path

from elmo_transformers.inference.options import EmbedOptions
from elmo_transformers.inference.output_attributes import ATTRIBUTES
from elmo_transformers.inference.settings import EmbedSettings

DOC = Path(__file__).resolve().parents[2] / "docs" / "elmo-embed.md"
ROW = re.compile(r"^\| `(elmo_embed_\w+)` \| (.*) \|$")


def test_the_docs_table_is_the_modules() -> None:
    rows = [match.groups() for match in map(ROW.match, DOC.read_text(encoding="utf-8").splitlines()) if match]
    assert rows == [(attribute.name, attribute.meaning) for attribute in ATTRIBUTES]


def test_the_writer_records_every_attribute_in_order() -> None:
    settings = EmbedSettings("c0ffee", "/models/elmo", "pytorch", "beef", EmbedOptions("in.txt", "out.hdf5"))
    attributes = settings.attributes(["elmo-embed", "in.txt", "out.hdf5"])
    assert list(attributes) == [attribute.name for attribute in ATTRIBUTES]
    assert all(isinstance(value, str) for value in attributes.values())
