"""The `elmo-convert` subcommands: each one's name, summary and options (a frozen dataclass of `convert_options`,
from which its parser is built), and the converter function that carries it out, named by module and function and
imported only when the command runs.

Argument parsing (`--help`, a mistyped option) needs none of torch, transformers or h5py, which take seconds to
import: this module and what it imports stay light, and each converter module is imported by `ConverterCommand.run`.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass

from elmo_transformers.common.cli_options import CommandOptions

from .convert_options import (
    AllennlpOptions,
    BilmTfCheckpointOptions,
    ElmoForManyLangsOptions,
    OnnxOptions,
    SentenceTransformersOptions,
    ToAllennlpOptions,
    TokenEmbeddingsOptions,
)

__all__ = ["COMMANDS", "ConverterCommand"]


@dataclass(frozen=True)
class ConverterCommand:
    """One subcommand: `run` carries out its options and returns the line it prints."""

    name: str
    summary: str
    options: type[CommandOptions]  # its parser is built from them (`add_arguments`), and `run` takes them
    # "module:function", the function taking the options: a module of this package (`allennlp`), or a dotted name
    # (`elmo_transformers.serving.onnx_export`: the serving package's export, which is no converter of formats)
    runner: str

    def converter(self, options: CommandOptions) -> str:
        """The "module:function" that carries out these options."""
        return self.runner

    def run(self, options: CommandOptions) -> str:
        module, function = self.converter(options).split(":")
        name = module if "." in module else f".{module}"
        return getattr(importlib.import_module(name, __package__), function)(options)


@dataclass(frozen=True)
class _ArchiveOrFilesCommand(ConverterCommand):
    """`allennlp`: its `--options` or `--variant` and `--weights` go to `runner`, an NLPL `--archive` to
    `archive_runner`, which finds the model the archive holds and hands it to the converter of its format (`allennlp`
    among them). The choice is made here, above both, so that no converter imports the archive's module."""

    archive_runner: str = "nlpl_archive:convert_archive"

    def converter(self, options: AllennlpOptions) -> str:
        return self.archive_runner if options.archive else self.runner


# Every subcommand, in the order `--help` lists them.
COMMANDS = (
    _ArchiveOrFilesCommand(
        "allennlp",
        "AllenNLP/bilm-tf options.json + weights.hdf5, or an NLPL archive (ZIP) -> model folder",
        AllennlpOptions,
        "allennlp:run_convert",
    ),
    ConverterCommand(
        "elmoformanylangs",
        "ELMoForManyLangs model folder -> model folder",
        ElmoForManyLangsOptions,
        "elmoformanylangs:run",
    ),
    ConverterCommand(
        "to-allennlp",
        "model folder -> options.json + weights.hdf5 in the original layout",
        ToAllennlpOptions,
        "allennlp:run_export",
    ),
    ConverterCommand(
        "token-embeddings",
        "token layer of a vocabulary -> bilm-tf's token embedding hdf5",
        TokenEmbeddingsOptions,
        "token_embeddings:run",
    ),
    ConverterCommand(
        "bilm-tf-checkpoint",
        "bilm-tf training checkpoint (biLM + softmax) -> language-model folder (ElmoForBidirectionalLM)",
        BilmTfCheckpointOptions,
        "bilm_tf_checkpoint:run",
    ),
    ConverterCommand(
        "sentence-transformers",
        "model folder -> sentence-transformers folder: averaged ELMo sentence vectors (mixed layers, mean over words)",
        SentenceTransformersOptions,
        "sentence_embeddings:run",
    ),
    ConverterCommand(
        "onnx",
        "model folder -> ONNX folder (model.onnx: any batch and sentence length; onnxruntime; needs the [onnx] extra)",
        OnnxOptions,
        "elmo_transformers.serving.onnx_export:run",
    ),
)
