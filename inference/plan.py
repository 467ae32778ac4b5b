"""The plan of an `elmo-embed` run (`plan_run`, a `RunPlan`): the model it loads and the runner that runs it
(`open_embedder`: ONNX or PyTorch), its settings, the input's size and the space check, and the one line that a
failure of its own work ends with (`RunPlan.failure_line`: what failed, what is safe, and the command that resumes
it).
"""

from __future__ import annotations

import shlex
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from elmo_transformers.common.atomic_output import partial_path
from elmo_transformers.common.disk_space import check_free_space, is_disk_full
from elmo_transformers.common.errors import EmbedError, first_line
from elmo_transformers.common.processes import OneProcess, is_main_process, on_main_process, wait_for_everyone
from elmo_transformers.serving.graph_layout import FLOAT_GRAPH, QUANTIZED_GRAPH

from .input_size import InputSize
from .limits import EmbedLimits
from .lines import content_sha256
from .onnx_runner import OnnxEmbedder
from .options import EmbedOptions
from .request import PYTORCH, EmbedRequest
from .runner import BatchEmbedder, recorded_sha256
from .segment_store import DamagedSegment, SegmentStore, WriteError, stored_bytes
from .settings import EmbedSettings
from .sharding import ProcessFailure
from .summary import EmbedSummary
from .workers import graph_threads

if TYPE_CHECKING:
    from accelerate import PartialState

__all__ = ["RunPlan", "open_embedder", "plan_run", "word_splitter"]


def plan_run(
    request: EmbedRequest,
    device: str | None,
    processes: PartialState | OneProcess,
    command: list[str],
    overlap: bool | None,
    limits: EmbedLimits,
) -> RunPlan:
    """Load the model of a checked `request` (`request.check_request`) on `device`, take the run's settings and the
    input's size, and refuse a run that the disk clearly cannot hold; the run works in `limits`."""
    options, model = request.options, request.model
    embedder = open_embedder(request, device)
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
    split_words = word_splitter(embedder, options) if count_words else None
    progress = processes.is_main_process
    size = InputSize.of(options.input, split_words, words_json=options.tokenize, progress=progress)
    overlap = embedder.device_type == "cuda" if overlap is None else overlap
    plan = RunPlan(settings, command, processes, embedder, size, overlap, limits)
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

    from .torch_runner import TORCH_DTYPES

    if not onednn_available(TORCH_DTYPES[compute_dtype]):
        print(
            f"elmo-embed: warning: this CPU has no fast {compute_dtype} matrix products (no oneDNN {compute_dtype}"
            " kernels for it): float32 runs several times faster here",
            file=sys.stderr,
        )


def word_splitter(embedder: BatchEmbedder, options: EmbedOptions) -> Callable[[str], list[str]]:
    """How the run splits a line into words: the tokenizer's split with --tokenize, else at whitespace."""
    return embedder.split_words if options.tokenize else str.split


@dataclass
class RunPlan:
    """A run once its checks have passed (the plan): its `settings` (its options among them), the command line, its
    processes, the loaded model, the input's size (for the space check, and the advice a failure gives), whether
    reading, the model and writing `overlap`, and the sizes it works in (`limits`)."""

    settings: EmbedSettings
    command: list[str]
    processes: PartialState | OneProcess
    embedder: BatchEmbedder
    size: InputSize
    overlap: bool
    limits: EmbedLimits

    @property
    def options(self) -> EmbedOptions:
        return self.settings.options

    @property
    def split_words(self) -> Callable[[str], list[str]]:
        return word_splitter(self.embedder, self.options)

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

    def needed_bytes(self) -> int:
        """The bytes the run still needs on the output's disk: its output, less what a resumed run stored."""
        options = self.options
        keep_sentences = not options.forget_sentences
        needed = self.size.output_bytes(self.embedder, self.settings.storage, keep_sentences=keep_sentences)
        return needed - stored_bytes(options.output, resume=options.resume)

    def check_free_space(self) -> None:
        """Refuse (on the main process) a run that the disk clearly cannot hold (`needed_bytes`)."""
        options, needed = self.options, self.needed_bytes()
        what = f"the vectors of {self.size.words:,} words (stored in segments, then merged into one file)"
        on_main_process(lambda: check_free_space(options.output, needed, what=what, error=EmbedError), error=EmbedError)

    def open_partial(self) -> SegmentStore:
        """`OUT.partial`, started (or checked and continued) by the main process, then joined by every other one. No
        process writes before all have read which lines are stored: they share the batches out by that."""
        opened: list[SegmentStore] = []
        on_main_process(lambda: opened.append(self._open_file(join=False)), error=EmbedError)
        file = opened[0] if self.processes.is_main_process else self._open_file(join=True)
        self.wait_for_everyone()
        return file

    def _open_file(self, *, join: bool) -> SegmentStore:
        attributes = self.settings.attributes(self.command)
        try:
            return SegmentStore(
                self.options.output,
                settings=self.settings,
                attributes=attributes,
                shape=self.embedder.shape,
                resume=self.options.resume,
                join=join,
                limits=self.limits,
            )
        except WriteError as error:
            raise EmbedError(self.failure_line(error)) from None

    @contextmanager
    def write_failures(self, file: SegmentStore) -> Iterator[None]:
        """Turn a failed write into `file`, or a segment that the merge found damaged, into this process's one line
        (`failure_line`)."""
        try:
            yield
        except (WriteError, DamagedSegment) as error:
            raise ProcessFailure(self.failure_line(error, stored=len(file.finished_lines()))) from None

    @contextmanager
    def embedding_failures(self, summary: EmbedSummary) -> Iterator[None]:
        """Turn a failure of the embedding of this process's lines (out of memory, a refusal of its own lines: a
        value beyond float16, ...) into this process's one line (`failure_line`); `summary` counts the lines read."""
        try:
            yield
        except ProcessFailure:
            raise
        except (RuntimeError, OSError, MemoryError, EmbedError) as error:
            raise ProcessFailure(self.failure_line(error, read=summary.lines)) from error

    def failure_line(self, error: BaseException, *, read: int = 0, stored: int = 0) -> str:
        """The one line that ends this process's part of the run on `error`: what failed, what is safe and how to go
        on. `read`: the lines read so far; `stored`: those safely stored in `OUT.partial`."""
        if isinstance(error, DamagedSegment):
            return f"{error}: rerun with --resume, which removes it and embeds its lines again: {self.resume_command()}"
        if isinstance(error, EmbedError):  # (its own line)
            return str(error)
        if not isinstance(error, WriteError):  # out of memory, ...
            return (
                f"{type(error).__name__} after {read:,} lines: {first_line(error)}; {self.partial} keeps the finished"
                " lines: rerun with --resume (with a smaller --batch-size after running out of memory)"
            )
        if is_disk_full(error.error):
            problem, advice = "the disk is full (No space left on device)", "free some space and rerun"
        else:
            problem, advice = first_line(error.error), "rerun"
        return (
            f"{self.partial}: {problem}: {stored:,} of {self.size.lines:,} lines are safely stored; {advice} with"
            f" --resume: {self.resume_command()}"
        )

    def resume_command(self) -> str:
        """The command line that resumes this run."""
        return shlex.join(self.command if "--resume" in self.command else [*self.command, "--resume"])


def open_embedder(request: EmbedRequest, device: str | None = None) -> BatchEmbedder:
    """`elmo-embed`'s embedder of a checked `request`'s model: `TorchEmbedder` (PyTorch) on `device`, imported only then
    (with torch and transformers), or `OnnxEmbedder` where the folder holds an exported graph (on CPU whatever
    `device`). The graph is the float32 one; a folder holding only the int8 graph is run with it, and a one-line
    notice says so (its vectors are near float32's, not equal)."""
    model, layers = request.model, request.options.layers
    if request.backend is PYTORCH:
        from transformers.utils.logging import disable_progress_bar

        from .torch_runner import TorchEmbedder

        disable_progress_bar()  # transformers' weight-loading bar; elmo-embed shows its own
        return TorchEmbedder(model, layers=layers, compute_dtype=request.options.compute_dtype, device=device)
    quantized = not (Path(model) / FLOAT_GRAPH).is_file()
    if quantized and is_main_process():
        print(
            f"elmo-embed: notice: {model} holds no {FLOAT_GRAPH}: embedding with its int8 graph {QUANTIZED_GRAPH}"
            " (8-bit products: vectors near float32's, not equal to them)",
            file=sys.stderr,
        )
    return OnnxEmbedder(model, layers=layers, quantized=quantized, threads=graph_threads())
