"""`elmo-embed`'s options, each stated once (`EmbedOptions`, a `common.cli_options.CommandOptions`): its name,
default, help, choices and check, which runs whenever the options are built, from the command line or in Python. The
command line is built from them (`EmbedOptions.add_arguments`), `embed_file` takes them, and those that the vectors
depend on are what `OUT.partial/settings.json` records of them (`EmbedOptions.recorded`), which `--resume` compares.
Nothing here loads torch or numpy: `--help` answers at once.

A new option is one declaration here (with its check, if it has one) and its behaviour where the run uses it. What a
model's backend serves of --layers, --dtype and --device is checked when the run starts (`request.check_request`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from elmo_transformers.common.cli_options import CommandOptions, option, positional
from elmo_transformers.common.disk_space import NO_SPACE_CHECK
from elmo_transformers.common.errors import EmbedError

__all__ = [
    "COMPRESSIONS",
    "COMPUTE_DTYPES",
    "FORMATS",
    "LAYER_CHOICES",
    "STORAGE_DTYPES",
    "WORKERS_FROM_WORDS",
    "EmbedOptions",
]

LAYER_CHOICES = ("all", "top", "average", "mix")
# The dtypes the model computes in (--dtype; torch's names): `elmo_transformers.inference.torch_runner.TORCH_DTYPES`
# maps them to torch's dtypes.
COMPUTE_DTYPES = ("float32", "bfloat16", "float16")
# The dtypes the vectors are stored in (`elmo_transformers.inference.storage`); the first is the default.
STORAGE_DTYPES = ("float32", "float16")
# HDF5's filters that every h5py reads without plugins; "none" (the default) stores the datasets contiguous.
COMPRESSIONS = ("none", "gzip", "lzf")
# The output formats: one hdf5 file in AllenNLP's layout, or a folder that `datasets.load_from_disk` opens.
FORMATS = ("hdf5", "datasets")


def _option(default: Any, help: str, *, recorded: bool = False, **declaration: Any) -> Any:
    """An option (`common.cli_options.option`). `recorded`: the vectors depend on it, so `settings.json` records it
    and `--resume` compares it."""
    return option(default, help, metadata={"recorded": recorded}, **declaration)


def _size_check(name: str) -> Callable[[EmbedOptions], None]:
    """The check of the size `name` (batch_size, max_words): at least 1, in the message the two sizes share."""

    def check(options: EmbedOptions) -> None:
        if getattr(options, name) < 1:
            raise EmbedError(
                f"--batch-size and --max-words must be at least 1, got {options.batch_size} and {options.max_words}"
            )

    return check


# The input size (whitespace-separated words) from which the default runs a worker a core (`inference.workers`), by
# backend: where 2 workers of one thread beat one process of 2 threads in wall time, start-up included, with the
# bundled model and its ONNX export on a 2-core x86 CPU, by benchmarks/speed/bench_embed_workers.py (the commands and
# every row: docs/elmo-embed.md#workers-on-a-cpu; lines of 5-40 words; seconds, 1 process vs workers). PyTorch, on a
# machine shared with other jobs: 66,321 words 13.3 vs 17.9; 132,991 words 30.1 vs 27.4. A graph, whose workers meet
# without torch (`common.socket_group`), on a quiet machine: 5,514 words 1.1 vs 1.4; 22,515 words 2.3 vs 2.2; 33,595
# words 3.2 vs 2.8; 66,321 words 5.5 vs 4.7. A worker's start-up costs seconds (an interpreter, its imports, the
# model, the group), which the workers, 1.1-1.6x faster, win back only on a long input.
WORKERS_FROM_WORDS = {"graph": 30_000, "pytorch": 120_000}


def _workers_at_least_one(options: EmbedOptions) -> None:
    if options.workers is not None and options.workers < 1:
        raise EmbedError(f"--workers must be at least 1, got {options.workers} (1: one process on every core)")


@dataclass(frozen=True)
class EmbedOptions(CommandOptions, error=EmbedError):
    """One `elmo-embed` run's options, in the order `--help` lists them; `input` and `output` may be given as
    strings. `EmbedOptions("in.txt", "out.hdf5", layers="top")` is `elmo-embed in.txt out.hdf5 --layers top`."""

    input: Path = positional("IN", "text file, one sentence per line (UTF-8, may be gzip-compressed; not a pipe)")
    output: Path = positional("OUT", "hdf5 file to create (with --format datasets: a folder)")
    model: str | None = _option(None, "model folder written by elmo-convert", metavar="DIR")
    layers: str = _option(
        "all",
        "all: every layer, (L+1, words, 2P); top: the top biLSTM layer; average: the mean of the L+1 layers;"
        " mix: the learned mix of a task head fine-tuned with this package (default %(default)s)",
        choices=LAYER_CHOICES,
        recorded=True,
    )
    # Not recorded: a run out of memory resumes with a smaller batch size, as its error says. The vectors owe it only
    # their last bits (the native kernels' blocking follows a batch's shape): tests/inference/test_embed_batch_size.py.
    batch_size: int = _option(
        64, "sentences per batch (default %(default)s)", metavar="N", check=_size_check("batch_size")
    )
    max_words: int = _option(
        1000,
        "embed longer lines in pieces of at most N words (default %(default)s)",
        metavar="N",
        check=_size_check("max_words"),
        recorded=True,
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
    # Not recorded: a worker's vectors are those of one process on one thread (`inference.workers`).
    workers: int | None = _option(
        None,
        "CPU processes of one thread each (default: one a core for an input of at least"
        f" {WORKERS_FROM_WORDS['graph']:,} words on an ONNX folder, {WORKERS_FROM_WORDS['pytorch']:,} on PyTorch; 1:"
        " one process on every core)",
        metavar="N",
        type=int,
        check=_workers_at_least_one,
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
        super().__post_init__()

    def check_together(self) -> None:
        """Refuse, in one `EmbedError` line, options that cannot run together: checked when the run starts, before
        anything is read or written (each option's own checks ran when the options were built)."""
        if self.resume and self.overwrite:
            raise EmbedError(
                "--resume and --overwrite contradict each other: --resume continues OUT.partial's finished lines,"
                " --overwrite starts over without them; pass one of them"
            )

    def recorded(self) -> dict[str, Any]:
        """The options that the vectors depend on, by name (what `settings.json` records of them)."""
        fields = dataclasses.fields(self)
        return {option.name: getattr(self, option.name) for option in fields if option.metadata.get("recorded")}
