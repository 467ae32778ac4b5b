"""Tokenizer benchmark: ``ElmoTokenizer`` against AllenNLP 0.9.0's ``batch_to_ids``, same batches, one thread.

Run from the repository root with the package's environment (about a minute with the defaults on a shared 2-core
machine, plus half a minute to create AllenNLP's venv the first time)::

    python benchmarks/speed/bench_tokenizer.py
    python benchmarks/speed/bench_tokenizer.py --rounds 15 --output docs/tokenizer_benchmark.md
    python benchmarks/speed/bench_tokenizer.py --batches 32:40,128:10,512:2

What it does, in one run:

1. Creates (once) a separate venv with ``allennlp==0.9.0`` (``benchmarks/allennlp/make_venv.sh``;
   ``--allennlp-venv``) and starts ``benchmarks/allennlp/tokenizer_worker.py`` in it, which calls AllenNLP's own
   ``batch_to_ids``.
2. Makes the batches of each batch size (``--batches SIZE:COUNT,...``): sentences of 10-30 words, Zipf-distributed
   over the default model's 16,000-word vocabulary with one word in 20 awkward (``harness_corpora.make_sentences``),
   and one in 50 of these replaced by a word of ``EXTRA_AWKWARD_WORDS`` (the empty string, the sentence markers,
   4-byte characters cut at byte 48). A second set of batches of the same shape has every word new ("distinct":
   each word followed by a number that no other word of the run has).
3. Times, group by group and ``--rounds`` times over (so that a change in the machine's load hits both sides
   alike), AllenNLP's ``batch_to_ids(batch)`` in its worker, then in this process
   ``tokenizer(batch, is_split_into_words=True, padding=True, return_tensors="pt")``, the call that
   ``inference/torch_runner.py`` makes:
   - warm: one tokenizer for the whole run, so its word cache holds the words of earlier batches (real text
     repeats words; this is the steady state of a long run);
   - cold: a new tokenizer for every batch, whose cache starts empty (a word repeated inside a batch is still
     converted once);
   - distinct: a new tokenizer for every batch of the "distinct" batches: every word is converted.
   Each call is timed on its own (``worker_protocol.time_group``); each batch keeps its best time over the rounds,
   and words/s is the words of all batches over the sum of those best times.
4. Checks that both sides give the same ids for every batch (exit code 1 where they differ), prints a Markdown
   table (words/s, the ratio to AllenNLP on the same batches; the distinct rows are the worst case) and writes it
   to ``--output``.
"""

from __future__ import annotations

import argparse
import functools
import itertools
import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch
from harness_backends import DEFAULT_ALLENNLP_VENV, encode_batch, worker_protocol
from harness_corpora import sentence_batches
from harness_reports import RunRecord, markdown_table, ratio, write_through_rename
from harness_timing import best_per_batch

from modeling_elmo import ElmoTextEncoder, ElmoTokenizer

# Words that batch_to_ids and ElmoTokenizer must map alike, beyond harness_corpora's AWKWARD_WORDS.
EXTRA_AWKWARD_WORDS = ["", "<S>", "</S>", "a" + "😀" * 12, "😀" * 13, "\u200b"]
WARM, COLD, DISTINCT, ALLENNLP = "warm", "cold", "distinct", "allennlp"
TOKENIZER, FRONT_END = "ElmoTokenizer", "ElmoTextEncoder"


@dataclass
class Group:
    """The batches of one batch size and kind ("zipf" or "distinct"), the same for both sides."""

    name: str
    batch_size: int
    batches: list[list[list[str]]]
    warmup: list[list[str]]

    @property
    def words(self) -> int:
        return sum(len(sentence) for batch in self.batches for sentence in batch)


@dataclass
class Timing:
    """Each batch's best seconds over the rounds."""

    seconds: list[float] = field(default_factory=list)

    def add(self, seconds: list[float]) -> None:
        self.seconds = best_per_batch(self.seconds, seconds) if self.seconds else seconds

    def words_per_s(self, group: Group) -> float:
        return group.words / sum(self.seconds)


def with_extra_awkward_words(sentences: list[list[str]], seed: int) -> list[list[str]]:
    """One word in 50 replaced by one of ``EXTRA_AWKWARD_WORDS`` (deterministic for a seed)."""
    rng = np.random.default_rng(seed)
    return [
        [EXTRA_AWKWARD_WORDS[rng.integers(len(EXTRA_AWKWARD_WORDS))] if rng.random() < 0.02 else w for w in words]
        for words in sentences
    ]


def all_distinct(batches: list[list[list[str]]], first: int) -> list[list[list[str]]]:
    """The same sentences with every word followed by its own number (from ``first`` on): no word repeats."""
    numbers = iter(range(first, first + 10**9))
    return [[[f"{word}{next(numbers)}" for word in sentence] for sentence in batch] for batch in batches]


def make_groups(spec: str, seed: int, min_words: int, max_words: int) -> list[Group]:
    """A "zipf" and a "distinct" group for each ``SIZE:COUNT`` of ``spec``."""
    groups = []
    awkward = functools.partial(with_extra_awkward_words, seed=seed)
    for batch_size, batches, warmup in sentence_batches(spec, seed, min_words, max_words, awkward):
        groups.append(Group(f"b{batch_size}-zipf", batch_size, batches, warmup))
        first = 10**6 * len(groups)  # numbers no other group uses
        groups.append(Group(f"b{batch_size}-distinct", batch_size, all_distinct(batches, first), warmup))
    return groups


class AllenNLPTokenizerWorker(worker_protocol.WorkerProcess):
    """``benchmarks/allennlp/tokenizer_worker.py`` in the AllenNLP venv; ``request(index)`` times one group there."""

    def __init__(self, venv: str, groups: list[Group], work_dir: Path) -> None:
        request = {
            "output_dir": str(work_dir),
            "groups": [{"name": g.name, "warmup": g.warmup, "batches": g.batches} for g in groups],
        }
        environment = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
        request_path = work_dir / "allennlp_tokenizer_request.json"
        super().__init__(
            venv, "tokenizer_worker.py", request, request_path, "AllenNLP 0.9.0 batch_to_ids", env=environment
        )


def front_end_ids(encoder: ElmoTextEncoder, batch: list[list[str]]) -> torch.Tensor:
    """The text front end's ids of the same batch (numpy; as a tensor for the comparison, which copies nothing)."""
    return torch.from_numpy(encoder.encode_words(batch)["input_ids"])


# Each of ours: how to make one, and its ids of a batch.
OURS = {
    TOKENIZER: (ElmoTokenizer, lambda tokenizer, batch: encode_batch(tokenizer, batch)["input_ids"]),
    FRONT_END: (ElmoTextEncoder, front_end_ids),
}


def time_ours(group: Group, name: str, shared: ElmoTokenizer | ElmoTextEncoder | None) -> tuple[list[float], list]:
    """Seconds of each batch with ``OURS[name]``: ``shared`` (warm), or a new one for each batch (cold) where None.

    The new ones are made before the timed calls."""
    make, ids_of = OURS[name]
    if shared is None:
        items = [(make(), batch) for batch in group.batches]
        warmup = (make(), group.warmup)
    else:
        items = [(shared, batch) for batch in group.batches]
        warmup = (shared, group.warmup)

    def run(item: tuple) -> torch.Tensor:
        return ids_of(*item)

    record, ids = worker_protocol.time_group(run, items, warmup, budget_s=float("inf"))
    return record["seconds"], ids


def same_ids(ours: list[torch.Tensor], allennlp_ids_path: str) -> bool:
    with np.load(allennlp_ids_path) as theirs:
        return len(theirs.files) == len(ours) and all(
            np.array_equal(ids.numpy(), theirs[f"batch{i}"]) for i, ids in enumerate(ours)
        )


def our_sides(group: Group) -> tuple[str, ...]:
    return (WARM, COLD) if group.name.endswith("-zipf") else (DISTINCT,)


def measure(groups: list[Group], worker: AllenNLPTokenizerWorker, rounds: int) -> tuple[dict, dict[str, bool]]:
    """Best times per (group name, side) over ``rounds`` interleaved rounds, and whether the ids agreed."""
    timings: dict[tuple[str, str], Timing] = {}
    agreement: dict[str, bool] = {}
    warm = {name: make() for name, (make, _) in OURS.items()}
    for round_index in range(rounds):
        for index, group in enumerate(groups):
            record = worker.request(index)
            timings.setdefault((group.name, ALLENNLP), Timing()).add(record["seconds"])
            for side, name in itertools.product(our_sides(group), OURS):
                seconds, ids = time_ours(group, name, warm[name] if side == WARM else None)
                timings.setdefault((group.name, side, name), Timing()).add(seconds)
                if "ids" in record:
                    agreement[f"{group.name} {side} {name}"] = same_ids(ids, record["ids"])
        print(f"round {round_index + 1}/{rounds} done", flush=True)
    return timings, agreement


def report_rows(groups: list[Group], timings: dict, agreement: dict[str, bool]) -> list[list[str]]:
    rows = []
    for group in groups:
        theirs = timings[(group.name, ALLENNLP)].words_per_s(group)
        for side in our_sides(group):
            ours = timings[(group.name, side, TOKENIZER)].words_per_s(group)
            front_end = timings[(group.name, side, FRONT_END)].words_per_s(group)
            agreed = all(agreement.get(f"{group.name} {side} {name}") for name in OURS)
            rows.append(
                [
                    str(group.batch_size),
                    side,
                    str(len(group.batches)),
                    str(group.words),
                    f"{ours:,.0f}",
                    f"{theirs:,.0f}",
                    ratio(ours, theirs, digits=1),
                    f"{front_end:,.0f}",
                    ratio(front_end, ours),
                    "yes" if agreed else "NO",
                ]
            )
    return rows


HEADER = [
    "batch",
    "cache",
    "batches",
    "words",
    "ElmoTokenizer words/s",
    "batch_to_ids words/s",
    "ratio",
    "ElmoTextEncoder words/s",
    "front end / tokenizer",
    "same ids",
]


def parse_arguments(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        epilog=(
            "examples:\n"
            "  python benchmarks/speed/bench_tokenizer.py\n"
            "  python benchmarks/speed/bench_tokenizer.py --rounds 15 --output docs/tokenizer_benchmark.md"
            " --overwrite\n"
            "  python benchmarks/speed/bench_tokenizer.py --batches 32:40,128:10,512:2"
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--batches", default="32:20,128:5", help="SIZE:COUNT,... batches (default %(default)s)")
    parser.add_argument("--min-words", type=int, default=10, help="shortest sentence (default %(default)s)")
    parser.add_argument("--max-words", type=int, default=30, help="longest sentence (default %(default)s)")
    parser.add_argument("--seed", type=int, default=0, help="sentences (default %(default)s)")
    parser.add_argument("--rounds", type=int, default=7, help="interleaved rounds; best of them (default %(default)s)")
    parser.add_argument("--allennlp-venv", default=DEFAULT_ALLENNLP_VENV, help="default %(default)s")
    parser.add_argument("--work-dir", default="/tmp/elmo-bench", help="worker files (default %(default)s)")
    parser.add_argument("--output", type=Path, help="also write the report (Markdown) to this file")
    parser.add_argument("--overwrite", action="store_true", help="replace an existing --output file")
    arguments = parser.parse_args(argv)
    if arguments.output is not None and arguments.output.exists() and not arguments.overwrite:
        parser.error(f"{arguments.output} exists; pass --overwrite to replace it")
    return arguments


def main(argv: list[str] | None = None) -> None:
    arguments = parse_arguments(argv)
    run = RunRecord.start()
    torch.set_num_threads(1)
    work_dir = Path(arguments.work_dir)
    work_dir.mkdir(parents=True, exist_ok=True)
    groups = make_groups(arguments.batches, arguments.seed, arguments.min_words, arguments.max_words)
    worker = AllenNLPTokenizerWorker(arguments.allennlp_venv, groups, work_dir)
    try:
        timings, agreement = measure(groups, worker, arguments.rounds)
    finally:
        worker.close()
    rows = report_rows(groups, timings, agreement)
    load_end = os.getloadavg()
    details = [
        run.command_line(run.minutes()),
        run.machine_line("one torch thread in each process", load_end, "this benchmark adds about 1"),
        f"- torch {torch.__version__} (ours), {worker.info.get('torch', 'n/a')} (AllenNLP's venv, with placeholder "
        f"modules for {', '.join(sorted({m.partition('.')[0] for m in worker.info.get('stubbed_modules', [])}))})",
        f"- sentences of {arguments.min_words}-{arguments.max_words} words; {arguments.rounds} interleaved rounds, "
        "each batch's best time; ours: `tokenizer(batch, is_split_into_words=True, padding=True, "
        'return_tensors="pt")`, AllenNLP: `batch_to_ids(batch)`',
        "- warm: one tokenizer for the run (its word cache holds earlier batches' words); cold: a new tokenizer per "
        "batch (empty cache); distinct: a new tokenizer per batch of words that all differ (every word converted)",
        "- front end: `ElmoTextEncoder().encode_words(batch)` (modeling_elmo/text_elmo.py, numpy alone), the same "
        "batches and cache regimes; its ratio is to ElmoTokenizer in the same run",
        "- same ids: the `input_ids` of ElmoTokenizer and of the front end equal AllenNLP's for every batch",
    ]
    report = "\n".join(
        [
            "# Tokenizer benchmark: ElmoTokenizer vs AllenNLP 0.9.0 batch_to_ids",
            "",
            markdown_table(rows, HEADER),
            "",
            "Run:",
            "",
            *details,
            "",
        ]
    )
    print("\n" + report)
    if arguments.output is not None:
        write_through_rename(arguments.output, report)
        print(f"written to {arguments.output}")
    if not all(agreement.values()):
        raise SystemExit("error: ElmoTokenizer's ids differ from batch_to_ids's (see 'same ids')")


if __name__ == "__main__":
    main()
