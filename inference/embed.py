"""The `elmo-embed` command: ELMo vectors of every line of a text file, in AllenNLP's `elmo` command layout.

The options are `elmo_transformers.inference.options.EmbedOptions`, which builds the command line; the run itself is
`elmo_transformers.inference.run.embed_file`, imported once the arguments are parsed: `--help` and argument
errors come without loading torch and transformers, and a run on a graph folder (one process) without them at all.
"""

from __future__ import annotations

import argparse
import sys
import textwrap
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType

from elmo_transformers.common.atomic_output import partial_path
from elmo_transformers.common.errors import ElmoError, EmbedError, report_error, report_interruption
from elmo_transformers.common.extras import missing_dependencies_refused, require_extra
from elmo_transformers.common.processes import worker_number

from .options import EmbedOptions
from .output_attributes import help_sentence
from .workers import run_workers, worker_count

__all__ = ["build_parser", "main"]

# The columns of the epilog's prose, to which the sentence naming the output's attributes is wrapped.
_PROSE_WIDTH = 116
_EXAMPLES = (
    """examples:
  elmo-embed sentences.txt sentences.hdf5 --model elmo-original
  elmo-embed raw.txt raw.hdf5 --model elmo-original --tokenize --layers top --device cuda --dtype bfloat16
  elmo-embed big.txt big.hdf5 --model elmo-original --layers top --storage-dtype float16   # 2 KB a word, not 12
  elmo-embed corpus.txt corpus.hdf5 --model elmo-original --resume   # continue an interrupted run
  elmo-embed corpus.txt vectors --model elmo-original --format datasets   # datasets.load_from_disk("vectors")
  elmo-embed corpus.txt corpus.hdf5 --model elmo-original --workers 1   # one process on every core (on a CPU the
                                      # default is a worker a core, of one thread each, for a long input)
  accelerate launch --num_processes 4 -m elmo_transformers.inference.embed corpus.txt corpus.hdf5 --model elmo-original
                                      # 4 processes (a GPU each), on one machine or several: the file of one process

The input is a regular file (not standard input, a pipe or a device: it is read more than once) holding one
sentence per line of UTF-8 text (or gzip-compressed UTF-8 text, whatever its name): whitespace-separated words, or
raw text with --tokenize, which splits it PTB-like, never inside a character (accents, emoji sequences and flags
stay whole) and normalises it to Unicode's NFC first, so that "e" + a combining accent and the precomposed letter
are one word; no word holds an invisible character (a control character or a zero-width space separates words,
other format characters, such as the bidirectional marks, are dropped). An input that is mostly not text (binary
data), or in another encoding than UTF-8 (UTF-16 or UTF-32 with a byte order mark; UTF-16 without one, whose 2-byte
units hold a 00 byte on one side at least half of the time; CESU-8; Latin-1 or cp1252: its first 64 KB hold bytes
that are not UTF-8 and no UTF-8 character beyond ASCII), is refused before anything is written, with the command
that converts it; a UTF-8 file with a few bad bytes is embedded with U+FFFD for them, with a warning. The output
has the layout of AllenNLP's `allennlp elmo` command: dataset "0" holds the first line's
vectors, of shape (L+1, words, 2P) with --layers all (the token layer and the model's L biLSTM layers, each word's
vector [forward; backward] of width 2P) or (words, 2P) otherwise, and "sentence_to_index" holds one JSON string
mapping each line's text to its dataset name. The vectors are float32, or float16 with --storage-dtype float16
(half the size; a value beyond float16's range, 65504, is refused rather than stored as inf), uncompressed, or
compressed with --compression gzip or lzf (HDF5's filters, which h5py reads transparently: readers see the same
names, shapes and values). With --tokenize each line's dataset also has the attribute "words", a JSON list of the
"""
    + textwrap.fill("words its vectors stand for. " + help_sentence(), _PROSE_WIDTH)
    + """
  import h5py, json
  with h5py.File("sentences.hdf5") as file:
      vectors = file["0"][()]
      index = json.loads(file["sentence_to_index"][0])
      words = json.loads(file["0"].attrs["words"])  # with --tokenize

Unlike AllenNLP's command, elmo-embed does not stop at bad lines: an empty line gets a dataset of 0 words,
a line that is not UTF-8 is embedded with U+FFFD for its bad bytes (with a warning), and a line of more
than --max-words words is embedded in pieces of at most that many words, concatenated. The summary counts
and names them. Each sentence is embedded from a fresh LSTM state (AllenNLP carried the state across
batches, so its vectors depended on the batch order).

The output is built in the folder OUT.partial, in segment files of about 64 MB, each written under a
temporary name and renamed when complete (its name records its sha256), then merged into OUT. After an
interruption (Ctrl-C, a killed process, a full disk), the same command with --resume keeps every finished
line and embeds the rest in the batches of an uninterrupted run, so the file is the same. The input is recognised by its
content (sha256), so it may have moved, but not changed. Each segment's checksum is compared on resuming (a
damaged segment is removed, with a warning, and its lines embedded again) and when the merge reads it (a damaged
one stops the run, naming it). The weights file is compared with the sha256 that elmo-convert recorded in the
model folder's SHA256SUMS, where there is one. A second run writing the same OUT stops at once, naming the
running one.

Before starting, elmo-embed counts the input's words and refuses to start when the disk clearly cannot hold
the output at its peak, the end of the merge: the segments and the merged file, about twice the vectors
(words x layers x width x 4 bytes, 2 with float16, counted uncompressed) (--no-space-check skips this).
"""
)


def build_parser() -> argparse.ArgumentParser:
    """elmo-embed's command line: `EmbedOptions`, with this description and these examples."""
    parser = argparse.ArgumentParser(
        prog="elmo-embed",
        allow_abbrev=False,
        description="ELMo vectors of every line of a text file, written to hdf5 in AllenNLP's `elmo` layout.",
        epilog=_EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    EmbedOptions.add_arguments(parser)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    try:
        options = EmbedOptions.from_arguments(build_parser().parse_args(argv))  # (each option's own checks)
        workers = worker_count(options)
    except ElmoError as error:
        return report_error("elmo-embed", error)
    except KeyboardInterrupt:  # (while counting the input's words, or looking for a GPU)
        return report_interruption("elmo-embed", "no line was stored yet")
    if workers > 1:
        return run_workers(workers, argv, lambda: _interrupted_state(options.output, complete=False))
    try:
        run = _import_the_run(options)
    except ElmoError as error:  # (in every worker alike: the first says it)
        return report_error("elmo-embed", error) if worker_number() in (None, 0) else 2
    except KeyboardInterrupt:  # in the seconds torch and transformers take to import
        kept = _interrupted_state(options.output, complete=False)
        return report_interruption("elmo-embed", kept) if worker_number() in (None, 0) else 130
    return _run(run, options, argv)


def _import_the_run(options: EmbedOptions) -> ModuleType:
    """The extra `options` need checked, then the heavy imports and the native libraries' settings; the module
    that runs the embedding (`run`)."""
    if options.output_format == "datasets":
        require_extra("datasets", "--format datasets", EmbedError)
    with missing_dependencies_refused(EmbedError):  # (an install with --no-deps)
        from modeling_elmo.native_elmo import set_native_libraries

        set_native_libraries()  # before the first kernel
        from . import run

    return run


def _run(run: ModuleType, options: EmbedOptions, argv: list[str]) -> int:
    """Embed the file as `options` say, with the `run` module; the exit status, each failure in one line."""
    from elmo_transformers.common.processes import is_main_process, leave_process_group

    from .hdf5_output import OutputComplete
    from .sharding import ProcessFailure

    complete = False  # the output is published
    try:
        with missing_dependencies_refused(EmbedError):  # (a module imported as the run needs it)
            summary = run.embed_file(options, command=["elmo-embed", *argv])
        complete = True
        if is_main_process():
            print(summary.describe(options.output, options.max_words))
        leave_process_group()
    except ElmoError as error:
        # Under `accelerate launch` an error that every process raised alike is printed once, by the main process.
        if isinstance(error, ProcessFailure) or is_main_process():
            return report_error("elmo-embed", error)
        return 2
    except KeyboardInterrupt as interrupt:
        if not _reports_interruption():
            return 130
        complete = complete or isinstance(interrupt, OutputComplete)
        return report_interruption("elmo-embed", _interrupted_state(options.output, complete))
    return 0


def _reports_interruption() -> bool:
    """Whether this process prints the run's interruption: the main one; among elmo-embed's workers the first, known
    by its number (the Ctrl-C may have cut short the import of accelerate, which tells the main process)."""
    from elmo_transformers.common.processes import is_main_process

    number = worker_number()
    return number == 0 if number is not None else is_main_process()


def _interrupted_state(output: Path, complete: bool) -> str:
    """What an interrupted run leaves: the complete output (`complete`: published by this run, its OUT.partial
    removed), or OUT.partial to resume, or nothing yet."""
    partial = partial_path(output)
    if complete:
        return f"{output} is complete (every line is written; {partial.name} is removed): nothing is lost"
    if partial.exists():
        return f"{partial} keeps the finished lines; rerun with --resume"
    return "no line was stored yet"


if __name__ == "__main__":
    sys.exit(main())
