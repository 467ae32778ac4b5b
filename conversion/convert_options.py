"""The options of each `elmo-convert` subcommand, one frozen dataclass each (a `common.cli_options.CommandOptions`):
a field per option with its help, default and choices, in the order `--help` lists them. The command table
(`command.COMMANDS`) builds each subcommand's parser from its dataclass, and the converter the subcommand runs takes
the options: `TokenEmbeddingsOptions(model="elmo", vocab="vocab.txt", output="t.hdf5")` is
`elmo-convert token-embeddings --model elmo --vocab vocab.txt --output t.hdf5`.

The options they share are declared once, in base classes, and close each subcommand's `--help`: every one takes
`--overwrite` and `--no-space-check` (`ConverterOptions`), one that writes a folder it may upload `--push-to-hub`
before them (`UploadOptions`), one that writes a new model folder its model page's `--license` and `--language`
before that (`ModelFolderOptions`). Options that contradict each other (`--weights` with `--archive`) are refused
by the converter, as `common.cli_options` has it. Nothing here imports torch: `--help` answers at once.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from elmo_transformers.common.cli_options import CommandOptions, option, required
from elmo_transformers.common.disk_space import NO_SPACE_CHECK
from elmo_transformers.common.errors import ConversionError

from .variants import VARIANTS

__all__ = [
    "AllennlpOptions",
    "BilmTfCheckpointOptions",
    "ConverterOptions",
    "ElmoForManyLangsOptions",
    "ModelFolderOptions",
    "OnnxOptions",
    "SentenceTransformersOptions",
    "ToAllennlpOptions",
    "TokenEmbeddingsOptions",
    "UploadOptions",
]


@dataclass(frozen=True, kw_only=True)
class ConverterOptions(CommandOptions, error=ConversionError):
    """What every subcommand takes, after its own options: whether to replace an existing output, and the check of
    the output's disk for room."""

    overwrite: bool = option(False, "replace an existing output")
    space_check: bool = option(
        True,
        "write even where the output's disk has less free space than the output is estimated to take",
        flag=NO_SPACE_CHECK,
    )


@dataclass(frozen=True, kw_only=True)
class ToAllennlpOptions(ConverterOptions):
    """`elmo-convert to-allennlp`: a model folder back to options.json and weights.hdf5, in the layout AllenNLP and
    bilm-tf read (a model that layout cannot hold is refused: `allennlp.export_allennlp`)."""

    model: str = required("model folder written by this package")
    output: str = required("folder to create for options.json and weights.hdf5")


def _batch_size_at_least_one(options: TokenEmbeddingsOptions) -> None:
    # (0 was a traceback from range(); a negative size wrote a file of zeros: range() with a negative step is empty)
    if options.batch_size < 1:
        raise ConversionError(f"--batch-size must be at least 1, got {options.batch_size}")


def _repository_named(options: OnnxOptions) -> None:
    # (an empty path is the current folder: the Triton models were written into it, beside whatever it held)
    if options.triton_repository is not None and not str(options.triton_repository).strip():
        raise ConversionError(
            f"--triton-repository {options.triton_repository!r}: an empty path names no folder; name the folder of"
            f" the model repository (the current one: --triton-repository {Path.cwd()})"
        )


@dataclass(frozen=True, kw_only=True)
class TokenEmbeddingsOptions(ConverterOptions):
    """`elmo-convert token-embeddings`: the token layer of a vocabulary."""

    model: str = required("model folder written by this package")
    vocab: str = required("vocabulary file, one word per line")
    output: str = required("hdf5 file to create (dataset 'embedding')")
    batch_size: int = option(1024, "words per batch (default %(default)s)", check=_batch_size_at_least_one)


@dataclass(frozen=True, kw_only=True)
class OnnxOptions(ConverterOptions):
    """`elmo-convert onnx`: a model folder as ONNX graphs, and Triton models of them."""

    model: str = required("model folder written by this package (the biLM or a task head)")
    output: str = required("folder to create for model.onnx, the tokenizer and config")
    quantize: str | None = option(
        None,
        "also write model_quantized.onnx, 8-bit weights and activations in the LSTM, highway and projection"
        " products (each row of activations quantised by itself: a sentence's vectors do not depend on its batch)",
        choices=["int8"],
    )
    triton_repository: str | None = option(
        None,
        "also write each graph as a model of this Triton model repository: REPO/NAME/config.pbtxt and"
        " REPO/NAME/1/model.onnx, NAME the --output folder's name (the int8 graph: NAME_int8), and raw text into them:"
        " the front end NAME_text_encoder (python backend, numpy only) and an ensemble per graph, NAME_text (and"
        " NAME_int8_text), whose input is one sentence per batch row",
        metavar="REPO",
        check=_repository_named,
    )


@dataclass(frozen=True, kw_only=True)
class UploadOptions(ConverterOptions):
    """The options of a subcommand that writes a folder it may upload to the Hub."""

    push_to_hub: str | None = option(None, "upload the folder to this Hub model repo", metavar="REPO")


@dataclass(frozen=True, kw_only=True)
class SentenceTransformersOptions(UploadOptions):
    """`elmo-convert sentence-transformers`: a model folder as averaged sentence vectors."""

    model: str = required("ELMo model folder (any written by this package)")
    output: str = required("sentence-transformers folder to create")
    layers: str = option(
        "average",
        "each word's vector (default %(default)s): average (mean of all layers), first-two (mean of the token "
        "layer and the first biLSTM layer, the top layers are not run), concat (all layers side by side), or one "
        "layer's index (0 = token layer, 1..L = biLSTM layers)",
    )
    license: str | None = option(None, "license for the model page (default: the source model page's)")
    language: str | None = option(None, "language for the model page (default: the source model page's)")


@dataclass(frozen=True, kw_only=True)
class ModelFolderOptions(UploadOptions):
    """The options of a subcommand that writes a new model folder, and its model page."""

    license: str = option("apache-2.0", "license of the weights, for the model page (default %(default)s)")
    language: str | None = option("en", "language of the weights, for the model page (default %(default)s)")


@dataclass(frozen=True, kw_only=True)
class AllennlpOptions(ModelFolderOptions):
    """`elmo-convert allennlp`: options.json (or a released variant's) and weights.hdf5, or an NLPL archive."""

    options: str | None = option(None, "the model's options.json", one_of="source")
    variant: str | None = option(
        None, "a released model's options, instead of --options", choices=sorted(VARIANTS), one_of="source"
    )
    archive: str | None = option(
        None,
        "an NLPL repository ZIP archive, or its unzipped folder, instead of --options and --weights: the model "
        "it holds (bilm-tf weights: model.hdf5, options.json; a bilm-tf checkpoint: model.ckpt-N.index and .data, "
        "options.json, vocab.txt; or ELMoForManyLangs: encoder.pkl, token_embedder.pkl, config.json, char.dic), "
        "with its meta.json's languages and corpus on the model page",
        one_of="source",
    )
    weights: str | None = option(None, "the model's weights.hdf5 (with --options or --variant)")
    output: str = required("model folder to create")
    language: str | None = option(
        None, "language of the weights, for the model page (default the --archive's meta.json, else en)"
    )


@dataclass(frozen=True, kw_only=True)
class ElmoForManyLangsOptions(ModelFolderOptions):
    """`elmo-convert elmoformanylangs`: an ELMoForManyLangs model folder."""

    model: str = required("folder with config.json, char.dic, *.pkl")
    output: str = required("model folder to create")


@dataclass(frozen=True, kw_only=True)
class BilmTfCheckpointOptions(ModelFolderOptions):
    """`elmo-convert bilm-tf-checkpoint`: a bilm-tf training checkpoint, with its options and vocabulary."""

    checkpoint: str = required(
        "checkpoint prefix (model.ckpt-N, the .index file's name without '.index'), or the training folder"
    )
    options: str = required("the options.json bilm-tf wrote for the training run")
    vocab: str = required("the training vocabulary: one word per softmax row, <S>, </S>, <UNK> first")
    output: str = required("model folder to create")
