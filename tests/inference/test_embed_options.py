"""`elmo-embed`'s options (`EmbedOptions`): the command line built from them gives each its default and sets each,
and `settings.json` records those the vectors depend on, as earlier runs recorded them (so that they resume).

A new option is declared in `EmbedOptions` and added to `EVERY_OPTION_SET` here (and, if the vectors depend on it,
to `RECORDED`)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from elmo_transformers.inference.embed import build_parser
from elmo_transformers.inference.options import EmbedOptions
from elmo_transformers.inference.settings import EmbedSettings

# Every option given a value other than its default, and the options that gives.
EVERY_OPTION_SET = [
    *("in.txt", "out.hdf5", "--model", "m", "--layers", "top", "--batch-size", "3", "--max-words", "5", "--tokenize"),
    *("--dtype", "bfloat16", "--storage-dtype", "float16", "--compression", "gzip", "--format", "datasets"),
    *("--device", "cpu", "--resume", "--overwrite", "--forget-sentences", "--no-space-check"),
]
EVERY_OPTION = EmbedOptions(
    Path("in.txt"),
    Path("out.hdf5"),
    model="m",
    layers="top",
    batch_size=3,
    max_words=5,
    tokenize=True,
    compute_dtype="bfloat16",
    storage_dtype="float16",
    compression="gzip",
    output_format="datasets",
    device="cpu",
    resume=True,
    overwrite=True,
    forget_sentences=True,
    space_check=False,
)
# What `settings.json` records of the options (the vectors depend on these).
RECORDED = ["layers", "max_words", "tokenize", "compute_dtype", "storage_dtype", "compression"]


def _parse(argv: list[str]) -> EmbedOptions:
    return EmbedOptions.from_arguments(build_parser().parse_args(argv))


def test_the_command_lines_defaults_are_the_options_defaults() -> None:
    assert _parse(["in.txt", "out.hdf5"]) == EmbedOptions("in.txt", "out.hdf5")


def test_every_option_is_set_from_the_command_line() -> None:
    parsed = _parse(EVERY_OPTION_SET)
    assert parsed == EVERY_OPTION
    unset = [
        option.name
        for option in dataclasses.fields(EmbedOptions)
        if option.default is not dataclasses.MISSING and getattr(parsed, option.name) == option.default
    ]
    assert not unset, f"add {unset} to EVERY_OPTION_SET"


def test_options_are_frozen_and_take_paths_as_strings() -> None:
    options = EmbedOptions("in.txt", "out.hdf5")
    assert (options.input, options.output) == (Path("in.txt"), Path("out.hdf5"))
    with pytest.raises(dataclasses.FrozenInstanceError):
        options.layers = "top"  # type: ignore[misc]


def test_settings_json_records_what_earlier_runs_recorded() -> None:
    """The keys and values that runs wrote before the options were one object: a folder they started resumes."""
    assert list(EVERY_OPTION.recorded()) == RECORDED
    settings = EmbedSettings("c0ffee", "/models/elmo", "pytorch", "beef", EVERY_OPTION)
    written_before = {
        "backend": "pytorch",
        "compression": "gzip",
        "compute_dtype": "bfloat16",
        "input_sha256": "c0ffee",
        "layers": "top",
        "max_words": 5,
        "model": "/models/elmo",
        "model_sha256": "beef",
        "normalization": "NFC, control and format characters removed",
        "storage_dtype": "float16",
        "tokenize": True,
    }
    assert settings.as_json() == written_before and settings.differences(written_before) == []
    other = EmbedSettings("c0ffee", "/models/elmo", "pytorch", "beef", dataclasses.replace(EVERY_OPTION, layers="all"))
    assert other.differences(written_before) == ["layers 'top' (now 'all')"]
    # The options that do not change the vectors are not compared: another batch size resumes.
    resumed = dataclasses.replace(EVERY_OPTION, batch_size=64, device=None, resume=False, space_check=True)
    assert EmbedSettings("c0ffee", "/models/elmo", "pytorch", "beef", resumed).differences(written_before) == []
