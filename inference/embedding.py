"""One `elmo-embed` run (`embed_file`): ELMo vectors of every line of a text file, in AllenNLP's `elmo` layout.

The input is read in windows of a few thousand lines; each window is sorted by length into batches, embedded
and written, so memory does not grow with the corpus (except the "sentence_to_index" mapping, which holds
every distinct line, as AllenNLP's does: `--forget-sentences` leaves it out). The command line is
`elmo_transformers.inference.embed`, which imports this module only once its arguments are parsed. torch and
accelerate are imported only where PyTorch runs the model, or several processes run (`accelerate launch`): a run of
one process on a graph goes without them (and without transformers).

A run reads as plan, run, finish: `_plan` checks the request, loads the model and measures the input
(`_PreparedRun`); `_embed_lines` embeds the lines not yet stored into `OUT.partial` (`_EmbeddingPass`); `_finish`
makes the output of the stored lines.
"""

from __future__ import annotations

import json
import shlex
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
from tqdm.auto import tqdm

from elmo_transformers.common.atomic_output import partial_path
from elmo_transformers.common.disk_space import check_free_space, is_disk_full
from elmo_transformers.common.errors import EmbedError, first_line
from elmo_transformers.common.output_lock import output_lock
from elmo_transformers.common.processes import OneProcess, launched, on_main_process, wait_for_everyone

from .batch_embedder import BatchEmbedder, PendingVectors, PreparedBatch, recorded_sha256, resolve_model
from .batching import Piece, batch_groups, bucketed_batches
from .hdf5_output import (
    DamagedSegment,
    EmbeddingFile,
    OutputComplete,
    WriteError,
    check_output,
    check_output_path,
    stored_bytes,
)
from .lines import check_input, content_sha256, read_lines
from .onnx_embedder import holds_onnx_graph, open_embedder
from .options import EmbedOptions
from .pipeline import run_stages
from .settings import EmbedSettings
from .storage import Storage

if TYPE_CHECKING:
    from accelerate import PartialState

__all__ = ["EmbedSummary", "OutputComplete", "ProcessFailure", "embed_file", "process_device"]

# A window ends at this many lines to embed, or at this many words, whichever comes first.
WINDOW_LINES = 4096
WINDOW_WORDS = 200_000
# Lines with invalid UTF-8 get a warning each, up to this many; the summary counts them all.
MAX_WARNINGS = 10
# The summary names at most this many lines of each kind.
LISTED_LINES = 20
# The space check's estimate of an hdf5 dataset's own bytes (its header: ~390 measured), and of a line's entry in
# sentence_to_index beyond its text (quotes, the index, separators).
LINE_BYTES = 400
LINE_INDEX_BYTES = 12


class ProcessFailure(EmbedError):
    """A failure in one process's own part of the run (its batches, its writes), which that process reports; an
    error that every process of `accelerate launch` raises alike (bad input, an output in the way) is reported by
    the main process alone."""


@dataclass
class LineSet:
    """How many lines have some property (`total`), and the indices of the first `LISTED_LINES` of them."""

    total: int = 0
    first: list[int] = field(default_factory=list)

    def add(self, index: int) -> None:
        self.total += 1
        if len(self.first) < LISTED_LINES:
            self.first.append(index)

    def describe(self) -> str:
        """E.g. "2 (datasets 4, 17)"."""
        if not self.total:
            return "0"
        more = f", and {self.total - len(self.first):,} more" if self.total > len(self.first) else ""
        return f"{self.total:,} (datasets {', '.join(map(str, self.first))}{more})"


@dataclass
class EmbedSummary:
    """What a run did. `layout` says what each line became; `words` counts every line's words; `embedded_words`
    those this run computed."""

    layout: str
    lines: int = 0
    words: int = 0
    embedded_words: int = 0
    resumed_lines: int = 0
    empty: LineSet = field(default_factory=LineSet)
    replaced: LineSet = field(default_factory=LineSet)
    split: LineSet = field(default_factory=LineSet)
    seconds: float = 0.0

    def describe(self, output: Path, max_words: int) -> str:
        """The summary printed at the end of a run."""
        rate = self.embedded_words / self.seconds if self.seconds else 0.0
        lines = [
            f"Wrote {output}: {self.lines:,} lines, {self.words:,} words, {self.layout}",
            f"  empty lines (written with 0 words): {self.empty.describe()}",
            f"  lines with invalid UTF-8 (embedded with U+FFFD for the bad bytes): {self.replaced.describe()}",
            f"  lines over --max-words {max_words} (embedded in pieces, concatenated): {self.split.describe()}",
        ]
        if self.resumed_lines:
            lines.append(f"  resumed: {self.resumed_lines:,} lines were already in {partial_path(output).name}")
        lines.append(f"  {self.embedded_words:,} words embedded in {self.seconds:.1f} s: {rate:,.0f} words/s")
        return "\n".join(lines)


def embed_file(
    options: EmbedOptions, *, overlap: bool | None = None, command: Sequence[str] | None = None
) -> EmbedSummary:
    """Embed every line of `options.input` into `options.output` (see `EmbedOptions`, the module docstring and
    `--help`), as `elmo-embed` does.

    Dataset str(i) holds line i's vectors; empty lines get a dataset of 0 words, undecodable bytes are embedded as
    U+FFFD, lines of more than `max_words` words are embedded in pieces, concatenated, and a value that the stored
    dtype would hold as inf is refused. The file is built in the folder `OUT.partial` and merged into `OUT` when
    complete (`elmo_transformers.inference.hdf5_output`); with `resume` an existing `OUT.partial` started with the
    same `EmbedSettings` (the same input content, wherever it lies now) keeps its finished lines and only the others
    are embedded, in the batches of an uninterrupted run, so that the file is the same. With `overlap` (by default
    on a GPU) a thread reads and tokenizes the next batches and another writes the finished ones while the device
    computes: the file is the same, written in the same order. `command` (the command line, by default this
    process's) is recorded in the file and shown in the advice to resume. Under `accelerate launch` the processes
    share the batches out (`_EmbeddingPass`), and the file is that of one process.
    """
    command = [Path(sys.argv[0]).name, *sys.argv[1:]] if command is None else list(command)
    processes = _run_processes(options, graph=holds_onnx_graph(resolve_model(options.model)))
    model = _check_request(options)
    device = process_device(options.device, processes)
    published = False  # the output, by this process
    try:
        # The main process holds the lock from before anything is looked at or written to the end: a second writer
        # stops here, touching nothing, and the checks below see the state that no running process is changing.
        with ExitStack() as held:
            on_main_process(lambda: _claim_output(held, options), error=EmbedError)
            plan = _plan(options, model, device, processes, command, overlap)
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


def _run_processes(options: EmbedOptions, *, graph: bool) -> PartialState | OneProcess:
    """The processes of this run: one, or those of `accelerate launch`, which without a GPU (or with --device cpu)
    join one CPU group (gloo). A run of one process on a graph goes without accelerate and torch (`OneProcess`)."""
    if graph and not launched():
        return OneProcess()
    import torch
    from accelerate import PartialState

    return PartialState(cpu=options.device == "cpu" or not torch.accelerator.is_available())


def process_device(device: str | None, processes: PartialState | OneProcess) -> str | None:
    """The device of this process: `device`, or with several processes (`accelerate launch`) each its own,
    accelerate's (cuda:LOCAL_RANK where there are GPUs)."""
    if processes.num_processes == 1 or device == "cpu":
        return device
    if device in (None, "cuda"):
        return str(processes.device)
    raise EmbedError(
        f"--device {device}: with {processes.num_processes} processes each uses a device of its own: pass --device"
        " cuda (or cpu), or no --device"
    )


def _check_request(options: EmbedOptions) -> str:
    """Refuse, in one line, a run that cannot start: its options together (each alone was checked as they were
    built), its input, its output path, its model; returns the model (a folder, or a Hub name)."""
    options.check_together()
    check_input(options.input)
    check_output_path(options.output, options.input, folder=options.output_format == "datasets")
    model = resolve_model(options.model)
    _check_graph_device(model, options.device)
    return model


def _check_graph_device(model: str, device: str | None) -> None:
    """Refuse a --device other than the CPU for a folder holding a graph, which onnxruntime runs on CPU here (its
    CPU provider), rather than ignore it."""
    if device is not None and device.split(":")[0] != "cpu" and holds_onnx_graph(model):
        raise EmbedError(
            f"--device {device}: {model} holds an ONNX graph, which elmo-embed runs on CPU (onnxruntime's CPU"
            " provider): pass --device cpu, or no --device"
        )


def _claim_output(held: ExitStack, options: EmbedOptions) -> None:
    """Take the output's lock (held until `held` closes) and check that the run may write it."""
    held.enter_context(output_lock(options.output, error=EmbedError))
    check_output(options.output, resume=options.resume, overwrite=options.overwrite)


def _plan(
    options: EmbedOptions,
    model: str,
    device: str | None,
    processes: PartialState | OneProcess,
    command: list[str],
    overlap: bool | None,
) -> _PreparedRun:
    """Load the model (ONNX or PyTorch) on `device`, take the run's settings and the input's size, and refuse a run
    that the disk clearly cannot hold."""
    embedder = open_embedder(model, layers=options.layers, compute_dtype=options.compute_dtype, device=device)
    _warn_slow_compute_dtype(embedder, options.compute_dtype, processes)
    settings = EmbedSettings(
        input_sha256=content_sha256(options.input),
        model=str(Path(model).resolve()) if Path(model).exists() else model,
        backend=embedder.backend,
        model_sha256=_weights_sha256(embedder.weights_file),
        options=options,
    )
    # One pass before the run: the line count, for the advice a failure gives, and with the space check the words as
    # the run splits them (with --tokenize the tokenizer's, the costly part: left out without the check).
    count_words = options.space_check and processes.is_main_process
    split_words = _word_splitter(embedder, options) if count_words else None
    progress = processes.is_main_process
    size = _InputSize.of(options.input, split_words, words_json=options.tokenize, progress=progress)
    overlap = embedder.device_type == "cuda" if overlap is None else overlap
    plan = _PreparedRun(settings, command, processes, embedder, size, overlap)
    if options.space_check:
        plan.check_free_space()
    return plan


def _weights_sha256(weights: Path | None) -> str:
    """The sha256 of the weights file the backend reads ("" for a Hub model), refused in one line when the folder's
    SHA256SUMS (`elmo-convert` records it) says the file was another: a flipped byte that loads and computes finite,
    wrong vectors."""
    if weights is None or not weights.is_file():
        return ""
    return recorded_sha256(weights)


def _warn_slow_compute_dtype(embedder: BatchEmbedder, compute_dtype: str, processes: PartialState | OneProcess) -> None:
    if not (processes.is_main_process and embedder.device_type == "cpu" and compute_dtype != "float32"):
        return
    from modeling_elmo.onednn_elmo import onednn_available  # (torch: PyTorch computes, in another dtype)

    from .embedder import TORCH_DTYPES

    if not onednn_available(TORCH_DTYPES[compute_dtype]):
        print(
            f"elmo-embed: warning: this CPU has no fast {compute_dtype} matrix products (no oneDNN {compute_dtype}"
            " kernels for it): float32 runs several times faster here",
            file=sys.stderr,
        )


def _word_splitter(embedder: BatchEmbedder, options: EmbedOptions) -> Callable[[str], list[str]]:
    """How the run splits a line into words: the tokenizer's split with --tokenize, else at whitespace."""
    return embedder.split_words if options.tokenize else str.split


@dataclass
class _PreparedRun:
    """A run once its checks have passed (the plan): its `settings` (its options among them), the command line, its
    processes, the loaded model, the input's size (for the space check, and the advice a failure gives) and whether
    reading, the model and writing `overlap`."""

    settings: EmbedSettings
    command: list[str]
    processes: PartialState | OneProcess
    embedder: BatchEmbedder
    size: _InputSize
    overlap: bool

    @property
    def options(self) -> EmbedOptions:
        return self.settings.options

    @property
    def partial(self) -> Path:
        return partial_path(self.options.output)

    @property
    def keeps_sentences(self) -> bool:
        """Whether this process keeps "sentence_to_index" (the main process, unless --forget-sentences)."""
        return self.processes.is_main_process and not self.options.forget_sentences

    def layout(self) -> str:
        """What each line becomes, for the summary."""
        embedder = self.embedder
        all_layers = self.options.layers == "all"
        shape = f"({embedder.num_layers}, words, {embedder.width})" if all_layers else f"(words, {embedder.width})"
        if self.options.output_format == "hdf5":
            return f"one dataset {shape} per line"
        return f"a row per line, its vectors {shape}"

    def wait_for_everyone(self) -> None:
        """Wait for every process of the run; a process that stopped ends the wait in one line."""
        wait_for_everyone(error=EmbedError, advice=f": {self.partial} keeps the finished lines; rerun with --resume")

    def check_free_space(self) -> None:
        """Refuse (on the main process) a run that the disk clearly cannot hold, counting what a resumed run stored."""
        options = self.options
        keep_sentences = not options.forget_sentences
        needed = self.size.output_bytes(self.embedder, self.settings.storage, keep_sentences=keep_sentences)
        needed -= stored_bytes(options.output, resume=options.resume)
        what = f"the vectors of {self.size.words:,} words (stored in segments, then merged into one file)"
        on_main_process(lambda: check_free_space(options.output, needed, what=what, error=EmbedError), error=EmbedError)

    def open_partial(self) -> EmbeddingFile:
        """`OUT.partial`, started (or checked and continued) by the main process, then joined by every other one. No
        process writes before all have read which lines are stored: they share the batches out by that."""
        opened: list[EmbeddingFile] = []
        on_main_process(lambda: opened.append(self._open_file(join=False)), error=EmbedError)
        file = opened[0] if self.processes.is_main_process else self._open_file(join=True)
        self.wait_for_everyone()
        return file

    def _open_file(self, *, join: bool) -> EmbeddingFile:
        attributes = self.settings.attributes(self.command)
        try:
            return EmbeddingFile(
                self.options.output,
                settings=self.settings,
                attributes=attributes,
                shape=self.embedder.shape,
                resume=self.options.resume,
                join=join,
            )
        except WriteError as error:
            raise EmbedError(self.write_failure(error.error, stored=0)) from None

    @contextmanager
    def write_failures(self, file: EmbeddingFile) -> Iterator[None]:
        """Turn a failed write into `file` into this process's one line, with what is safe and how to go on; and so
        a segment that the merge found damaged."""
        try:
            yield
        except WriteError as error:
            raise ProcessFailure(self.write_failure(error.error, stored=len(file.finished_lines()))) from None
        except DamagedSegment as error:
            raise ProcessFailure(
                f"{error}: rerun with --resume, which removes it and embeds its lines again: {self.resume_command()}"
            ) from None

    def resume_command(self) -> str:
        """The command line that resumes this run."""
        return shlex.join(self.command if "--resume" in self.command else [*self.command, "--resume"])

    def write_failure(self, error: BaseException, *, stored: int) -> str:
        """The one line that ends a run whose write into `OUT.partial` failed: what failed, what is safe, and how to
        go on."""
        if is_disk_full(error):
            problem, advice = "the disk is full (No space left on device)", "free some space and rerun"
        else:
            problem, advice = first_line(error), "rerun"
        return (
            f"{self.partial}: {problem}: {stored:,} of {self.size.lines:,} lines are safely stored; {advice} with"
            f" --resume: {self.resume_command()}"
        )


def _embed_lines(plan: _PreparedRun, file: EmbeddingFile, summary: EmbedSummary) -> dict[str, str] | None:
    """Embed this process's share of the lines not yet stored into `file` and store them; returns
    "sentence_to_index" (None unless `plan.keeps_sentences`). A failure of this process's own work is a
    `ProcessFailure`, which this process reports."""
    embedding = _EmbeddingPass(
        file,
        plan.embedder,
        summary,
        plan.options,
        overlap=plan.overlap,
        process=plan.processes.process_index,
        processes=plan.processes.num_processes,
    )
    try:
        sentence_to_index = embedding.embed_lines(keep_sentences=plan.keeps_sentences)
    except (RuntimeError, OSError, MemoryError) as error:  # out of memory, ...
        raise ProcessFailure(
            f"{type(error).__name__} after {summary.lines:,} lines: {first_line(error)}; {plan.partial} keeps"
            " the finished lines: rerun with --resume (with a smaller --batch-size after running out of memory)"
        ) from error
    except ProcessFailure:
        raise
    except EmbedError as error:  # a refusal of this process's own lines (a value beyond float16, ...)
        raise ProcessFailure(str(error)) from error
    file.store_open_segment()
    return sentence_to_index


def _finish(
    plan: _PreparedRun, file: EmbeddingFile, summary: EmbedSummary, sentence_to_index: dict[str, str] | None
) -> None:
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
        )
    elif plan.processes.is_main_process:
        file.finish(summary.lines, sentence_to_index)


@dataclass
class _InputSize:
    """What the output's size depends on: the input's lines and words (split as the run splits them), the bytes of
    their texts (sentence_to_index) and, with `words_json`, of their words as each dataset's attribute "words"."""

    lines: int = 0
    words: int = 0
    text_bytes: int = 0
    words_json_bytes: int = 0

    @classmethod
    def of(
        cls,
        input_file: Path,
        split_words: Callable[[str], list[str]] | None,
        *,
        words_json: bool,
        progress: bool = True,
    ) -> _InputSize:
        """The size of `input_file`; its lines alone when `split_words` is None. `progress` shows a bar."""
        size = cls()
        counted = "lines" if split_words is None else "words"
        bar = {"desc": f"elmo-embed: counting {counted}", "unit": "line", "disable": None if progress else True}
        for line in tqdm(read_lines(input_file), **bar):
            size.lines += 1
            if split_words is None:
                continue
            words = split_words(line.text)
            size.words += len(words)
            size.text_bytes += len(line.text.encode()) + LINE_INDEX_BYTES
            if words_json:
                size.words_json_bytes += len(json.dumps(words))
        return size

    def output_bytes(self, embedder: BatchEmbedder, storage: Storage, *, keep_sentences: bool) -> int:
        """The disk space the run takes at its peak, the end of the merge: the segments and the merged file.
        Compressed vectors are counted uncompressed: how much a filter saves is only known once they are written."""
        stored = self.words * int(np.prod(embedder.shape(1))) * storage.itemsize
        stored += self.lines * LINE_BYTES + self.words_json_bytes
        return 2 * stored + (self.text_bytes if keep_sentences else 0)


def _overflow_problem(line: int, vectors: np.ndarray, compute_dtype: str) -> str:
    """The line refusing the non-finite `vectors` of line `line`, computed in `compute_dtype`."""
    value = vectors.reshape(-1)[np.flatnonzero(~np.isfinite(vectors))[0]]
    problem = f"line {line + 1} (dataset {line}) has a vector holding {value} computed in {compute_dtype}"
    if compute_dtype == "float32":
        return f"{problem}: the model's activations overflow float32's range; check the model's weights"
    import torch  # (PyTorch computed, in another dtype)

    from .embedder import TORCH_DTYPES

    limit = float(torch.finfo(TORCH_DTYPES[compute_dtype]).max)
    return (
        f"{problem}: the model's activations went beyond {compute_dtype}'s range ({limit:g}); compute in float32"
        " (--dtype float32, with --overwrite to start over)"
    )


@dataclass
class _EmptyLine:
    """A line of no words, written as a dataset of 0 words in its place in the stream."""

    line: int
    words: list[str]


@dataclass
class _OtherProcessBatch:
    """A batch that another process embeds: the main process counts its `words` in the progress bar."""

    words: int


@dataclass
class _Batch:
    """Pieces of lines embedded together: `words` holds each of their lines' words, `vectors` the model's output
    once the batch has run (`prepared` is the tokenizer's batch until then)."""

    pieces: list[Piece]
    words: dict[int, list[str]]
    prepared: PreparedBatch | None
    vectors: PendingVectors | None = None


@dataclass
class _EmbeddingPass:
    """One pass over the input, as `options` say: lines are read, counted, and embedded window by window into
    `file`. With --tokenize the tokenizer splits the lines into words, written with each line's dataset. With
    `overlap` reading, the model and writing run at once (`run_stages`); the file is the same either way.

    Under `accelerate launch` every one of the `processes` reads the whole input and forms the same batches, and
    process `process` embeds every `processes`-th group of those that hold unfinished lines, from the `process`-th
    on (a group is a batch, or the batches that share the pieces of a line over --max-words; the main process, 0,
    also writes the empty lines): the batches, and so the vectors, are those of one process, and a resumed run
    shares out what is left among any number of processes."""

    file: EmbeddingFile
    embedder: BatchEmbedder
    summary: EmbedSummary
    options: EmbedOptions
    overlap: bool = False
    process: int = 0
    processes: int = 1
    # The lines stored by an earlier run, read once at the start: only the writing stage touches the file after.
    finished: set[int] = field(default_factory=set)
    # The groups of batches of unfinished lines formed so far, for all processes.
    dispatched: int = 0

    def embed_lines(self, *, keep_sentences: bool) -> dict[str, str] | None:
        """Embed every line not yet in the file; returns "sentence_to_index" (None unless `keep_sentences`)."""
        sentence_to_index: dict[str, str] | None = {} if keep_sentences else None
        self.finished = self.file.finished_lines()
        bar = {"desc": "elmo-embed", "unit": "word", "unit_scale": True, "disable": None if self.process == 0 else True}
        with tqdm(**bar) as progress:
            run_stages(
                self._work(sentence_to_index),
                self._run_model,
                lambda item: self._write(item, progress),
                overlap=self.overlap,
            )
        replaced = self.summary.replaced.total
        if replaced > MAX_WARNINGS:
            tqdm.write(f"elmo-embed: warning: {replaced:,} lines are not valid UTF-8", file=sys.stderr)
        return sentence_to_index

    def _work(self, sentence_to_index: dict[str, str] | None) -> Iterator[_EmptyLine | _Batch | _OtherProcessBatch]:
        """Read and count the lines; give the empty lines and the batches (tokenized) of the others to write, in
        the order they are to be written, window by window. The windows and batches are those of an uninterrupted
        run, finished lines included, so that a resumed run computes each line as it would have been computed."""
        split_words = _word_splitter(self.embedder, self.options)
        max_words, summary = self.options.max_words, self.summary
        window: list[tuple[int, list[str]]] = []
        window_words = 0
        for line in read_lines(self.options.input):
            words = split_words(line.text)
            summary.lines += 1
            summary.words += len(words)
            if sentence_to_index is not None:
                sentence_to_index[line.text] = str(line.index)
            if line.replaced:
                self._warn_replaced(line.index)
            if not words:
                summary.empty.add(line.index)
            if len(words) > max_words:
                summary.split.add(line.index)
            if line.index in self.finished:
                summary.resumed_lines += 1
            if not words:
                if line.index not in self.finished and self.process == 0:
                    yield _EmptyLine(line.index, words)
            else:
                window.append((line.index, words))
                window_words += len(words)
                if len(window) >= max(WINDOW_LINES, self.options.batch_size) or window_words >= WINDOW_WORDS:
                    yield from self._batches(window)
                    window, window_words = [], 0
        yield from self._batches(window)

    def _warn_replaced(self, index: int) -> None:
        self.summary.replaced.add(index)
        if self.summary.replaced.total <= MAX_WARNINGS:
            tqdm.write(
                f"elmo-embed: warning: line {index + 1} (dataset {index}) is not valid UTF-8:"
                " its bad bytes are embedded as U+FFFD",
                file=sys.stderr,
            )

    def _batches(self, window: list[tuple[int, list[str]]]) -> Iterator[_Batch | _OtherProcessBatch]:
        """The (line index, words) pairs of one window in batches of similar length, tokenized; the batches of
        finished lines only are left out, and those of other processes are only counted (by the main process)."""
        line_words = dict(window)
        options = self.options
        batches = list(bucketed_batches(window, batch_size=options.batch_size, max_words=options.max_words))
        groups = batch_groups(batches)
        owners: dict[int, int] = {}  # group -> the process that embeds it
        for pieces, group in zip(batches, groups, strict=True):
            if all(piece.line in self.finished for piece in pieces):
                continue
            if group not in owners:
                owners[group] = self.dispatched % self.processes
                self.dispatched += 1
            if owners[group] != self.process:
                if self.process == 0:
                    yield _OtherProcessBatch(sum(len(piece.words) for piece in pieces))
                continue
            words = {piece.line: line_words[piece.line] for piece in pieces}
            yield _Batch(pieces, words, self.embedder.prepare([piece.words for piece in pieces]))

    def _run_model(self, item: _EmptyLine | _Batch | _OtherProcessBatch) -> _EmptyLine | _Batch | _OtherProcessBatch:
        if isinstance(item, _Batch) and item.prepared is not None:
            item.vectors = self.embedder.run(item.prepared)
            item.prepared = None  # its memory (pinned on a GPU) can go
        return item

    def _write(self, item: _EmptyLine | _Batch | _OtherProcessBatch, progress: tqdm) -> None:
        """Write an empty line's dataset, or the vectors of a batch's pieces but those of finished lines (computed
        with them, as in the uninterrupted run); a batch is flushed and counted, another process's only counted."""
        if isinstance(item, _OtherProcessBatch):
            self.summary.embedded_words += item.words
            progress.update(item.words)
            return
        if isinstance(item, _EmptyLine):
            self._write_piece(item.line, 0, np.zeros(self.embedder.shape(0), dtype=np.float32), item.words)
            return
        assert item.vectors is not None
        for piece, vectors in zip(item.pieces, item.vectors.result(), strict=True):
            if piece.line not in self.finished:
                self._write_piece(piece.line, piece.start, vectors, item.words[piece.line])
        self.file.end_batch()
        words = sum(len(piece.words) for piece in item.pieces)
        self.summary.embedded_words += words
        progress.update(words)

    def _write_piece(self, line: int, start: int, vectors: np.ndarray, words: list[str]) -> None:
        """Write the vectors of words `start`... of line `line`, whose words are `words`; refuse a NaN or an
        infinity (the weights are finite: `require_model_folder`), which the model computed by overflowing."""
        if not np.isfinite(vectors).all():
            raise EmbedError(_overflow_problem(line, vectors, self.embedder.compute_dtype))
        self.file.write(line, start, vectors, len(words), tokens=words if self.options.tokenize else None)
