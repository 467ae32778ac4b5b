"""One `elmo-embed` run (`embed_file`): ELMo vectors of every line of a text file, in AllenNLP's `elmo` layout.

The input is read in windows of a few thousand lines; each window is sorted by length into batches, embedded
and written, so memory does not grow with the corpus (except the "sentence_to_index" mapping, which holds
every distinct line, as AllenNLP's does: `--forget-sentences` leaves it out). The command line is
`elmo_transformers.inference.embed`, which imports this module only once its arguments are parsed. torch and
accelerate are imported only where PyTorch runs the model, or several processes run (`accelerate launch`): a run of
one process on a graph goes without them (and without transformers).

A run reads as check, plan, pass, finish: `request.check_request` refuses what cannot start (among the rest, what the
backend of the model folder, resolved once, does not serve); `plan.plan_run` loads the model and measures the input (a
`RunPlan`); `embedding_pass.EmbeddingPass` embeds the lines not yet stored into `OUT.partial`; `_finish` makes the
output of the stored lines.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence
from contextlib import ExitStack
from pathlib import Path

import numpy as np

from elmo_transformers.common.errors import EmbedError
from elmo_transformers.common.output_lock import output_lock
from elmo_transformers.common.processes import on_main_process

from .embedding_pass import EmbeddingPass
from .hdf5_output import check_output, write_hdf5
from .limits import EmbedLimits
from .options import EmbedOptions
from .plan import RunPlan, plan_run
from .request import ONNX, EmbedRequest, check_request
from .segment_store import OutputComplete, SegmentStore
from .sharding import run_processes
from .summary import EmbedSummary

__all__ = ["embed_file"]


def embed_file(
    options: EmbedOptions,
    *,
    overlap: bool | None = None,
    command: Sequence[str] | None = None,
    limits: EmbedLimits | None = None,
) -> EmbedSummary:
    """Embed every line of `options.input` into `options.output` (see `EmbedOptions`, the module docstring and
    `--help`), as `elmo-embed` does.

    Dataset str(i) holds line i's vectors; empty lines get a dataset of 0 words, undecodable bytes are embedded as
    U+FFFD, lines of more than `max_words` words are embedded in pieces, concatenated, and a value that the stored
    dtype would hold as inf is refused. The file is built in the folder `OUT.partial` and merged into `OUT` when
    complete (`elmo_transformers.inference.segment_store`); with `resume` an existing `OUT.partial` started with the
    same `EmbedSettings` (the same input content, wherever it lies now) keeps its finished lines and only the others
    are embedded, in the batches of an uninterrupted run, so that the file is the same. With `overlap` (by default
    on a GPU) a thread reads and tokenizes the next batches and another writes the finished ones while the device
    computes: the file is the same, written in the same order. `command` (the command line, by default this
    process's) is recorded in the file and shown in the advice to resume. Under `accelerate launch` the processes
    share the batches out (`sharding`), and the file is that of one process. `limits` are the sizes the run works in
    (by default `EmbedLimits()`, as the command line's): its windows of the input, its segments, chunks and shards.
    """
    command = [Path(sys.argv[0]).name, *sys.argv[1:]] if command is None else list(command)
    request = EmbedRequest.of(options)
    processes = run_processes(options.device, graph=request.backend is ONNX)
    device = check_request(request, processes)
    published = False  # the output, by this process
    try:
        # The main process holds the lock from before anything is looked at or written to the end: a second writer
        # stops here, touching nothing, and the checks below see the state that no running process is changing.
        with ExitStack() as held:
            on_main_process(lambda: _claim_output(held, options), error=EmbedError)
            plan = plan_run(request, device, processes, command, overlap, limits or EmbedLimits())
            started = time.perf_counter()
            file = plan.open_partial()
            summary = EmbedSummary(layout=plan.layout())
            with plan.write_failures(file), file:
                sentence_to_index = _embed_lines(plan, file, summary)
                _finish(plan, file, summary, sentence_to_index)
                published = processes.is_main_process
    except KeyboardInterrupt as interrupt:
        if published and not isinstance(interrupt, OutputComplete):  # (as the lock was let go)
            raise OutputComplete from None
        raise
    summary.seconds = time.perf_counter() - started
    return summary


def _claim_output(held: ExitStack, options: EmbedOptions) -> None:
    """Take the output's lock (held until `held` closes) and check that the run may write it."""
    held.enter_context(output_lock(options.output, error=EmbedError))
    check_output(options.output, resume=options.resume, overwrite=options.overwrite)


def _embed_lines(plan: RunPlan, file: SegmentStore, summary: EmbedSummary) -> dict[str, str] | None:
    """Embed this process's share of the lines not yet stored into `file` and store them; returns
    "sentence_to_index" (None unless `plan.keeps_sentences`). A failure of this process's own work is a
    `ProcessFailure`, which this process reports."""
    embedding = EmbeddingPass(plan, file, summary)
    with plan.embedding_failures(summary):
        sentence_to_index = embedding.embed_lines()
    file.store_open_segment()
    return sentence_to_index


def _finish(plan: RunPlan, file: SegmentStore, summary: EmbedSummary, sentence_to_index: dict[str, str] | None) -> None:
    """Once every process's lines are stored, make the output of them (a process that failed ended the run: the
    launcher stops the others, and the main one never merges)."""
    plan.wait_for_everyone()
    options = plan.options
    if options.output_format == "datasets":
        from .datasets_output import write_dataset  # (datasets and pyarrow: seconds of imports)

        write_dataset(
            file,
            summary.lines,
            dtype=np.dtype(options.storage_dtype),
            width=plan.embedder.width,
            layers=options.layers == "all",
            words=options.tokenize,
            process=plan.processes.process_index,
            processes=plan.processes.num_processes,
            wait_for_everyone=plan.wait_for_everyone,
            shard_bytes=plan.limits.shard_bytes,
        )
    elif plan.processes.is_main_process:
        write_hdf5(file, summary.lines, sentence_to_index)
