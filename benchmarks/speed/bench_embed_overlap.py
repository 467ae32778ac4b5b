"""`elmo-embed` with its stages overlapped (a reading thread, the model, a writing thread) against run one after
the other, on the bundled default model and generated text, interleaved in one process: words/s and the ratio.

    python benchmarks/speed/bench_embed_overlap.py --lines 5000 --repeats 3 --device cpu

The overlap is on by default on a GPU (`embed_file(options, overlap=None)`); on a CPU the model already uses every core,
so little is expected there.
"""

from __future__ import annotations

import argparse
import random
import statistics
import tempfile
from pathlib import Path

from harness_corpora import uniform_sentences, write_sentences
from harness_timing import interleaved_rounds

from elmo_transformers.inference.options import EmbedOptions
from elmo_transformers.inference.run import embed_file
from modeling_elmo import DEFAULT_MODEL


def write_corpus(path: Path, lines: int, seed: int) -> None:
    """`lines` lines of 5 to 40 words drawn from the default model's vocabulary (a few empty lines among them)."""
    vocabulary = [word for word in (Path(DEFAULT_MODEL) / "vocab.txt").read_text("utf-8").split() if word.isprintable()]
    write_sentences(path, uniform_sentences(vocabulary, lines, random.Random(seed), 5, 40, empty_share=0.01))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--lines", type=int, default=5000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        work = Path(folder)
        write_corpus(work / "input.txt", args.lines, args.seed)

        def measure(repeat: int, overlap: bool) -> float:
            output = work / f"{overlap}.hdf5"
            options = EmbedOptions(
                work / "input.txt", output, device=args.device, batch_size=args.batch_size,
                forget_sentences=True, overwrite=True,
            )  # fmt: skip
            summary = embed_file(options, overlap=overlap)
            rate = summary.embedded_words / summary.seconds
            print(f"repeat {repeat} overlap={overlap}: {summary.embedded_words:,} words, {rate:,.0f} words/s")
            return rate

        rates = interleaved_rounds([False, True], args.repeats, measure, alternate=True)  # alternating first
    sequential, overlapped = (statistics.median(rates[overlap]) for overlap in (False, True))
    print(
        f"{args.device}, {args.lines:,} lines, batch {args.batch_size}: sequential {sequential:,.0f} words/s,"
        f" overlapped {overlapped:,.0f} words/s (medians of {args.repeats}): ratio {overlapped / sequential:.2f}"
    )


if __name__ == "__main__":
    main()
