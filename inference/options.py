"""`elmo-embed`'s options, each stated once (`EmbedOptions`): its name, default, help and choices. The command line
is built from them (`EmbedOptions.add_arguments`), `embed_file` takes them, and those that the vectors depend on are
what `OUT.partial/settings.json` records of them (`EmbedOptions.recorded`), which `--resume` compares. Nothing here
loads torch or numpy: `--help` answers at once.
"""

from __future__ import annotations

import argparse
import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from elmo_transformers.common.disk_space import NO_SPACE_CHECK
from elmo_transformers.common.errors import EmbedError

__all__ = ["COMPRESSIONS", "COMPUTE_DTYPES", "FORMATS", "LAYER_CHOICES", "STORAGE_DTYPES", "EmbedOptions"]

LAYER_CHOICES = ("all", "top", "average", "mix")
# The dtypes the model computes in (--dtype; torch's names): `elmo_transformers.inference.embedder.TORCH_DTYPES`
# maps them to torch's dtypes.
COMPUTE_DTYPES = ("float32", "bfloat16", "float16")
# The dtypes the vectors are stored in (`elmo_transformers.inference.storage`); the first is the default.
STORAGE_DTYPES = ("float32", "float16")
# HDF5's filters that every h5py reads without plugins; "none" (the default) stores the datasets contiguous.
COMPRESSIONS = ("none", "gzip", "lzf")
# The output formats: one hdf5 file in AllenNLP's layout, or a folder that `datasets.load_from_disk` opens.
FORMATS = ("hdf5", "datasets")


def _positional(metavar: str, help: str) -> dict[str, Any]:
    """The metadata of a positional argument (required)."""
    return {"positional": True, "metavar": metavar, "help": help}


def _option(
    default: Any,
    help: str,
    *,
    flag: str | None = None,
    metavar: str | None = None,
    choices: tuple[str, ...] | list[str] | None = None,
    recorded: bool = False,
) -> Any:
    """An option: `--NAME` (the field's name, dashed) unless `flag` says otherwise; a bool is a switch that turns its
    default over. `recorded`: the vectors depend on it, so `settings.json` records it and `--resume` compares it."""
    metadata = {"help": help, "flag": flag, "metavar": metavar, "choices": choices, "recorded": recorded}
    return field(default=default, metadata=metadata)


@dataclass(frozen=True)
class EmbedOptions:
    """One `elmo-embed` run's options, in the order `--help` lists them; `input` and `output` may be given as
    strings. `EmbedOptions("in.txt", "out.hdf5", layers="top")` is `elmo-embed in.txt out.hdf5 --layers top`."""

    input: Path = field(
        metadata=_positional("IN", "text file, one sentence per line (UTF-8, may be gzip-compressed; not a pipe)")
    )
    output: Path = field(metadata=_positional("OUT", "hdf5 file to create (with --format datasets: a folder)"))
    model: str | None = _option(None, "model folder written by elmo-convert", metavar="DIR")
    layers: str = _option(
        "all",
        "all: every layer, (L+1, words, 2P); top: the top biLSTM layer; average: the mean of the L+1 layers;"
        " mix: the learned mix of a task head fine-tuned with this package (default %(default)s)",
        choices=LAYER_CHOICES,
        recorded=True,
    )
    batch_size: int = _option(64, "sentences per batch (default %(default)s)", metavar="N")
    max_words: int = _option(
        1000, "embed longer lines in pieces of at most N words (default %(default)s)", metavar="N", recorded=True
    )
    tokenize: bool = _option(
        False,
        "split raw text into words PTB-like (punctuation split off; NFC-normalised, characters kept whole),"
        ' stored as each dataset\'s attribute "words"',
        recorded=True,
    )
    compute_dtype: str = _option(
        "float32",
        "the dtype the model computes in; the file stores --storage-dtype (default %(default)s)",
        flag="--dtype",
        choices=sorted(COMPUTE_DTYPES),
        recorded=True,
    )
    storage_dtype: str = _option(
        STORAGE_DTYPES[0],
        "dtype of the stored vectors: float16 halves the file (default %(default)s)",
        choices=STORAGE_DTYPES,
        recorded=True,
    )
    compression: str = _option(
        COMPRESSIONS[0],
        "HDF5 filter of each line's dataset, chunked by words; gzip is smaller, lzf faster (default %(default)s)",
        choices=COMPRESSIONS,
        recorded=True,
    )
    output_format: str = _option(
        "hdf5",
        "hdf5: one file in AllenNLP's layout; datasets: a folder of Arrow shards that datasets.load_from_disk"
        " opens, a row per line (line, words with --tokenize, vectors; --storage-dtype applies, --compression only to"
        " the segments built on the way) (default %(default)s)",
        flag="--format",
        choices=FORMATS,
    )
    device: str | None = _option(
        None,
        "torch device: cpu, cuda, cuda:1, ... (default cuda when available, else cpu; an ONNX folder runs on cpu)",
    )
    resume: bool = _option(False, "continue an interrupted run from OUT.partial")
    overwrite: bool = _option(False, "replace an existing output")
    forget_sentences: bool = _option(
        False, 'leave out the "sentence_to_index" dataset (its mapping keeps every distinct line in memory)'
    )
    space_check: bool = _option(
        True,
        "start even when the disk looks too small for the segments and the merged file (about twice the vectors)",
        flag=NO_SPACE_CHECK,
    )

    def __post_init__(self) -> None:
        object.__setattr__(self, "input", Path(self.input))  # (frozen)
        object.__setattr__(self, "output", Path(self.output))

    @classmethod
    def add_arguments(cls, parser: argparse.ArgumentParser) -> None:
        """Add every option to `parser`, whose namespace then holds them under their names here
        (`from_arguments`)."""
        for option in dataclasses.fields(cls):
            metadata = option.metadata
            if metadata.get("positional"):
                parser.add_argument(option.name, metavar=metadata["metavar"], help=metadata["help"])
                continue
            flag = metadata["flag"] or "--" + option.name.replace("_", "-")
            arguments: dict[str, Any] = {"dest": option.name, "help": metadata["help"], "default": option.default}
            if isinstance(option.default, bool):
                arguments["action"] = "store_false" if option.default else "store_true"
            elif isinstance(option.default, int):
                arguments["type"] = int
            arguments.update((key, metadata[key]) for key in ("metavar", "choices") if metadata[key] is not None)
            parser.add_argument(flag, **arguments)

    @classmethod
    def from_arguments(cls, arguments: argparse.Namespace) -> EmbedOptions:
        """The options of a namespace parsed by a parser that `add_arguments` built."""
        return cls(**{option.name: getattr(arguments, option.name) for option in dataclasses.fields(cls)})

    def check(self) -> None:
        """Refuse, in one `EmbedError` line, options that cannot run at all or together: checked before anything is
        read or written."""
        if self.batch_size < 1 or self.max_words < 1:
            raise EmbedError(
                f"--batch-size and --max-words must be at least 1, got {self.batch_size} and {self.max_words}"
            )
        if self.resume and self.overwrite:
            raise EmbedError(
                "--resume and --overwrite contradict each other: --resume continues OUT.partial's finished lines,"
                " --overwrite starts over without them; pass one of them"
            )
        if self.device is not None and self.device.split(":")[0] == "meta":
            # (the model moves there without a word, and the first batch fails deep inside torch)
            raise EmbedError(
                f"--device {self.device}: the meta device holds no data, so nothing can be computed on it; pass"
                " --device cpu or cuda, or no --device"
            )

    def recorded(self) -> dict[str, Any]:
        """The options that the vectors depend on, by name (what `settings.json` records of them)."""
        fields = dataclasses.fields(self)
        return {option.name: getattr(self, option.name) for option in fields if option.metadata.get("recorded")}
