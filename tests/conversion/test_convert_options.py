"""Each `elmo-convert` subcommand's options are one frozen dataclass (`conversion.convert_options`): its parser is
built from it, the options built in Python are those the command line gives, and a value outside an option's
choices is refused in Python as on the command line; `allennlp --archive` runs the archive's converter."""

from __future__ import annotations

import argparse
import dataclasses

import pytest

from elmo_transformers.common.errors import ConversionError
from elmo_transformers.conversion.cli import build_parser, main
from elmo_transformers.conversion.command import COMMANDS
from elmo_transformers.conversion.convert_options import (
    AllennlpOptions,
    OnnxOptions,
    SentenceTransformersOptions,
    TokenEmbeddingsOptions,
)


def _parsed(argv: list[str]) -> object:
    args = build_parser(COMMANDS).parse_args(argv)
    command = next(command for command in COMMANDS if command.name == args.command)
    return command.options.from_arguments(args)


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (
            ["token-embeddings", "--model", "m", "--vocab", "v.txt", "--output", "t.hdf5", "--batch-size", "8"],
            TokenEmbeddingsOptions(model="m", vocab="v.txt", output="t.hdf5", batch_size=8),
        ),
        (
            ["allennlp", "--variant", "small", "--weights", "w.hdf5", "--output", "o", "--no-space-check"],
            AllennlpOptions(variant="small", weights="w.hdf5", output="o", space_check=False),
        ),
        (
            ["onnx", "--model", "m", "--output", "o", "--quantize", "int8", "--overwrite"],
            OnnxOptions(model="m", output="o", quantize="int8", overwrite=True),
        ),
        (
            ["sentence-transformers", "--model", "m", "--output", "o", "--push-to-hub", "me/st"],
            SentenceTransformersOptions(model="m", output="o", push_to_hub="me/st"),
        ),
    ],
    ids=["token-embeddings", "allennlp", "onnx", "sentence-transformers"],
)
def test_the_command_line_gives_the_options_built_in_python(argv: list[str], expected: object) -> None:
    assert _parsed(argv) == expected


def _dests(name: str) -> list[str]:
    """The options of a subcommand's parser, in the order its --help lists them."""
    subparsers = next(a for a in build_parser(COMMANDS)._actions if isinstance(a, argparse._SubParsersAction))
    return [action.dest for action in subparsers.choices[name]._actions if action.dest != "help"]


def test_each_subcommand_takes_its_options_fields_and_ends_with_the_shared_ones() -> None:
    for command in COMMANDS:
        assert sorted(_dests(command.name)) == sorted(field.name for field in dataclasses.fields(command.options))
        assert _dests(command.name)[-2:] == ["overwrite", "space_check"]
    assert _dests("allennlp")[-5:-2] == ["license", "language", "push_to_hub"]  # (language declared again)
    shared = ["push_to_hub", "overwrite", "space_check"]  # after its own --license and --language
    assert _dests("sentence-transformers") == ["model", "output", "layers", "license", "language", *shared]


def test_an_option_without_a_default_must_be_given() -> None:
    with pytest.raises(TypeError, match="output"):
        TokenEmbeddingsOptions(model="m", vocab="v.txt")


def test_a_value_outside_the_choices_is_refused_in_python() -> None:
    assert AllennlpOptions(options="o.json", weights="w", output="o").variant is None  # (not given)
    with pytest.raises(ConversionError, match=r"^--variant must be one of medium, original, original-5.5b, small"):
        AllennlpOptions(variant="tiny", weights="w", output="o")
    with pytest.raises(ConversionError, match=r"^--quantize must be one of int8, got 'int4'$"):
        OnnxOptions(model="m", output="o", quantize="int4")


def test_the_source_of_allennlp_is_one_of_three(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        build_parser(COMMANDS).parse_args(["allennlp", "--output", "o"])
    assert "one of the arguments --options --variant --archive is required" in capsys.readouterr().err


def test_an_archive_goes_to_the_archive_converter() -> None:
    (allennlp,) = [command for command in COMMANDS if command.name == "allennlp"]
    assert allennlp.converter(AllennlpOptions(archive="209.zip", output="o")) == "nlpl_archive:convert_archive"
    assert allennlp.converter(AllennlpOptions(variant="small", weights="w", output="o")) == "allennlp:run_convert"


@pytest.mark.parametrize("size", ["0", "-1"])
def test_a_token_embeddings_batch_size_under_one_is_refused(
    size: str, tmp_path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """0 was a traceback from range(); -1 wrote a file of zeros (range() with a negative step is empty)."""
    monkeypatch.chdir(tmp_path)
    command = ["token-embeddings", "--model", "m", "--vocab", "v.txt", "--output", "t.hdf5", "--batch-size", size]
    assert main(command) == 2
    assert capsys.readouterr().err.strip().splitlines()[-1] == (
        f"elmo-convert: error: --batch-size must be at least 1, got {size}"
    )
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("repository", ["", "  "])
def test_an_empty_triton_repository_is_refused(
    repository: str, tmp_path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`--triton-repository ""` is the current folder: three model folders were written into it."""
    monkeypatch.chdir(tmp_path)
    assert main(["onnx", "--model", "m", "--output", "o", "--triton-repository", repository]) == 2
    assert capsys.readouterr().err.strip().splitlines()[-1] == (
        f"elmo-convert: error: --triton-repository {repository!r}: an empty path names no folder; name the folder of"
        f" the model repository (the current one: --triton-repository {tmp_path})"
    )
    assert list(tmp_path.iterdir()) == []
