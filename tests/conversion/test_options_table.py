"""`elmo_transformers.common.options_json.OPTION_FIELDS`, the one options.json <-> `ElmoConfig` table: both
directions, the released variants and `ElmoConfig`'s documentation all follow it."""

from __future__ import annotations

import re

from original_files import small_options

from elmo_transformers.common.options_json import OPTION_FIELDS, config_from_options, options_from_config
from elmo_transformers.conversion.variants import VARIANTS
from modeling_elmo import ElmoConfig

_BACKTICKED = re.compile(r"`([^`]+)`")


def _documented_pairs() -> set[tuple[str, str]]:
    """(field, options.json entry) of every row of the table in `ElmoConfig`'s docstring."""
    doc = ElmoConfig.__doc__
    table = doc[doc.index("| field | options.json |") :].split("\n\n")[0]
    pairs = set()
    for row in table.splitlines()[2:]:
        field_column, entry_column = row.strip().strip("|").split("|", 1)
        fields = _BACKTICKED.findall(field_column)
        pairs.update(zip(fields, _BACKTICKED.findall(entry_column)[: len(fields)], strict=True))
    return pairs


def test_the_config_docstring_documents_the_table() -> None:
    assert _documented_pairs() == {(field.field, field.name) for field in OPTION_FIELDS}


def test_written_options_read_back_to_the_same_config_and_file() -> None:
    options = small_options(n_tokens_vocab=793471, dropout=0.25, n_characters=262, unroll_steps=20)
    config = config_from_options(options)
    for field in OPTION_FIELDS:  # every table row carries its entry into the config
        entry = options
        for key in field.name.split("."):
            entry = entry[key]
        assert getattr(config, field.field) == entry, field.name
    assert options_from_config(config) == options
    assert config_from_options(options_from_config(config)).to_dict() == config.to_dict()


def test_a_training_options_file_reads_as_262_characters() -> None:
    assert config_from_options(small_options(n_characters=261)).char_vocab_size == 262


def test_variants_are_written_through_the_table() -> None:
    for variant in VARIANTS.values():
        options = variant.options
        assert options_from_config(config_from_options(options)) == options
        assert options["char_cnn"]["filters"] == [list(pair) for pair in ElmoConfig().char_cnn_filters]
