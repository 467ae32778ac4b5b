"""How the speed benchmarks time: a stopwatch, rounds that interleave what is compared (so
that a change in the machine's load hits all alike), and the rows of backends timed batch by batch in turn with
their ratio to PyTorch float32.
"""

from __future__ import annotations

import argparse
import functools
import os
import time
from collections.abc import Callable, Hashable, Sequence
from typing import Any, TypeVar

from harness_corpora import sentence_batches
from harness_reports import load_averages, ratio

__all__ = [
    "SPEED_HEADER",
    "best_per_batch",
    "interleaved_rounds",
    "race",
    "seconds_of",
    "speed_rows",
    "time_backends",
]

Label = TypeVar("Label", bound=Hashable)
Measured = TypeVar("Measured")


def seconds_of(call: Callable[[], object]) -> float:
    """The wall-clock seconds of one ``call()``."""
    start = time.perf_counter()
    call()
    return time.perf_counter() - start


def best_per_batch(seconds: list[float], other: list[float]) -> list[float]:
    """Each batch's better time of two rounds, over the batches both ran (a round may stop early at its budget)."""
    count = min(len(seconds), len(other))
    return [min(a, b) for a, b in zip(seconds[:count], other[:count], strict=True)]


def interleaved_rounds(
    labels: Sequence[Label],
    rounds: int,
    measure: Callable[[int, Label], Measured],
    *,
    alternate: bool = False,
    after_round: Callable[[], object] = lambda: None,
) -> dict[Label, list[Measured]]:
    """``measure(round_index, label)`` for every label in every round, each label's results in round order.

    A round measures every label once, in their order (with ``alternate``, every second round in the reverse
    order, so that no label always runs first); ``after_round`` is called as each round ends."""
    results: dict[Label, list[Measured]] = {label: [] for label in labels}
    for round_index in range(rounds):
        order = reversed(labels) if alternate and round_index % 2 else labels
        for label in order:
            results[label].append(measure(round_index, label))
        after_round()
    return results


def race(
    labels: Sequence[Label],
    rounds: int,
    measure: Callable[[int, Label], Measured],
    key: Callable[[Measured], float] | None = None,
) -> tuple[dict[Label, Measured], list[str]]:
    """Each label's least ``measure(round_index, label)`` (seconds, or what ``key`` reads seconds from) over
    ``rounds`` alternating rounds (``interleaved_rounds``), and the load averages at the start and after each round."""
    loads = [load_averages(os.getloadavg())]
    measured = interleaved_rounds(
        labels, rounds, measure, alternate=True, after_round=lambda: loads.append(load_averages(os.getloadavg()))
    )
    return {label: min(results, key=key) for label, results in measured.items()}, loads


def time_backends(
    backends: dict[str, Callable[[Any], object]], batches: list[list[list[str]]], encode: Callable[[Any], Any]
) -> tuple[int, dict[str, float]]:
    """The words of `batches` and each backend's seconds over them, every batch run on each backend in turn, so that
    the machine's load hits all alike."""
    seconds, words = dict.fromkeys(backends, 0.0), 0
    for batch in batches:
        inputs = encode(batch)
        words += sum(map(len, batch))
        for label, run in backends.items():
            seconds[label] += seconds_of(functools.partial(run, inputs))
    return words, seconds


SPEED_HEADER = ["backend", "batch", "batches", "words/s", "vs PyTorch"]


def speed_rows(
    args: argparse.Namespace,
    backends: dict[str, Callable[[Any], object]],
    encode: Callable[[Any], Any],
    each_size: Callable[[list[list[list[str]]]], None] = lambda batches: None,
) -> list[list[str]]:
    """For each batch size of `--batches`: a warm-up batch on every backend, then the timed batches
    (`time_backends`), `each_size` called with them, and a row per backend (`SPEED_HEADER`: backend, batch, batches,
    words/s, the ratio to PyTorch float32)."""
    rows = []
    for batch_size, batches, warmup in sentence_batches(args.batches, args.seed, args.min_words, args.max_words):
        warm_inputs = encode(warmup)
        for run in backends.values():
            run(warm_inputs)
        words, seconds = time_backends(backends, batches, encode)
        each_size(batches)
        baseline = words / seconds["PyTorch float32"]
        for label in backends:
            speed = words / seconds[label]
            rows.append([label, str(batch_size), str(len(batches)), f"{speed:,.0f}", ratio(speed, baseline)])
    return rows
