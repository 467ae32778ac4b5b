"""The `elmo-convert` subcommands: each one's name, summary and arguments, and the converter function that carries
it out, named by module and function and imported only when the command runs.

Argument parsing (`--help`, a mistyped option) needs none of torch, transformers or h5py, which take seconds to
import: this module and what it imports stay light, and each converter module is imported by `ConverterCommand.run`.
"""

from __future__ import annotations

import argparse
import importlib
from collections.abc import Callable
from dataclasses import dataclass

from .variants import VARIANTS

__all__ = ["COMMANDS", "ConverterCommand", "add_model_page_arguments"]


@dataclass(frozen=True)
class ConverterCommand:
    """One subcommand: `run` carries it out on the parsed arguments and returns the line it prints."""

    name: str
    summary: str
    add_arguments: Callable[[argparse.ArgumentParser], None]
    runner: str  # "module:function" in this package: the function taking the parsed arguments

    def converter(self, args: argparse.Namespace) -> str:
        """The "module:function" that carries out these arguments."""
        return self.runner

    def run(self, args: argparse.Namespace) -> str:
        module, function = self.converter(args).split(":")
        return getattr(importlib.import_module(f".{module}", __package__), function)(args)


@dataclass(frozen=True)
class _ArchiveOrFilesCommand(ConverterCommand):
    """`allennlp`: its `--options` or `--variant` and `--weights` go to `runner`, an NLPL `--archive` to
    `archive_runner`, which finds the model the archive holds and hands it to the converter of its format (`allennlp`
    among them). The choice is made here, above both, so that no converter imports the archive's module."""

    archive_runner: str = "nlpl_archive:convert_archive"

    def converter(self, args: argparse.Namespace) -> str:
        return self.archive_runner if args.archive else self.runner


def add_model_page_arguments(parser: argparse.ArgumentParser, *, language_from: str | None = None) -> None:
    """The model page's license and language, and the upload, of a converter that writes a new model folder;
    `language_from` names where the language comes from when the option is not given (default: en)."""
    parser.add_argument(
        "--license", default="apache-2.0", help="license of the weights, for the model page (default %(default)s)"
    )
    language_default = f"{language_from}, else en" if language_from else "%(default)s"
    parser.add_argument(
        "--language",
        default=None if language_from else "en",
        help=f"language of the weights, for the model page (default {language_default})",
    )
    parser.add_argument("--push-to-hub", metavar="REPO", help="upload the folder to this Hub model repo")


def _allennlp_arguments(parser: argparse.ArgumentParser) -> None:
    described_by = parser.add_mutually_exclusive_group(required=True)
    described_by.add_argument("--options", help="the model's options.json")
    described_by.add_argument(
        "--variant", choices=sorted(VARIANTS), help="a released model's options, instead of --options"
    )
    described_by.add_argument(
        "--archive",
        help="an NLPL repository ZIP archive, or its unzipped folder, instead of --options and --weights: the model "
        "it holds (bilm-tf weights: model.hdf5, options.json; a bilm-tf checkpoint: model.ckpt-N.index and .data, "
        "options.json, vocab.txt; or ELMoForManyLangs: encoder.pkl, token_embedder.pkl, config.json, char.dic), "
        "with its meta.json's languages and corpus on the model page",
    )
    parser.add_argument("--weights", help="the model's weights.hdf5 (with --options or --variant)")
    parser.add_argument("--output", required=True, help="model folder to create")
    add_model_page_arguments(parser, language_from="the --archive's meta.json")


def _elmoformanylangs_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--model", required=True, help="folder with config.json, char.dic, *.pkl")
    parser.add_argument("--output", required=True, help="model folder to create")
    add_model_page_arguments(parser)


def _to_allennlp_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--model", required=True, help="model folder written by this package")
    parser.add_argument("--output", required=True, help="folder to create for options.json and weights.hdf5")


def _token_embeddings_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--model", required=True, help="model folder written by this package")
    parser.add_argument("--vocab", required=True, help="vocabulary file, one word per line")
    parser.add_argument("--output", required=True, help="hdf5 file to create (dataset 'embedding')")
    parser.add_argument("--batch-size", type=int, default=1024, help="words per batch (default %(default)s)")


def _bilm_tf_checkpoint_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--checkpoint",
        required=True,
        help="checkpoint prefix (model.ckpt-N, the .index file's name without '.index'), or the training folder",
    )
    parser.add_argument("--options", required=True, help="the options.json bilm-tf wrote for the training run")
    parser.add_argument(
        "--vocab", required=True, help="the training vocabulary: one word per softmax row, <S>, </S>, <UNK> first"
    )
    parser.add_argument("--output", required=True, help="model folder to create")
    add_model_page_arguments(parser)


def _sentence_transformers_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--model", required=True, help="ELMo model folder (any written by this package)")
    parser.add_argument("--output", required=True, help="sentence-transformers folder to create")
    parser.add_argument(
        "--layers",
        default="average",
        help="each word's vector (default %(default)s): average (mean of all layers), first-two (mean of the token "
        "layer and the first biLSTM layer, the top layers are not run), concat (all layers side by side), or one "
        "layer's index (0 = token layer, 1..L = biLSTM layers)",
    )
    parser.add_argument("--license", help="license for the model page (default: the source model page's)")
    parser.add_argument("--language", help="language for the model page (default: the source model page's)")
    parser.add_argument("--push-to-hub", metavar="REPO", help="upload the folder to this Hub model repo")


def _onnx_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--model", required=True, help="model folder written by this package (the biLM or a task head)")
    parser.add_argument("--output", required=True, help="folder to create for model.onnx, the tokenizer and config")
    parser.add_argument(
        "--quantize",
        choices=["int8"],
        help="also write model_quantized.onnx, 8-bit weights and activations in the LSTM, highway and projection"
        " products (each row of activations quantised by itself: a sentence's vectors do not depend on its batch)",
    )
    parser.add_argument(
        "--triton-repository",
        metavar="REPO",
        help="also write each graph as a model of this Triton model repository: REPO/NAME/config.pbtxt and"
        " REPO/NAME/1/model.onnx, NAME the --output folder's name (the int8 graph: NAME_int8), and raw text into them:"
        " the front end NAME_text_encoder (python backend, numpy only) and an ensemble per graph, NAME_text (and"
        " NAME_int8_text), whose input is one sentence per batch row",
    )


# Every subcommand, in the order `--help` lists them.
COMMANDS = (
    _ArchiveOrFilesCommand(
        "allennlp",
        "AllenNLP/bilm-tf options.json + weights.hdf5, or an NLPL archive (ZIP) -> model folder",
        _allennlp_arguments,
        "allennlp:run_convert",
    ),
    ConverterCommand(
        "elmoformanylangs",
        "ELMoForManyLangs model folder -> model folder",
        _elmoformanylangs_arguments,
        "elmoformanylangs:run",
    ),
    ConverterCommand(
        "to-allennlp",
        "model folder -> options.json + weights.hdf5 in the original layout",
        _to_allennlp_arguments,
        "allennlp:run_export",
    ),
    ConverterCommand(
        "token-embeddings",
        "token layer of a vocabulary -> bilm-tf's token embedding hdf5",
        _token_embeddings_arguments,
        "token_embeddings:run",
    ),
    ConverterCommand(
        "bilm-tf-checkpoint",
        "bilm-tf training checkpoint (biLM + softmax) -> language-model folder (ElmoForBidirectionalLM)",
        _bilm_tf_checkpoint_arguments,
        "bilm_tf_checkpoint:run",
    ),
    ConverterCommand(
        "sentence-transformers",
        "model folder -> sentence-transformers folder: averaged ELMo sentence vectors (mixed layers, mean over words)",
        _sentence_transformers_arguments,
        "sentence_embeddings:run",
    ),
    ConverterCommand(
        "onnx",
        "model folder -> ONNX folder (model.onnx: any batch and sentence length; onnxruntime; needs the [onnx] extra)",
        _onnx_arguments,
        "onnx_export:run",
    ),
)
