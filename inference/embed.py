"""The `elmo-embed` command: ELMo vectors of every line of a text file, in AllenNLP's `elmo` command layout.

The options are `elmo_transformers.inference.options.EmbedOptions`, which builds the command line; the run itself is
`elmo_transformers.inference.run.embed_file`, imported once the arguments are parsed: `--help` and argument
errors come without loading torch and transformers, and a run on a graph folder (one process) without them at all.
"""

from __future__ import annotations

import argparse
import functools
import sys
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType

from elmo_transformers.common.atomic_output import partial_path
from elmo_transformers.common.errors import ElmoError, EmbedError, report_error, report_interruption
from elmo_transformers.common.extras import missing_dependencies_refused, require_extra
from elmo_transformers.common.processes import take_held_interrupts, worker_number

from .options import EmbedOptions
from .workers import plan_workers, run_workers

__all__ = ["build_parser", "main"]

_EXAMPLES = """examples:
  elmo-embed sentences.txt sentences.hdf5 --model elmo-original
  elmo-embed raw.txt raw.hdf5 --model elmo-original --tokenize --layers top --device cuda --dtype bfloat16
  elmo-embed big.txt big.hdf5 --model elmo-original --layers top --storage-dtype float16   # 2 KB a word, not 12
  elmo-embed corpus.txt corpus.hdf5 --model elmo-original --resume   # continue an interrupted run
  elmo-embed corpus.txt vectors --model elmo-original --format datasets   # datasets.load_from_disk("vectors")
  elmo-embed corpus.txt corpus.hdf5 --model elmo-original --workers 1   # one process on every core (on a CPU the
                                      # default is a worker a core, of one thread each, for a long input)
  accelerate launch --num_processes 4 -m elmo_transformers.inference.embed corpus.txt corpus.hdf5 --model elmo-original
                                      # 4 processes (a GPU each), on one machine or several: the file of one process

IN is a regular file of UTF-8 text (plain or gzip-compressed, whatever its name), one sentence per line: words
separated by whitespace, or raw text with --tokenize. OUT has the layout of AllenNLP's `allennlp elmo` command:
dataset "0" holds the first line's vectors, (L+1, words, 2P) with --layers all, (words, 2P) otherwise, and
"sentence_to_index" one JSON string mapping each line's text to its dataset name:

  import h5py, json
  with h5py.File("sentences.hdf5") as file:
      vectors = file["0"][()]
      index = json.loads(file["sentence_to_index"][0])
      words = json.loads(file["0"].attrs["words"])  # with --tokenize

The rest is in docs/elmo-embed.md of the package's repository: the encodings refused (each with the command that
converts it), bad, empty and long lines, the file's attributes, --resume after an interruption, the disk-space
check, processes and GPUs.
"""


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
        take_held_interrupts()  # (a worker, which its command started with Ctrl-C held back: `interrupts_held`)
        options = EmbedOptions.from_arguments(build_parser().parse_args(argv))  # (each option's own checks)
        workers = plan_workers(options)
    except ElmoError as error:
        return report_error("elmo-embed", error)
    except KeyboardInterrupt:  # (while counting the input's words, or looking for a GPU)
        return report_interruption("elmo-embed", "no line was stored yet") if worker_number() in (None, 0) else 130
    if workers.count > 1:
        kept = functools.partial(_interrupted_state, options.output, complete=False)
        return run_workers(workers, argv, kept)
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
    from elmo_transformers.common.processes import is_main_process, leave_process_group, peer_stopped

    from .segment_store import OutputComplete
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
        # Among elmo-embed's own workers, a stopped worker says why, or the command does for a killed one: that
        # another stopped goes unsaid (said first, it would name an error not yet printed).
        if worker_number() is not None and peer_stopped(error):
            return 2
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
