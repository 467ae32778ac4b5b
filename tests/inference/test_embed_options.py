"""`elmo-embed`'s options (`EmbedOptions`): the command line built from them gives each its default and sets each,
and `settings.json` records those the vectors depend on, as earlier runs recorded them (so that they resume).

A new option is declared in `EmbedOptions` and added to `EVERY_OPTION_SET` here (and, if the vectors depend on it,
to `RECORDED` and to what `settings.json` holds)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from elmo_transformers.common.errors import EmbedError
from elmo_transformers.inference.embed import build_parser
from elmo_transformers.inference.options import EmbedOptions
from elmo_transformers.inference.settings import EmbedSettings

# Every option given a value other than its default: its arguments on the command line, and the value they give.
EVERY_OPTION_SET = {
    "model": (["--model", "m"], "m"),
    "layers": (["--layers", "top"], "top"),
    "batch_size": (["--batch-size", "3"], 3),
    "max_words": (["--max-words", "5"], 5),
    "tokenize": (["--tokenize"], True),
    "compute_dtype": (["--dtype", "bfloat16"], "bfloat16"),
    "storage_dtype": (["--storage-dtype", "float16"], "float16"),
    "compression": (["--compression", "gzip"], "gzip"),
    "output_format": (["--format", "datasets"], "datasets"),
    "device": (["--device", "cpu"], "cpu"),
    "workers": (["--workers", "3"], 3),
    "resume": (["--resume"], True),
    "overwrite": (["--overwrite"], True),
    "forget_sentences": (["--forget-sentences"], True),
    "space_check": (["--no-space-check"], False),
}
EVERY_OPTION = EmbedOptions("in.txt", "out.hdf5", **{name: value for name, (_, value) in EVERY_OPTION_SET.items()})
# What `settings.json` records of the options (the vectors depend on these).
RECORDED = ["layers", "max_words", "tokenize", "compute_dtype", "storage_dtype", "compression"]


def _parse(argv: list[str]) -> EmbedOptions:
    return EmbedOptions.from_arguments(build_parser().parse_args(argv))


def test_the_command_lines_defaults_are_the_options_defaults() -> None:
    assert _parse(["in.txt", "out.hdf5"]) == EmbedOptions("in.txt", "out.hdf5")


def test_every_option_is_set_from_the_command_line() -> None:
    argv = ["in.txt", "out.hdf5", *(argument for arguments, _ in EVERY_OPTION_SET.values() for argument in arguments)]
    assert _parse(argv) == EVERY_OPTION
    options = [option.name for option in dataclasses.fields(EmbedOptions) if option.default is not dataclasses.MISSING]
    assert list(EVERY_OPTION_SET) == options, "every option, in the order --help lists them"
    for name, (_, value) in EVERY_OPTION_SET.items():
        assert value != getattr(EmbedOptions("in.txt", "out.hdf5"), name), f"{name}: set to its default"


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
    resumed = dataclasses.replace(EVERY_OPTION, batch_size=64, device=None, workers=1, resume=False, space_check=True)
    assert EmbedSettings("c0ffee", "/models/elmo", "pytorch", "beef", resumed).differences(written_before) == []


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"batch_size": 0}, "--batch-size and --max-words must be at least 1, got 0 and 1000"),
        ({"max_words": 0}, "--batch-size and --max-words must be at least 1, got 64 and 0"),
        ({"storage_dtype": "int8"}, "--storage-dtype must be one of float32, float16, got 'int8'"),
        ({"compression": "zip"}, "--compression must be one of none, gzip, lzf, got 'zip'"),
        ({"layers": "five"}, "--layers must be one of all, top, average, mix, got 'five'"),
        ({"workers": 0}, "--workers must be at least 1, got 0 (1: one process on every core)"),
        ({"workers": -2}, "--workers must be at least 1, got -2"),
    ],
)
def test_options_built_in_python_are_checked_as_the_command_line_checks_them(
    options: dict[str, object], message: str
) -> None:
    """Each option's check runs when the options are built: `embed_file` never sees options that cannot run."""
    with pytest.raises(EmbedError) as refused:
        EmbedOptions("in.txt", "out.hdf5", **options)
    assert str(refused.value).startswith(message)
    with pytest.raises(EmbedError):
        dataclasses.replace(EmbedOptions("in.txt", "out.hdf5"), **options)
