"""`GraphEmbedder` with its token cache (each distinct word's token vector computed once a run: the graph split at its
token layer, serving/token_graph.py) against the whole graph on every batch: words/s over the same prepared batches
of an `elmo-convert onnx` folder's float32 and int8 graphs, each the best of alternating rounds (a fresh cache each
round: one run's hits), and the cache's hit rate (of the distinct words of each batch, those it held). The text:
the lines of docs/*.md of 5 to 60 words, as they come (technical English, with its code and tables)::

    OMP_NUM_THREADS=1 python benchmarks/speed/bench_graph_token_cache.py --folder ONNX_FOLDER --lines 400
"""

from __future__ import annotations

import argparse
import os
import time

from harness_corpora import REPOSITORY, batches_of
from harness_reports import load_averages, markdown_table, ratio
from harness_timing import race

from elmo_transformers.serving import GraphEmbedder

LABELS = ("whole graph", "token cache")


def docs_lines(count: int) -> list[list[str]]:
    """The first `count` lines of docs/*.md (in name order) of 5 to 60 words, split at white space."""
    lines = []
    for path in sorted((REPOSITORY / "docs").glob("*.md")):
        lines += [words for words in map(str.split, path.read_text(encoding="utf-8").splitlines()) if 5 <= len(words)]
    return [words for words in lines if len(words) <= 60][:count]


def run(folder: str, quantized: bool, label: str, sentences: list[list[str]], batch_size: int) -> tuple[float, float]:
    """The seconds of `GraphEmbedder.run` over `sentences`' batches, prepared beforehand, with a fresh cache ("token
    cache") or none, and the cache's hit rate (NaN without one)."""
    embedder = GraphEmbedder(folder, quantized=quantized, threads=1, cached_words=int(label == "token cache") << 16)
    batches = [embedder.encode(batch) for batch in batches_of(sentences, batch_size)]
    start = time.perf_counter()
    for batch in batches:
        embedder.run(batch)
    seconds = time.perf_counter() - start
    cache = embedder.token_cache
    return seconds, (cache.hits / (cache.hits + cache.misses) if cache else float("nan"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--folder", required=True, help="a folder of elmo-convert onnx --quantize int8")
    parser.add_argument("--lines", type=int, default=400, help="lines of docs text (default %(default)s)")
    parser.add_argument("--batch-size", type=int, default=32, help="sentences per batch (default %(default)s)")
    parser.add_argument("--rounds", type=int, default=2, help="alternating rounds, best kept (default %(default)s)")
    args = parser.parse_args()
    sentences = docs_lines(args.lines)
    words = sum(map(len, sentences))
    rows, loads = [], []
    for graph, quantized in (("float32", False), ("int8", True)):
        run(args.folder, quantized, LABELS[0], sentences[: args.batch_size], args.batch_size)  # warm-up
        best, graph_loads = race(
            LABELS, args.rounds, lambda _, label, q=quantized: run(args.folder, q, label, sentences, args.batch_size)
        )
        loads += graph_loads
        for label, (seconds, hit_rate) in best.items():
            speed_up = ratio(best[LABELS[0]][0], seconds)
            hits = "" if label == LABELS[0] else f"{hit_rate:.1%}"
            rows.append([graph, label, f"{words / seconds:,.0f}", speed_up, hits])
    print(
        f"{args.folder}: {len(sentences)} lines of docs/*.md, {words:,} words, batches of {args.batch_size}, one"
        f" thread (OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS', 'unset')}), best of {args.rounds}; load"
        f" {loads[0]} .. {load_averages(os.getloadavg())}"
    )
    print(markdown_table(rows, ["graph", "run", "words/s", "speed-up", "hit rate (distinct words a batch)"]))


if __name__ == "__main__":
    main()
