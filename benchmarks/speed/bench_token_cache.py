"""`elmo-embed`'s PyTorch runner (`TorchEmbedder`, on the CPU) with its token-vector cache (`TokenVectorCache`: each
distinct word of a run through the character CNN once) against none: seconds over the same prepared batches of the
bundled model, and the token layer's own seconds, each the best of alternating rounds. Two texts: Zipf lines of
10-30 words (about 58% of a batch's words distinct) and `examples/sentences.txt` repeated (few distinct words)::

    python benchmarks/speed/bench_token_cache.py --lines 1280 --rounds 2
"""

from __future__ import annotations

import argparse
import contextlib
import time
from collections.abc import Iterator

import torch
from harness_corpora import REPOSITORY, batches_of, make_sentences
from harness_reports import markdown_table, ratio
from harness_timing import race

from elmo_transformers.inference.torch_runner import TorchEmbedder
from modeling_elmo import DEFAULT_MODEL, TokenVectorCache
from modeling_elmo.modeling_elmo import ElmoCharacterEncoder

LABELS = ("no cache", "cache")


@contextlib.contextmanager
def token_layer_seconds() -> Iterator[list[float]]:
    """Within the block, the seconds spent in the character encoder's `forward`, added up in the list's one item."""
    spent, forward = [0.0], ElmoCharacterEncoder.forward

    def timed(self: ElmoCharacterEncoder, *args, **kwargs) -> torch.Tensor:
        start = time.perf_counter()
        try:
            return forward(self, *args, **kwargs)
        finally:
            spent[0] += time.perf_counter() - start

    ElmoCharacterEncoder.forward = timed
    try:
        yield spent
    finally:
        ElmoCharacterEncoder.forward = forward


def run_seconds(embedder: TorchEmbedder, batches: list, label: str) -> tuple[float, float]:
    """The seconds of `embedder.run` over `batches` with a fresh cache ("cache") or none, and its token layer's."""
    embedder.token_cache = TokenVectorCache() if label == "cache" else None
    with token_layer_seconds() as token_layer:
        start = time.perf_counter()
        for batch in batches:
            embedder.run(batch).result()
        return time.perf_counter() - start, token_layer[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--lines", type=int, default=1280, help="lines of each text (default %(default)s)")
    parser.add_argument("--batch-size", type=int, default=64, help="sentences per batch (default %(default)s)")
    parser.add_argument("--rounds", type=int, default=2, help="alternating rounds, best kept (default %(default)s)")
    args = parser.parse_args()
    repeated = [line.split() for line in (REPOSITORY / "examples" / "sentences.txt").open(encoding="utf-8")]
    texts = {
        "Zipf, 10-30 words": make_sentences(0, args.batch_size, args.lines, 10, 30),
        "sentences.txt repeated": (repeated * (args.lines // len(repeated) + 1))[: args.lines],
    }
    embedder = TorchEmbedder(DEFAULT_MODEL, layers="all", device="cpu")
    rows = []
    for name, sentences in texts.items():
        batches = [embedder.prepare(batch) for batch in batches_of(sentences, args.batch_size)]
        run_seconds(embedder, batches[:1], "no cache")  # warm-up: oneDNN's kernels
        best, _ = race(LABELS, args.rounds, lambda _, label, batches=batches: run_seconds(embedder, batches, label))
        words = sum(map(len, sentences))
        for label, (seconds, token_layer) in best.items():
            speed_up = ratio(best["no cache"][0], seconds)
            rows.append([name, label, f"{words:,}", f"{words / seconds:,.0f}", f"{token_layer:.2f}", speed_up])
    header = ["text", "run", "words", "words/s", "token layer s", "speed-up (whole run)"]
    print(f"bundled model, {torch.get_num_threads()} threads, batches of {args.batch_size}, best of {args.rounds}")
    print(markdown_table(rows, header))


if __name__ == "__main__":
    main()
